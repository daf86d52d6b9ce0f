"""A DA-Bench campaign with the scripted policy: seeds x the code modes, gold by mode, rejections by filter.

The agent is ``failforge.testing.code_agent_policy`` on a loopback server: each seed's own replies by position, and
at a stage-2 request the reply with its code replaced by what the rule's note prescribes (``--annotate-every k``:
every k-th of those keeps a comment that contradicts the change, for the tell filter to catch). Notes come from the
code rules (``injection/_code_rules.py``); the planner's default step policy for DA-Bench is the paper's.
Mechanics, not a model: what this measures is the pipeline on code actions, not how a model errs.

    PYTHONPATH=src python3 scripts/dabench_campaign.py SEEDS.jsonl [SEEDS.jsonl ...] --output OUT [--limit N]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.jsonl import read_jsonl
from failforge.llm import ModelEndpoint
from failforge.testing import LoopbackModelServer
from failforge.testing.code_agent_policy import code_agent_policy
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

MODES = ["A.2", "A.4", "R.2", "R.3"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--output", required=True)
    parser.add_argument("--limit", type=int, default=0, help="the first N seeds of each file")
    parser.add_argument("--annotate-every", type=int, default=3)
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    seeds: list[Trajectory] = []
    for path in args.seeds:
        rows = [Trajectory.model_validate(item[1]) for item in read_jsonl(path) if not isinstance(item, Exception)]
        seeds += rows[: args.limit] if args.limit else rows
    chosen = out / "seeds.jsonl"
    write_jsonl(chosen, seeds)
    with LoopbackModelServer(policy=code_agent_policy(seeds, annotate_every=args.annotate_every)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback-analyst", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(chosen)],
            output=str(out / "campaign"),
            guide_kind="auto",
            plan={"steps_per_seed": 5, "modes_per_step": len(MODES), "modes": MODES},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, _ = load_jsonl(out / "campaign" / "gold.jsonl") if (out / "campaign" / "gold.jsonl").exists() else ([], [])
    rejected = (
        [item[1] for item in read_jsonl(out / "campaign" / "rejected.jsonl") if not isinstance(item, Exception)]
        if (out / "campaign" / "rejected.jsonl").exists()
        else []
    )
    by_mode = Counter(g.label.mode_code for g in gold)
    positions = Counter(g.label.decisive_step for g in gold)
    lengths = Counter(len(g.steps) for g in gold)
    tells = [
        r for r in rejected if any(v.get("name") == "tell" and not v.get("passed") for v in r.get("verdicts") or [])
    ]
    print(
        f"seeds: {len(seeds)}; attempts {summary.attempts}, gold {summary.kept}, "
        f"rejected {summary.rejected}, failed {summary.failed}"
    )
    print(
        f"gold by mode: {dict(sorted(by_mode.items()))}; decisive steps: {dict(sorted(positions.items()))}; "
        f"lengths: {dict(sorted(lengths.items()))}"
    )
    print(
        f"rejected by: {dict(sorted(summary.rejected_by.items()))} "
        "(guide: the code rule has nothing to change at that step)"
    )
    for r in tells:
        reason = next(v["reason"] for v in r["verdicts"] if v.get("name") == "tell")
        print(f"  tell {r['attempt_id']}: {reason[:200]}")
    (out / "numbers.json").write_text(
        json.dumps(
            {
                "gold_by_mode": by_mode,
                "rejected_by": summary.rejected_by,
                "positions": positions,
                "lengths": lengths,
                "tell": len(tells),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
