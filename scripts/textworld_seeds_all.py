"""Oracle seeds of every game of the TextWorld default set (6 recipes x 10 seeds), each replayed (the audit):
prints seeds recorded and won, audit n/n identical, timings and every failure. Games missing from the cache
are generated first (tw-make, ~6-11 s each); run scripts/benchmarks/install_textworld.sh to pre-generate them.

    PYTHONPATH=src python3 scripts/textworld_seeds_all.py [--seeds N] [--recipe R ...] [--output seeds.jsonl]
"""

from __future__ import annotations

import argparse
import time

from failforge.environments.textworld_env import DEFAULT_SEEDS, TextWorldEnvironment, TextWorldOptions
from failforge.errors import FailforgeError
from failforge.replay import replay
from failforge.seeds import oracle_seed
from failforge.trajectory import Trajectory, write_jsonl


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--recipe", nargs="*", default=[])
    parser.add_argument("--output", default="")
    args = parser.parse_args()
    options = TextWorldOptions(recipe=args.recipe, seeds=args.seeds)
    tasks = TextWorldEnvironment().tasks(options)
    seeds: list[Trajectory] = []
    failures: list[str] = []
    won = identical = passed_on_replay = 0
    steps = 0
    started = time.perf_counter()
    for task in tasks:
        try:
            seed = oracle_seed("textworld", task, options)
        except FailforgeError as exc:
            failures.append(f"{task}: record: {exc}")
            continue
        seeds.append(seed)
        steps += len(seed.steps)
        if seed.outcome and seed.outcome.success:
            won += 1
        else:
            failures.append(f"{task}: the walkthrough did not win: {seed.outcome}")
    recorded = time.perf_counter()
    for seed in seeds:
        report = replay(seed, raise_on_drift=False)
        identical += report.identical
        passed_on_replay += bool(report.outcome and report.outcome.success)
        if not report.identical:
            failures.append(f"{seed.id}: audit: {report.drift or report.infrastructure}")
    finished = time.perf_counter()
    if args.output:
        write_jsonl(args.output, seeds)
    print(f"games: {len(tasks)}")
    print(f"seeds: {len(seeds)} recorded, {won} won (evaluator textworld.won), {steps} steps")
    print(f"audit: {identical}/{len(seeds)} identical, {passed_on_replay}/{len(seeds)} won on replay")
    print(f"time: record {recorded - started:.1f} s, replay {finished - recorded:.1f} s")
    print(f"failures: {len(failures)}")
    for line in failures:
        print(f"  {line}")
    return 0 if not failures and won == len(tasks) and identical == len(tasks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
