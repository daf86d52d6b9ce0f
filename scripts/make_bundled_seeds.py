"""Recipe for the seeds bundled in src/failforge/data/seeds (what `failforge demo` branches).

- ``agentdojo_multiagent_demo.jsonl``: AgentDojo oracle seeds recorded through the two built-in
  multi-agent harnesses (a scripted team plays the ground truth). Their round limits are tight (the
  ground truth's length plus two), so a live continuation by a weak model cannot wander for long and
  the demo keeps to its time budget.
- ``agentdojo_demo.jsonl`` (only with ``--single``): the single-agent oracle seeds of the demo.

Every seed is replayed after recording and must be identical, and its evaluator must say success.

    PYTHONHASHSEED=0 python scripts/make_bundled_seeds.py [--single]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from failforge.environments import environment
from failforge.fidelity import replay
from failforge.seeds import env_spec, harness_for, oracle_seed
from failforge.trajectory import Trajectory, write_jsonl

DATA = Path(__file__).resolve().parents[1] / "src" / "failforge" / "data" / "seeds"
SINGLE_AGENT = ("banking/user_task_1", "banking/user_task_3", "slack/user_task_0", "slack/user_task_2", "travel/user_task_0", "workspace/user_task_0")
MULTI_AGENT = (("orchestrator-workers", "banking/user_task_0"), ("plan-execute-verify", "slack/user_task_3"))


def tight(harness: str, task: str) -> dict[str, int]:
    """Round limits for a demo seed: what the ground truth needs, plus two."""
    calls, _ = environment("agentdojo").ground_truth(env_spec("agentdojo", task))
    if harness == "orchestrator-workers":
        return {"max_rounds": len(calls) + 2, "worker_max_calls": 3}
    return {"executor_max_calls": len(calls) + 2}


def checked(seed: Trajectory) -> Trajectory:
    if not (seed.outcome and seed.outcome.success):
        raise SystemExit(f"{seed.id}: the oracle run did not pass the evaluator")
    report = replay(seed, raise_on_drift=False)
    if not report.identical:
        raise SystemExit(f"{seed.id}: did not replay identically: {report.drift or report.infrastructure}")
    return seed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--single", action="store_true", help="also rebuild the single-agent demo seeds")
    opts = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("run with PYTHONHASHSEED=0 (AgentDojo's calendar order follows it)")
    multi = [
        checked(oracle_seed("agentdojo", task, harness=harness_for(name, env_spec("agentdojo", task), **tight(name, task))))
        for name, task in MULTI_AGENT
    ]
    write_jsonl(DATA / "agentdojo_multiagent_demo.jsonl", multi)
    print(f"wrote {len(multi)} multi-agent seeds: {', '.join(s.id for s in multi)}")
    if opts.single:
        single = [checked(oracle_seed("agentdojo", task)) for task in SINGLE_AGENT]
        write_jsonl(DATA / "agentdojo_demo.jsonl", single)
        print(f"wrote {len(single)} single-agent seeds")


if __name__ == "__main__":
    main()
