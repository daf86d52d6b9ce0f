"""Oracle seeds of every tau2 task of the given domains (default: airline, retail, telecom; split base), each
evaluated by tau2's own evaluator and audited (replayed from the seed). Prints per domain: seeds scoring 1.0,
audit identical n/n, and every task that failed with the reason.

    PYTHONPATH=src python3 scripts/tau2_seeds_all.py [--domain airline ...] [--split base] [--limit N]
"""

from __future__ import annotations

import argparse
import time

from failforge.environments import environment
from failforge.fidelity import audit
from failforge.seeds import oracle_seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", action="append", choices=["airline", "retail", "telecom"])
    parser.add_argument("--split", default="base")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    plugin = environment("tau2")
    total_seeds = total_identical = total_tasks = 0
    for domain in args.domain or ["airline", "retail", "telecom"]:
        options = plugin.Options(domain=domain, split=args.split)
        ids = plugin.tasks(options)[: args.limit]
        started = time.perf_counter()
        seeds = identical = 0
        failures: list[tuple[str, str]] = []
        eval_seconds: list[float] = []
        for task_id in ids:
            try:
                seed = oracle_seed("tau2", task_id, options)
            except Exception as exc:
                failures.append((task_id, f"recording raised {type(exc).__name__}: {str(exc)[:200]}"))
                continue
            eval_seconds.append(float(seed.outcome.details.get("seconds", 0.0)))
            if not seed.outcome.success:
                failures.append(
                    (
                        task_id,
                        (
                            f"reward {seed.outcome.score}:"
                            f" {seed.outcome.details.get('reward_breakdown') or seed.outcome.details}"
                        ),
                    )
                )
                continue
            seeds += 1
            report = audit([seed])
            row = report.seeds[0]
            if row["identical"]:
                identical += 1
            else:
                failures.append((task_id, f"audit: {row.get('drift') or row.get('infrastructure')}"))
        mean_eval = sum(eval_seconds) / len(eval_seconds) if eval_seconds else 0.0
        print(
            f"{domain}/{args.split}: tasks {len(ids)}, seeds (reward 1.0) {seeds}, audit identical {identical}/{seeds},"
            f" mean evaluation {mean_eval:.3f} s, {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        for task_id, reason in failures:
            print(f"  FAILED {task_id}: {reason}", flush=True)
        total_seeds += seeds
        total_identical += identical
        total_tasks += len(ids)
    print(
        f"total: tasks {total_tasks}, seeds {total_seeds}, audit identical {total_identical}/{total_seeds}", flush=True
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
