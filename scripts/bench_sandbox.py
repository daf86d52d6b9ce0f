#!/usr/bin/env python3
"""Benchmark the sandbox backends: median exec latency and fingerprint cost, per backend.

What a replay of a code run pays per tool call is one command plus one fingerprint, so those are the
numbers measured (medians, milliseconds), plus opening a sandbox (once per run) and writing a file:

    python scripts/bench_sandbox.py                 # both backends, 30 repetitions
    python scripts/bench_sandbox.py --backends local --repeat 100

Fingerprint cost is measured on a fresh listing (docker: one round trip to the in-container walker)
for a small workspace (1 file) and a larger one (``--files`` files of 4 KiB); "exec + fingerprint" is
a tool call as the environment does it (docker lists the workspace in the same round trip).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from failforge.environments.sandbox import BACKENDS, Sandbox, SandboxLimits, compose_fingerprint, open_sandbox, sandbox_doctor


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _fresh_fingerprint(box: Sandbox) -> None:
    """A fingerprint from a fresh listing (docker: one round trip to the in-container walker)."""
    compose_fingerprint(box.listing(), box.last_exec)


def bench(backend: str, repeat: int, files: int) -> dict[str, float]:
    limits = SandboxLimits()
    row: dict[str, float] = {}
    row["open+close"] = _median_ms(lambda: open_sandbox(backend, limits).close(), max(3, repeat // 6))  # type: ignore[arg-type]
    with open_sandbox(backend, limits) as box:  # type: ignore[arg-type]
        box.write_file("solution.py", "def f(x):\n    return x + 1\n")
        row["exec true"] = _median_ms(lambda: box.exec("true"), repeat)
        row["exec python3"] = _median_ms(lambda: box.exec(["python3", "-c", "print(1)"]), repeat)

        def tool_call() -> None:
            box.exec(["python3", "-c", "import solution; print(solution.f(1))"])
            box.fingerprint()

        row["exec+fingerprint (tool call)"] = _median_ms(tool_call, repeat)
        row["write_file+fingerprint"] = _median_ms(lambda: (box.write_file("notes.txt", "x" * 1000), box.fingerprint()), repeat)
        row["fingerprint, 1 file"] = _median_ms(lambda: _fresh_fingerprint(box), repeat)
        box.exec(f"mkdir -p many && for i in $(seq 1 {files}); do head -c 4096 /dev/zero > many/f$i.bin; done")
        row[f"fingerprint, {files + 2} files"] = _median_ms(lambda: _fresh_fingerprint(box), repeat)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    for doctor_row in sandbox_doctor(backends=tuple(args.backends)):
        if not doctor_row.works:
            print(f"{doctor_row.backend}: skipped, does not work here: {doctor_row.why}", file=sys.stderr)
            continue
        results[doctor_row.backend] = bench(doctor_row.backend, args.repeat, args.files)
    if not results:
        return 1
    names = list(next(iter(results.values())))
    width = max(len(n) for n in names)
    print(f"{'median ms':<{width}}  " + "  ".join(f"{b:>9}" for b in results))
    for name in names:
        print(f"{name:<{width}}  " + "  ".join(f"{results[b][name]:>9.1f}" for b in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
