"""Latency the failforge proxy adds per model call, over calling a loopback model server directly.

Three paths, each measured sequentially and at concurrency 16 (16 threads, each with its own run
and its own keep-alive connection):

- direct: a client posts to the loopback model server (the baseline);
- record: the same client posts to the proxy, which records the call and forwards it to that server;
- replay: the proxy serves the recorded response (the upstream is not called).

Printed per path: p50 and p99 of the per-call latency in ms, and the added latency (proxy p50/p99
minus direct p50/p99). The target is <= 2 ms added at p50 in replay. Usage:

    PYTHONPATH=src python3 scripts/bench_proxy.py [--calls 300] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from failforge.llm import HttpUpstream
from failforge.proxy import Proxy, ProxyServer
from failforge.testing.model_servers import LoopbackModelServer

BODY = {"model": "m", "messages": [{"role": "system", "content": "You are a helpful agent."}, {"role": "user", "content": "What is the weather in Paris?"}]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(calls: int, post: Callable[[], None]) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        post()
        out.append((time.perf_counter() - start) * 1000)
    return out


def direct(model: LoopbackModelServer, calls: int) -> Callable[[], list[float]]:
    def run() -> list[float]:
        with httpx.Client() as http:
            return timed(calls, lambda: http.post(f"{model.base_url}/chat/completions", json=BODY).raise_for_status())

    return run


def through_proxy(proxy: ProxyServer, calls: int, mode: str, seed: dict[str, Any] | None) -> Callable[[], list[float]]:
    def run() -> list[float]:
        with httpx.Client(base_url=proxy.base_url) as http:
            opened = http.post("/runs", json={"mode": mode, "task": "bench", **({"seed": seed} if seed else {})})
            opened.raise_for_status()
            run_id = opened.json()["run_id"]
            url = f"/runs/{run_id}/agents/agent/v1/chat/completions"
            times = timed(calls, lambda: http.post(url, json=BODY).raise_for_status())
            http.post(f"/runs/{run_id}/finish", json={}).raise_for_status()
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per client")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with LoopbackModelServer() as model:
        # The loopback model server writes headers and body separately; with Nagle's algorithm on, every
        # keep-alive call waits for a delayed ACK (~40 ms), which would swamp what is measured here.
        model._httpd.RequestHandlerClass.disable_nagle_algorithm = True  # type: ignore[attr-defined]
        upstream = HttpUpstream(model.base_url, api_key_env=None, max_attempts=1)
        proxy_state = Proxy(upstream=upstream)
        with ProxyServer(proxy_state) as proxy:
            # one recording of `calls` calls, replayed by every replay client
            through_proxy(proxy, args.calls, "record", None)()
            seed = proxy_state.finished[-1]["trajectory"]
            rows = []
            for label, threads in (("sequential", 1), (f"concurrency {args.concurrency}", args.concurrency)):
                base = concurrently(direct(model, args.calls), threads)
                rec = concurrently(through_proxy(proxy, args.calls, "record", None), threads)
                rep = concurrently(through_proxy(proxy, args.calls, "replay", seed), threads)
                for name, values in (("direct", base), ("record", rec), ("replay", rep)):
                    rows.append((label, name, len(values), percentile(values, 0.5), percentile(values, 0.99), percentile(base, 0.5), percentile(base, 0.99)))
            identical = all(r["identical"] for r in proxy_state.finished if r["trajectory"]["provenance"]["mode"] == "replay")
        upstream.close()
    print(f"{'load':<16} {'path':<7} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10}")
    for label, name, n, p50, p99, b50, b99 in rows:
        added = ("", "") if name == "direct" else (f"{p50 - b50:+.3f}", f"{p99 - b99:+.3f}")
        print(f"{label:<16} {name:<7} {n:>6} {p50:>8.3f} {p99:>8.3f} {added[0]:>10} {added[1]:>10}")
    replay_seq = next(r for r in rows if r[0] == "sequential" and r[1] == "replay")
    print(f"replay runs identical to the recording: {identical}")
    print(f"target (replay, sequential): <= 2 ms added at p50 -> {replay_seq[3] - replay_seq[5]:+.3f} ms")


if __name__ == "__main__":
    main()
