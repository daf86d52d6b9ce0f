"""Recipe for the framework adapters' bundled seeds in src/failforge/data/seeds/ (the unit layer's harness check).

    PYTHONHASHSEED=0 python scripts/make_framework_seeds.py            # rewrite the bundled files
    PYTHONHASHSEED=0 python scripts/make_framework_seeds.py --check    # exit 1 if they would change

- ``magentic_one_seeds.jsonl``: team-oracle seeds of five AgentDojo tasks recorded through the
  ``magentic-one`` harness (AutoGen AgentChat's MagenticOneGroupChat; the scripted team writes the
  orchestrator's ledgers). tests/unit/test_bundled_seeds.py replays their model side against the
  framework installed now, so a framework version that changes a request (a prompt, the ledger's
  response_format, a message field) fails there in seconds, without AgentDojo.

- ``maf_seeds.jsonl``: the same five tasks through the ``agent-framework`` harness
  (Microsoft Agent Framework's Magentic workflow; the same scripted team writes its manager's ledgers).

Every seed must pass its evaluator and replay identically. Re-run after an intended harness or
framework change that makes the unit check fail, and commit the regenerated file with it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from failforge.replay import replay
from failforge.seeds import oracle_seed
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "failforge" / "data" / "seeds"
TASKS = (
    "banking/user_task_3",
    "banking/user_task_1",
    "slack/user_task_0",
    "slack/user_task_2",
    "workspace/user_task_0",
)
FILES = {"magentic-one": "magentic_one_seeds.jsonl", "agent-framework": "maf_seeds.jsonl"}


def made(harness: str) -> list[Trajectory]:
    seeds = []
    for task in TASKS:
        seed = oracle_seed("agentdojo", task, harness=harness)
        if not (seed.outcome and seed.outcome.success):
            raise SystemExit(f"{seed.id}: the oracle run did not pass the evaluator")
        report = replay(seed, raise_on_drift=False)
        if not report.identical:
            raise SystemExit(f"{seed.id}: did not replay identically: {report.drift or report.infrastructure}")
        seeds.append(seed)
    return seeds


def comparable(seeds: list[Trajectory]) -> list[dict[str, object]]:
    return [s.model_dump(mode="json", exclude={"provenance"}) for s in seeds]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the bundled seeds would change")
    opts = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("run with PYTHONHASHSEED=0 (AgentDojo orders calendar participants by set iteration)")
    same = True
    for harness, name in FILES.items():
        seeds, path = made(harness), DATA / name
        if opts.check:
            old, errors = load_jsonl(path) if path.exists() else ([], [])
            ok = not errors and comparable(old) == comparable(seeds)
            print(f"{path.relative_to(ROOT)}: {'up to date' if ok else 'WOULD CHANGE'}")
            same = same and ok
        else:
            write_jsonl(path, seeds)
            print(
                f"wrote {len(seeds)} seeds to {path.relative_to(ROOT)} ({sum(len(s.agent_steps()) for s in seeds)}"
                " model calls)"
            )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
