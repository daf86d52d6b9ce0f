"""Latency the failforge proxy adds per model call, over calling the model server directly.

Three processes, as in real use: the loopback model server (the upstream), ``failforge proxy`` (in record
or replay), and this process's clients (one thread, or 16 threads each with its own run and keep-alive
connection). Paths, each sequential and at concurrency 16:

- direct: a client posts to the model server (the baseline);
- record: the client posts to the proxy, which records the call and forwards it to the model server;
- replay: the proxy serves the recorded response (the model server is not called).

Printed per path: p50 and p99 of the per-call latency in ms and the latency added over direct, and with
``--before REV`` the same for that revision's proxy (a git revision, checked out into a temporary
worktree) side by side, with the ratio of added latencies; and the proxy process's CPU time per call
(read from /proc), which decides what it adds once the cores are busy. Targets: record at concurrency 16 adds
<= 5 ms at p50; sequential replay adds <= 2 ms at p50. Usage:

    python3 scripts/bench_proxy.py [--calls 300] [--concurrency 16] [--before 8c674cd]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parents[1]
BODY = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You are a helpful agent."},
        {"role": "user", "content": "What is the weather in Paris?"},
    ],
}
MODEL_SERVER = (
    "import sys, time\n"
    "from failforge.testing import LoopbackModelServer\n"
    "with LoopbackModelServer() as server:\n"
    "    print(server.base_url, flush=True)\n"
    "    sys.stdin.read()\n"
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process (all its threads) has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def process(args: list[str], src: Path, marker: str, pids: list[int] | None = None) -> Iterator[str]:
    """A child process whose first line of output (after ``marker``) is its base URL; stopped on exit."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    child = subprocess.Popen(
        args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=src.parent,
    )
    if pids is not None:
        pids.append(child.pid)
    assert child.stdout is not None
    try:
        line = ""
        for line in child.stdout:
            if marker in line:
                break
        else:
            raise SystemExit(f"{' '.join(args)} did not start: {line}")
        yield line.split(marker, 1)[1].split()[0] if marker else line.strip()
    finally:
        child.terminate()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()


def timed(calls: int, post: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        post()
        out.append((time.perf_counter() - start) * 1000)
    return out


def direct(model: str, calls: int) -> Callable[[], list[float]]:
    def run() -> list[float]:
        with httpx.Client() as http:
            return timed(calls, lambda: http.post(f"{model}/chat/completions", json=BODY).raise_for_status())

    return run


def through_proxy(
    proxy: str, calls: int, mode: str, seed: dict[str, Any] | None, finished: list[dict[str, Any]]
) -> Callable[[], list[float]]:
    def run() -> list[float]:
        with httpx.Client(base_url=proxy, timeout=60) as http:
            opened = http.post("/runs", json={"mode": mode, "task": "bench", **({"seed": seed} if seed else {})})
            opened.raise_for_status()
            body = opened.json()
            # the run with its capability token (a --before tree has none)
            run_id = f"{body['run_id']}~{body['token']}" if body.get("token") else body["run_id"]
            url = f"/runs/{run_id}/agents/agent/v1/chat/completions"
            times = timed(calls, lambda: http.post(url, json=BODY).raise_for_status())
            done = http.post(f"/runs/{run_id}/finish", json={})
            done.raise_for_status()
            finished.append(done.json())
            return times

    return run


def concurrently(make: Callable[[], list[float]], threads: int) -> list[float]:
    results: list[list[float]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = make()
        except Exception as exc:  # reported below: a failed client must not shrink the sample silently
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise SystemExit(f"{len(errors)} of {threads} clients failed: {errors[0]!r}")
    return [x for r in results for x in r]


def measure(
    src: Path, model: str, calls: int, concurrency: int
) -> tuple[dict[tuple[str, str], tuple[float, float, float]], bool]:
    """(load, path) -> (p50, p99, proxy CPU per call) in ms, for the proxy of the tree at ``src``; and
    whether every replay was identical."""
    finished: list[dict[str, Any]] = []
    rows: dict[tuple[str, str], tuple[float, float, float]] = {}
    args = [
        sys.executable,
        "-m",
        "failforge",
        "proxy",
        "--port",
        "0",
        "--upstream",
        model,
        "--api-key-env",
        "NO_SUCH_KEY",
    ]
    pids: list[int] = []
    with process(args, src / "src", "failforge proxy on ", pids) as proxy:
        through_proxy(
            proxy, calls, "record", None, finished
        )()  # one recording of `calls` calls, replayed by every replay client
        seed = finished[-1]["trajectory"]
        for label, threads in (("sequential", 1), (f"concurrency {concurrency}", concurrency)):
            for name, make in (
                ("direct", direct(model, calls)),
                ("record", through_proxy(proxy, calls, "record", None, finished)),
                ("replay", through_proxy(proxy, calls, "replay", seed, finished)),
            ):
                before = cpu_seconds(pids[0])
                values = concurrently(make, threads)
                cpu = (cpu_seconds(pids[0]) - before) * 1000 / len(values)
                rows[(label, name)] = (percentile(values, 0.5), percentile(values, 0.99), cpu)
    identical = all(r["identical"] for r in finished if r.get("identical") is not None)
    return rows, identical


def _worktree(revision: str, cleanups: list[Callable[[], object]]) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="failforge-bench-proxy-"))
    subprocess.run(
        ["git", "-C", str(HERE), "worktree", "add", "--detach", str(tmp / "tree"), revision],
        check=True,
        capture_output=True,
    )
    cleanups.append(
        lambda: subprocess.run(
            ["git", "-C", str(HERE), "worktree", "remove", "--force", str(tmp / "tree")], capture_output=True
        )
    )
    return tmp / "tree"


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per client")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--before", help="git revision whose proxy to measure side by side")
    return parser


def main() -> None:
    args = arguments().parse_args()
    cleanups: list[Callable[[], object]] = []
    try:
        trees = {"now": HERE}
        if args.before:
            trees = {"before": _worktree(args.before, cleanups), **trees}
        with process([sys.executable, "-c", MODEL_SERVER], HERE / "src", "") as model:
            results = {name: measure(tree, model, args.calls, args.concurrency) for name, tree in trees.items()}
    finally:
        for cleanup in cleanups:
            cleanup()
    now, identical = results["now"]
    print(
        f"{'load':<16} {'path':<7} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} {'proxy cpu':>10}"
        + (
            f" {'before +p50':>12} {'before +p99':>12} {'before cpu':>11} {'ratio p50':>10}"
            if "before" in results
            else ""
        )
    )
    for (label, name), (p50, p99, cpu) in now.items():
        b50, b99, _ = now[(label, "direct")]
        line = f"{label:<16} {name:<7} {p50:>8.3f} {p99:>8.3f}"
        if name != "direct":
            line += f" {p50 - b50:>+10.3f} {p99 - b99:>+10.3f} {cpu:>10.3f}"
            if "before" in results:
                old = results["before"][0]
                o50, o99, ocpu = old[(label, name)]
                d50, d99, _ = old[(label, "direct")]
                added_before = o50 - d50
                line += (
                    f" {added_before:>+12.3f} {o99 - d99:>+12.3f} {ocpu:>11.3f}"
                    f" {((p50 - b50) / added_before) if added_before > 0 else float('nan'):>10.2f}"
                )
        print(line)
    print(f"replay runs identical to the recording: {identical}")
    print(
        "proxy cpu: the proxy process's CPU time per call (ms, all its threads); on 2 cores at concurrency 16 it turns"
        " into queueing"
    )
    seq = now[("sequential", "replay")][0] - now[("sequential", "direct")][0]
    conc = now[(f"concurrency {args.concurrency}", "record")][0] - now[(f"concurrency {args.concurrency}", "direct")][0]
    print(
        f"target: sequential replay <= 2 ms added at p50 -> {seq:+.3f} ms; record at concurrency {args.concurrency} <="
        f" 5 ms added at p50 -> {conc:+.3f} ms"
    )


if __name__ == "__main__":
    main()
