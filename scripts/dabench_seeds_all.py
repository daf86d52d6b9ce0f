"""Scripted-analyst seeds of every DA-Bench dev question on one sandbox backend, each replayed (the audit).

Prints seeds recorded and passed by the closed-form evaluator, audit n/n identical, the questions whose table
the analyst could not load (their seeds still pass: the answer comes from the label; listed, not hidden), timings
and every failure. Resumable: seeds already in --output are not recorded again (the audit replays them all).

    PYTHONPATH=src python3 scripts/dabench_seeds_all.py --backend local [--data-dir DIR] [--output S.jsonl] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from failforge.environments.dabench import DabenchEnvironment, DabenchOptions
from failforge.errors import FailforgeError
from failforge.jsonl import read_jsonl
from failforge.replay import replay
from failforge.seeds import oracle_seed
from failforge.trajectory import Trajectory


def default_data_dir() -> str:
    return os.environ.get("FAILFORGE_DABENCH_DIR") or str(
        Path(__file__).resolve().parents[2] / "shared" / "datasets" / "da_bench"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--data-dir", default=default_data_dir())
    parser.add_argument("--output", default="")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    options = DabenchOptions(data_dir=args.data_dir, backend=args.backend)
    tasks = DabenchEnvironment().tasks(options)
    if args.limit:
        tasks = tasks[: args.limit]
    out = Path(args.output) if args.output else None
    seeds: dict[str, Trajectory] = {}
    if out is not None and out.exists():
        for item in read_jsonl(out):
            if not isinstance(item, Exception):
                seed = Trajectory.model_validate(item[1])
                seeds[seed.task.task_id] = seed
    failures: list[str] = []
    started = time.perf_counter()
    for number, task in enumerate(tasks, start=1):
        if task in seeds:
            continue
        try:
            seed = oracle_seed("dabench", task, options)
        except FailforgeError as exc:
            failures.append(f"{task}: record: {exc}")
            continue
        seeds[task] = seed
        if out is not None:
            with out.open("a", encoding="utf-8") as handle:
                handle.write(seed.model_dump_json() + "\n")
        print(
            f"[{number}/{len(tasks)}] {task}: {len(seed.steps)} steps, "
            f"passed {bool(seed.outcome and seed.outcome.success)}",
            flush=True,
        )
    recorded = time.perf_counter()
    chosen = [seeds[t] for t in tasks if t in seeds]
    passed = [s for s in chosen if s.outcome and s.outcome.success]
    for seed in chosen:
        if not (seed.outcome and seed.outcome.success):
            failures.append(f"{seed.task.task_id}: the evaluator failed the scripted answer: {seed.outcome}")
    unloaded = [s for s in chosen if any(st.kind == "tool" and st.error for st in s.steps[:3])]
    identical = on_replay = 0
    for seed in chosen:
        report = replay(seed, raise_on_drift=False)
        identical += report.identical
        on_replay += bool(report.outcome and report.outcome.success)
        if not report.identical:
            failures.append(f"{seed.task.task_id}: audit: {report.drift or report.infrastructure}")
    finished = time.perf_counter()
    steps = sum(len(s.steps) for s in chosen)
    print(f"questions: {len(tasks)} (backend {args.backend}, data {args.data_dir})")
    print(f"seeds: {len(chosen)} recorded, {len(passed)} passed dabench.eval_closed_form, {steps} steps")
    print(f"audit: {identical}/{len(chosen)} identical, {on_replay}/{len(chosen)} passed on replay")
    print(f"table not loaded by the analyst's pd.read_csv (answer still from the label): {len(unloaded)}")
    for seed in unloaded:
        err = next(st.error for st in seed.steps if st.kind == "tool" and st.error)
        print(f"  {seed.task.task_id} ({seed.task.metadata.get('file_name')}): {str(err)[:160]}")
    print(f"time: record {recorded - started:.1f} s (new seeds only), replay {finished - recorded:.1f} s")
    print(f"failures: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 0 if not failures and len(passed) == len(tasks) and identical == len(tasks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
