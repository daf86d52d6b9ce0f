"""ScienceWorld at full size: gold seeds of every task x variation, each replayed once (audit), drift listed.

Per task variation: record the gold action sequence through the default harness (no replay check first),
then replay the seed with ``failforge.fidelity.audit`` on the same pooled JVM (the reset under test).
A seed that scores 100 and replays identically counts as a seed; one that drifts is listed with the
drift (the part that changed and the step) — those are the tasks ``failforge seeds`` must exclude.
Mendelian-genetics gold runs are long (~90 s each), so they come last.

    PYTHONPATH=src python3 scripts/scienceworld_seeds_all.py [--variations 3] [--tasks boil,melt] [--out DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from failforge.environments import environment
from failforge.fidelity import audit
from failforge.seeds import DEFAULT_AGENT_MODEL, default_harness, env_spec, record
from failforge.trajectory import ComponentSpec, write_jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variations", type=int, default=3)
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all 30)")
    parser.add_argument("--out", type=Path, default=Path("scienceworld_all"))
    args = parser.parse_args()
    from failforge.environments.scienceworld_env import ScienceWorldEnvironment, task_names

    names = [n for n in args.tasks.split(",") if n] or task_names()
    names = sorted(names, key=lambda n: n.startswith("mendelian"))
    plugin = environment("scienceworld")
    assert isinstance(plugin, ScienceWorldEnvironment)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds, identical, failed, drifted = 0, 0, [], []
    tasks_ok: dict[str, int] = {}
    started = time.monotonic()
    for name in names:
        for variation in range(args.variations):
            task_id = f"{name}/{variation}"
            t0 = time.monotonic()
            spec = env_spec("scienceworld", task_id)
            seed = record(
                env_spec=spec,
                harness=default_harness(spec),
                model=ComponentSpec(name=DEFAULT_AGENT_MODEL, config={"role": "agent"}),
                upstream=plugin.gold_responder(spec),
                oracle=True,
                trajectory_id=plugin.seed_name(spec),
            )
            score = seed.outcome.details.get("score") if seed.outcome else None
            if not (seed.outcome and seed.outcome.success):
                failed.append(f"{task_id}: gold scored {score}")
                print(f"{task_id}: gold did NOT pass (score {score})", flush=True)
                continue
            seeds += 1
            report = audit([seed])
            row = report.seeds[0]
            same = report.environments[0].identical == 1
            write_jsonl(args.out / f"{plugin.seed_name(spec)}.jsonl", [seed])
            if same:
                identical += 1
                tasks_ok[name] = tasks_ok.get(name, 0) + 1
            else:
                drift = row.get("drift") or {}
                drifted.append(f"{task_id}: {drift.get('message', drift) if isinstance(drift, dict) else drift}")
            print(
                f"{task_id}: score {score}, {len(seed.steps)} steps, replay {'identical' if same else 'DRIFT'}"
                f" ({time.monotonic() - t0:.1f} s)",
                flush=True,
            )
    full = sorted(n for n, k in tasks_ok.items() if k == args.variations)
    print(f"\nseeds (gold scored 100): {seeds}/{len(names) * args.variations}")
    print(f"audit identical: {identical}/{seeds}")
    print(f"tasks with all {args.variations} variations identical: {len(full)}/{len(names)}")
    for line in failed:
        print(f"gold failed  {line}")
    for line in drifted:
        print(f"excluded     {line}")
    print(f"wall time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
