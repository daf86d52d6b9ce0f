#!/usr/bin/env python3
"""Benchmark the sandbox backends: what a sandbox costs to open and close, and what a tool call costs.

A replay of a code run pays one open+close per run and, per tool call, one command plus one
fingerprint; those are the numbers measured (medians, milliseconds), plus a bare command, a file write
and fingerprints of a small and a larger workspace.

    python scripts/bench_sandbox.py                                  # this tree, both backends
    python scripts/bench_sandbox.py --before b46388b --rounds 2      # that commit vs this tree, with ratios
    python scripts/bench_sandbox.py --backends local --repeat 100

``--before`` takes a git revision (checked out into a temporary worktree, removed afterwards) or a
source tree's directory. Each tree is measured in its own process with that tree's ``src`` first on
``PYTHONPATH``; with ``--rounds N`` the trees take turns N times and each number is the median over
rounds, so a burst of load on a shared machine does not land on one side only. The ratio is
after / before (below 1: faster now).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def bench(backend: str, repeat: int, files: int) -> dict[str, float]:
    """Medians in ms for one backend, using only the interface every version of the sandbox has."""
    from failforge.environments.sandbox import (
        SandboxLimits,
        compose_fingerprint,
        open_sandbox,
    )

    limits = SandboxLimits()
    row: dict[str, float] = {}
    row["open+close"] = _median_ms(lambda: open_sandbox(backend, limits).close(), max(5, repeat // 3))
    with open_sandbox(backend, limits) as box:
        box.write_file("solution.py", "def f(x):\n    return x + 1\n")
        row["exec true"] = _median_ms(lambda: box.exec("true"), repeat)

        def tool_call() -> None:
            box.exec(["python3", "-c", "import solution; print(solution.f(1))"])
            box.fingerprint()

        row["tool call (exec python3 + fingerprint)"] = _median_ms(tool_call, repeat)
        row["write_file + fingerprint"] = _median_ms(
            lambda: (box.write_file("notes.txt", "x" * 1000), box.fingerprint()), repeat
        )
        row["fingerprint, 2 files"] = _median_ms(lambda: compose_fingerprint(box.listing(), box.last_exec), repeat)
        box.exec(f"mkdir -p many && for i in $(seq 1 {files}); do head -c 4096 /dev/zero > many/f$i.bin; done")
        row[f"fingerprint, {files + 3} files"] = _median_ms(
            lambda: compose_fingerprint(box.listing(), box.last_exec), repeat
        )
    return row


def _measure_here(backends: list[str], repeat: int, files: int) -> dict[str, dict[str, float]]:
    from failforge.environments.sandbox import sandbox_doctor

    results: dict[str, dict[str, float]] = {}
    for row in sandbox_doctor(backends=tuple(backends)):
        if row.works:
            results[row.backend] = bench(row.backend, repeat, files)
        else:
            print(f"{row.backend}: skipped, does not work here: {row.why}", file=sys.stderr)
    return results


def _measure_tree(src: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Run this script's measuring half in a fresh process against the failforge under ``src``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "FAILFORGE_NO_REEXEC": "1",
    }
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--measure",
        "--repeat",
        str(args.repeat),
        "--files",
        str(args.files),
        "--backends",
        *args.backends,
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measuring {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _source_of(before: str, stack: list[Callable[[], None]]) -> Path:
    """``before`` as a source directory: a path as given, or a git revision in a temporary worktree."""
    path = Path(before)
    if path.is_dir():
        return path / "src" if (path / "src" / "failforge").is_dir() else path
    tmp = Path(tempfile.mkdtemp(prefix="failforge-bench-before-"))
    subprocess.run(
        ["git", "-C", str(HERE), "worktree", "add", "--detach", str(tmp / "tree"), before],
        check=True,
        capture_output=True,
    )

    def remove() -> None:
        subprocess.run(
            ["git", "-C", str(HERE), "worktree", "remove", "--force", str(tmp / "tree")],
            check=False,
            capture_output=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)

    stack.append(remove)
    return tmp / "tree" / "src"


def _combine(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for backend in runs[0]:
        out[backend] = {name: statistics.median(run[backend][name] for run in runs) for name in runs[0][backend]}
    return out


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--before", help="git revision or source tree to compare against (default: no comparison)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="alternate the trees this many times; medians over rounds"
    )
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    if args.measure:  # the half that runs inside a tree's process
        print(json.dumps(_measure_here(args.backends, args.repeat, args.files)))
        return 0
    cleanups: list[Callable[[], None]] = []
    try:
        trees = {"after": HERE / "src"}
        if args.before:
            trees = {"before": _source_of(args.before, cleanups), **trees}
        runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
        for _ in range(args.rounds):
            for name, src in trees.items():
                runs[name].append(_measure_tree(src, args))
        results = {name: _combine(r) for name, r in runs.items()}
    finally:
        for cleanup in cleanups:
            cleanup()
    for backend in results["after"]:
        names = list(results["after"][backend])
        width = max(len(n) for n in names)
        print(f"\n{backend} backend (median ms over {args.repeat} repetitions, {args.rounds} round(s))")
        if "before" in results and backend in results["before"]:
            before = results["before"][backend]
            print(f"{'':<{width}}  {'before':>9}  {'after':>9}  {'ratio':>6}")
            for name in names:
                ratio = results["after"][backend][name] / before[name] if before[name] else float("nan")
                print(f"{name:<{width}}  {before[name]:>9.2f}  {results['after'][backend][name]:>9.2f}  {ratio:>6.2f}")
        else:
            for name in names:
                print(f"{name:<{width}}  {results['after'][backend][name]:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
