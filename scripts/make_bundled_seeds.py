"""Recipe for the seeds bundled in src/failforge/data/seeds/ (what `failforge demo` branches).

    PYTHONHASHSEED=0 python scripts/make_bundled_seeds.py            # rewrite the bundled files
    PYTHONHASHSEED=0 python scripts/make_bundled_seeds.py --check    # exit 1 if they would change

- ``agentdojo_demo.jsonl``: oracle seeds of six tasks across the four v1 suites, recorded through the
  built-in single-agent harness.
- ``agentdojo_multiagent_demo.jsonl``: AgentDojo oracle seeds recorded through the two built-in
  multi-agent harnesses (a scripted team plays the ground truth). Their round limits are tight (the
  ground truth's length plus two), so a live continuation by a weak model cannot wander for long and
  the demo keeps to its time budget.

Every seed must pass its evaluator and replay identically. Re-run this after a change to a harness or
an environment that makes tests/unit/test_bundled_seeds.py fail, and commit the regenerated files.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from failforge.environments import environment
from failforge.replay import replay
from failforge.seeds import env_spec, harness_for, oracle_seed
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "failforge" / "data" / "seeds"
SINGLE_AGENT = (
    "workspace/user_task_0",
    "travel/user_task_0",
    "banking/user_task_1",
    "banking/user_task_3",
    "slack/user_task_0",
    "slack/user_task_2",
)
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


def _comparable(path: Path) -> list[dict[str, Any]]:
    seeds, errors = load_jsonl(path)
    if errors:
        raise SystemExit(f"{path}: {errors[0]}")
    return [s.model_dump(mode="json", exclude={"provenance"}) for s in seeds]


def _write_or_check(path: Path, seeds: list[Trajectory], check: bool) -> bool:
    if not check:
        write_jsonl(path, seeds)
        print(f"wrote {len(seeds)} seeds to {path.relative_to(ROOT)}")
        return True
    tmp = path.with_suffix(".check.jsonl")
    write_jsonl(tmp, seeds)
    try:
        same = _comparable(tmp) == _comparable(path)
    finally:
        tmp.unlink()
    print(f"{path.relative_to(ROOT)}: {'up to date' if same else 'WOULD CHANGE'}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the bundled seeds would change")
    opts = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("run with PYTHONHASHSEED=0 (AgentDojo orders calendar participants by set iteration)")
    single = [checked(oracle_seed("agentdojo", task)) for task in SINGLE_AGENT]
    multi = [
        checked(
            oracle_seed("agentdojo", task, harness=harness_for(name, env_spec("agentdojo", task), **tight(name, task)))
        )
        for name, task in MULTI_AGENT
    ]
    ok = _write_or_check(DATA / "agentdojo_demo.jsonl", single, opts.check)
    ok = _write_or_check(DATA / "agentdojo_multiagent_demo.jsonl", multi, opts.check) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
