"""Benchmark: failforge tool-cache lookup (a hit) vs a raw diskcache get of the same keys.

The failforge side does everything a replayed stateless tool call does: canonicalise the arguments,
hash them, read the entry, decode the stored JSON. The raw side is ``diskcache.Cache.get`` of the
already-known storage key. Prints medians and their ratio (target: <= 2x).

    python scripts/bench_cache.py [--n 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import diskcache

from failforge.cache import ToolCache
from failforge.cache._store import _ENTRY_PREFIX  # the storage key layout, to read the very same entries raw


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    return parser


def main() -> None:
    opts = arguments().parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = ToolCache(tmp, mode="record")
        calls = [
            (
                "http",
                {
                    "method": "GET",
                    "url": f"http://127.0.0.1:8000/page/{i}?q={i % 7}",
                    "headers": {"accept": "text/html"},
                },
            )
            for i in range(opts.n)
        ]
        keys: list[str] = []
        for tool, args in calls:
            _, key, _ = cache.call(tool, args, lambda i=len(keys): {"status": 200, "body": f"<html>{i}</html>" * 20})
            keys.append(key)
        cache.close()
        replaying = ToolCache(tmp, mode="replay")
        raw = diskcache.Cache(tmp)
        storage_keys = [_ENTRY_PREFIX + k for k in keys]

        def ff() -> float:
            start = time.perf_counter()
            for tool, args in calls:
                replaying.call(tool, args, lambda: None)
            return (time.perf_counter() - start) / len(calls)

        def plain() -> float:
            start = time.perf_counter()
            for key in storage_keys:
                raw.get(key)
            return (time.perf_counter() - start) / len(storage_keys)

        ff(), plain()  # warm the OS page cache and SQLite
        ff_times = [ff() for _ in range(opts.repeats)]
        raw_times = [plain() for _ in range(opts.repeats)]
    ff_med, raw_med = statistics.median(ff_times), statistics.median(raw_times)
    print(f"keys: {opts.n}, repeats: {opts.repeats}")
    print(f"failforge cache lookup (canonicalise + hash + get + decode): {ff_med * 1e6:.1f} us/lookup")
    print(f"raw diskcache get (same entries):                            {raw_med * 1e6:.1f} us/lookup")
    print(f"ratio failforge/raw: {ff_med / raw_med:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
