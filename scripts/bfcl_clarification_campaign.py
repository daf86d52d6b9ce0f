"""Missed-clarification campaign on BFCL miss_param / miss_func against the deterministic loopback agent.

Records the oracle seeds of the first N tasks of each category (at a turn it cannot do, the oracle asks
for the detail, or says no offered function does it), then runs a loopback campaign per category with the
rule guide at the turn BFCL marks (steps_per_seed = 1: the planner takes a turn to ask at first): miss_param
with R.1 (a value the user never gave), miss_func with A.3 (the held-out function called before it is
offered). The agent is ``failforge.testing.bfcl_policy`` (BFCL's ground truth; under a note, the note's
call). Gold is kept only if BFCL's ``multi_turn_checker`` fails the changed run while the seed's own
step, continued live, still passes (the decisiveness filter). Prints gold / rejected by reason per
category, gold by (expected, found) control decision, and one gold record's decisive step.

    PYTHONPATH=src python3 scripts/bfcl_clarification_campaign.py --tasks 20 --output /tmp/bfcl-clarify
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.testing.bfcl_policy import BfclPolicies
from failforge.trajectory import load_jsonl, write_jsonl

MODES = {"miss_param": "R.1", "miss_func": "A.3"}


def _reason(line: str) -> str:
    """A rejection reason without its run-specific values (for counting)."""
    head = line.split(": ", 2)
    key = ": ".join(head[:2]) if len(head) > 2 else line
    return re.sub(r"\d+(\.\d+)?", "#", key)[:110]


def run(category: str, n: int, out: Path) -> dict[str, int]:
    tasks = [f"multi_turn_{category}_{i}" for i in range(n)]
    seeds = [oracle_seed("bfcl", task) for task in tasks]
    passing = [s for s in seeds if s.outcome is not None and s.outcome.success]
    print(f"\n== {category}: {len(passing)}/{len(seeds)} oracle seeds pass multi_turn_checker; mode {MODES[category]}")
    folder = out / category
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "seeds.jsonl", passing)
    with LoopbackModelServer(policy=BfclPolicies(tasks)) as server:
        endpoint = ModelEndpoint(
            base_url=server.base_url, model="loopback-bfcl-policy", api_key_env=None, timeout=60.0, max_attempts=1
        )
        config = CampaignConfig(
            seeds=[str(folder / "seeds.jsonl")],
            output=str(folder / "out"),
            concurrency=1,
            guide_kind="rules",
            plan={"modes": [MODES[category]], "steps_per_seed": 1, "modes_per_step": 1},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, _ = load_jsonl(folder / "out" / "gold.jsonl") if (folder / "out" / "gold.jsonl").exists() else ([], [])
    rejected = (
        [json.loads(line) for line in (folder / "out" / "rejected.jsonl").read_text().splitlines()]
        if (folder / "out" / "rejected.jsonl").exists()
        else []
    )
    failed = (
        (folder / "out" / "failed.jsonl").read_text().splitlines() if (folder / "out" / "failed.jsonl").exists() else []
    )
    print(f"attempts: gold {len(gold)}, rejected {len(rejected)}, failed {len(failed)} (summary: {summary})")
    print("rejected by first reason:")
    for reason, k in Counter(_reason((r.get("reasons") or ["?"])[0]) for r in rejected).most_common():
        print(f"  {k:3d}  {reason}")
    print(
        "gold by control decision (expected -> found):",
        dict(Counter(f"{g.label.expected_decision}->{g.label.found_decision}" for g in gold)),
    )
    errors = Counter(str(g.outcome.details.get("error_type")) for g in gold if g.outcome)
    print("gold by checker error_type:", dict(errors))
    for g in gold[:1]:
        t = g.label.decisive_step
        step = g.steps[t]
        print(f"example {g.id} (seed {g.label.seed_id}) step {t}: note {g.label.steering_note!r}")
        print(f"  seed's step: {g.label.original_step.content!r}")
        print(
            f"  changed step: {[(c.name, c.parsed_arguments()) for c in step.tool_calls]}; observation:"
            f" {(g.steps[t + 1].content or '')[:160]!r}"
        )
        print(f"  checker: {json.dumps(g.outcome.details)[:300] if g.outcome else None}")
    return {"gold": len(gold), "rejected": len(rejected), "failed": len(failed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=20, help="first N tasks of each category")
    parser.add_argument("--category", action="append", choices=sorted(MODES), default=[])
    parser.add_argument("--output", default="/tmp/failforge-bfcl-clarification")
    args = parser.parse_args()
    started = time.monotonic()
    totals = {c: run(c, args.tasks, Path(args.output)) for c in args.category or ["miss_param", "miss_func"]}
    print(f"\ntotals: {totals}; {time.monotonic() - started:.1f}s; written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
