"""Recipe for the seeds bundled in src/failforge/data/seeds/ (what `failforge demo` branches).

    PYTHONHASHSEED=0 python scripts/make_bundled_seeds.py            # rewrite the bundled files
    PYTHONHASHSEED=0 python scripts/make_bundled_seeds.py --check    # exit 1 if they would change

The AgentDojo demo seeds are the oracle seeds of six tasks across the four v1 suites, recorded through
the built-in harness. Re-run this after a change to a harness or an environment that makes
tests/unit/test_bundled_seeds.py fail, and commit the regenerated files with the change.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from failforge.seeds import oracle_seed
from failforge.trajectory import load_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
AGENTDOJO_DEMO = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
AGENTDOJO_DEMO_TASKS = (
    "workspace/user_task_0",
    "travel/user_task_0",
    "banking/user_task_1",
    "banking/user_task_3",
    "slack/user_task_0",
    "slack/user_task_2",
)


def _comparable(path: Path) -> list[dict]:
    seeds, errors = load_jsonl(path)
    if errors:
        raise SystemExit(f"{path}: {errors[0]}")
    return [s.model_dump(mode="json", exclude={"provenance"}) for s in seeds]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if the bundled seeds would change")
    opts = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("run with PYTHONHASHSEED=0 (AgentDojo orders calendar participants by set iteration)")
    seeds = [oracle_seed("agentdojo", task) for task in AGENTDOJO_DEMO_TASKS]
    bad = [s.id for s in seeds if not (s.outcome and s.outcome.success)]
    if bad:
        raise SystemExit(f"oracle seeds that did not pass their evaluator: {bad}")
    if opts.check:
        tmp = AGENTDOJO_DEMO.with_suffix(".check.jsonl")
        write_jsonl(tmp, seeds)
        try:
            same = _comparable(tmp) == _comparable(AGENTDOJO_DEMO)
        finally:
            tmp.unlink()
        print(f"{AGENTDOJO_DEMO.relative_to(ROOT)}: {'up to date' if same else 'WOULD CHANGE'}")
        return 0 if same else 1
    write_jsonl(AGENTDOJO_DEMO, seeds)
    print(f"wrote {len(seeds)} seeds to {AGENTDOJO_DEMO.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
