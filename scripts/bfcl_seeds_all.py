"""Oracle seeds of every BFCL multi-turn task (800), each checked by BFCL's multi_turn_checker, then audited.

Prints, per category: tasks, excluded (with reasons), seeds whose oracle run the checker accepted, and the
audit's identical replays. Usage: PYTHONPATH=src python3 scripts/bfcl_seeds_all.py [--out DIR] [--category C].
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

from failforge.environments.bfcl import CATEGORIES, BfclEnvironment, BfclOptions, category_of
from failforge.fidelity import audit
from failforge.seeds import oracle_seed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/bfcl_seeds_all"))
    parser.add_argument("--category", default="all", choices=[*CATEGORIES, "all"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    env = BfclEnvironment()
    options = BfclOptions(category=args.category)
    tasks = env.tasks(options)
    excluded = env.excluded(options)
    passed: collections.Counter[str] = collections.Counter()
    failed: list[str] = []
    seeds = []
    start = time.monotonic()
    path = args.out / "seeds.jsonl"
    with path.open("w") as out:
        for task in tasks:
            try:
                seed = oracle_seed("bfcl", task, options)
            except Exception as exc:  # report every task, whatever broke
                failed.append(f"{task}: {type(exc).__name__}: {exc}")
                continue
            if seed.outcome is not None and seed.outcome.success:
                passed[category_of(task)] += 1
                seeds.append(seed)
                out.write(seed.model_dump_json() + "\n")
            else:
                failed.append(f"{task}: checker said {seed.outcome.details if seed.outcome else None}")
    record_s = time.monotonic() - start
    report = audit(seeds)
    identical = collections.Counter(
        category_of(str(row["trajectory_id"]).removeprefix("bfcl-").removesuffix("-oracle"))
        for row in report.seeds
        if row.get("identical")
    )
    total_identical = sum(e.identical for e in report.environments)
    for cat in CATEGORIES if args.category == "all" else (args.category,):
        n = sum(1 for t in tasks if category_of(t) == cat)
        print(
            f"{cat}: tasks {n}, excluded {sum(1 for t in excluded if category_of(t) == cat)}, seeds passing"
            f" multi_turn_checker {passed[cat]}, audit identical {identical[cat]}"
        )
    print(
        f"all: tasks {len(tasks)}, seeds {sum(passed.values())}, audit identical {total_identical}/{len(seeds)}, record"
        f" {record_s:.1f} s, audit {sum(e.seconds for e in report.environments):.1f} s, written {path}"
    )
    for task, reason in excluded.items():
        print(f"excluded {task}: {reason}")
    for line in failed:
        print(f"FAILED {line}")
    return 0 if not failed and total_identical == len(seeds) else 1


if __name__ == "__main__":
    sys.exit(main())
