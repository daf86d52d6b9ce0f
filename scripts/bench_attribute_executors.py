#!/usr/bin/env python3
"""Benchmark: an attribution run over N records with the thread and the process executor, against a
loopback judge with a fixed latency per call (``failforge.testing``), and the ratios between them.

The judge answers at once after ``--latency`` seconds (a remote judge's round trip); step-by-step asks
one question per step until a yes, so a session is several calls. The two executors run the same
sessions, into two fresh folders, and must give the same predictions (the script stops otherwise).

    python scripts/bench_attribute_executors.py --records 300 --workers 2
    python scripts/bench_attribute_executors.py --records 1000 --workers 4 --latency 0.05

It prints seconds, sessions per second and calls per second for each executor and process/thread ratios.
The records are the Who&When logs (``--dataset``, default the bundled fixture copy of the 184 logs in
tests/fixtures/attribution/who_and_when), repeated under new ids up to ``--records``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from failforge.attribution import summarise
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.llm import ModelEndpoint
from failforge.plugins import importers
from failforge.testing.model_servers import LoopbackModelServer

ROOT = Path(__file__).resolve().parents[1]


def judge(body: dict[str, Any]) -> tuple[str, None]:
    text = body["messages"][-1]["content"]
    digest = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    if "most recent step" in text:
        return ("1. Yes.\n2. Reason: it derails." if digest % 3 == 0 else "1. No.\n2. Reason: fine."), None
    return f"Error Mode: {['A.1', 'B.2', 'C.3'][digest % 3]}\nReason: the step says so.", None


def records(dataset: Path, n: int) -> list[Any]:
    found = [
        r
        for folder in ("Algorithm-Generated", "Hand-Crafted")
        if (dataset / folder).exists()
        for r in summarise(importers.get("whowhen")(dataset / folder))[0]
    ]
    if not found:
        sys.exit(f"no Who&When logs under {dataset}")
    out = []
    while len(out) < n:
        out.extend(r.model_copy(update={"id": f"{r.id}#{len(out) // len(found)}"}) for r in found)
    return out[:n]


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds the loopback judge takes per call")
    parser.add_argument("--method", default="step-by-step")
    parser.add_argument(
        "--dataset",
        type=Path,
        default=ROOT / "tests" / "fixtures" / "attribution" / "who_and_when",
        help="a Who&When folder (the public release's, for the full 184 logs); its records repeat up to --records",
    )
    return parser


def main() -> None:
    args = arguments().parse_args()
    chosen = records(args.dataset, args.records)
    results: dict[str, dict[str, float]] = {}
    predictions: dict[str, set[str]] = {}
    with LoopbackModelServer(policy=judge, latency=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
        for executor in ("thread", "process"):
            config = AttributeConfig(
                method=args.method, judge_model="loopback", concurrency=args.workers, executor=executor
            )
            t0 = time.perf_counter()
            summary = run_attribution(chosen, config, Path(tmp) / executor, endpoint=endpoint)
            seconds = time.perf_counter() - t0
            results[executor] = {
                "seconds": seconds,
                "sessions/s": summary.predicted / seconds,
                "calls/s": summary.calls / seconds,
                "failed": summary.failed,
            }
            predictions[executor] = {
                json.dumps({k: v for k, v in json.loads(line).items() if k != "seconds"}, sort_keys=True)
                for line in (Path(tmp) / executor / "predictions.jsonl").read_text().splitlines()
            }
    if predictions["thread"] != predictions["process"]:
        sys.exit("the two executors gave different predictions")
    print(
        f"{args.records} records, {args.method}, {args.workers} workers, judge latency {args.latency}s (same"
        " predictions: yes)"
    )
    for executor, row in results.items():
        print(f"  {executor:8s} " + "  ".join(f"{k} {v:.2f}" for k, v in row.items()))
    t, p = results["thread"], results["process"]
    print(
        f"  process/thread: seconds {p['seconds'] / t['seconds']:.2f}  sessions/s"
        f" {p['sessions/s'] / t['sessions/s']:.2f}"
    )


if __name__ == "__main__":
    main()
