"""Conversation gold on tau2-bench: a campaign per task against the deterministic conversation policy, with the
rule guide's modes at the agent's and at the customer's steps, and what tau2's evaluator said of each record.

For each of the first ``--tasks`` base tasks of each domain it records the oracle seed, runs a campaign (every
step, modes A.5, R.1, R.3 and A.2, decisiveness on) against ``failforge.testing.conversation_policy`` and prints
the gold kept by (mode, party, what the decisive step did) and the rejections by stage. Every kept record is
checked here again: the prefix is the seed's, tau2's reward is below 1 with the failing reward component named,
and the decisiveness verdict passed (the seed's own step continued live succeeded).

    PYTHONPATH=src python3 scripts/tau2_conversation_gold.py [--domain retail] [--tasks 3] [--out DIR]

Telecom is not offered: its user-side device actions are not played by the conversation policy.
"""

from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.testing.conversation_policy import TRANSFER_TOOL, ConversationPolicy
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

MODES = ("A.5", "R.1", "R.3", "A.2")


def _what(record: Trajectory) -> str:
    step = record.steps[record.label.decisive_step]  # type: ignore[union-attr]
    if any(c.name == TRANSFER_TOOL for c in step.tool_calls):
        return "transfer to a human"
    if step.tool_calls:
        return f"call {step.tool_calls[0].name}"
    return "stop token" if (step.content or "").startswith("###") else "message"


def campaign(domain: str, task_id: str, out: Path) -> tuple[list[Trajectory], collections.Counter[str], Trajectory]:
    seed = oracle_seed("tau2", task_id, {"domain": domain})
    if not (seed.outcome and seed.outcome.success):
        raise SystemExit(f"{domain}/{task_id}: the oracle seed did not succeed")
    seeds = out / "seeds.jsonl"
    write_jsonl(seeds, [seed])
    with LoopbackModelServer(agent_policy=ConversationPolicy(domain, task_id)) as server:
        endpoint = ModelEndpoint(
            base_url=server.base_url, model="loopback", api_key_env=None, timeout=60.0, max_attempts=1
        )
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(out / "out"),
            concurrency=1,
            plan={"modes": list(MODES), "steps_per_seed": 100, "modes_per_step": len(MODES)},
            filters={"conformance": {"judge": True}},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold_path = out / "out" / "gold.jsonl"
    gold = load_jsonl(gold_path)[0] if gold_path.exists() else []
    return gold, collections.Counter(summary.rejected_by), seed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--domain", action="append", choices=["airline", "retail"])
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="failforge-tau2-gold-"))
    kept: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    rejected: collections.Counter[str] = collections.Counter()
    problems: list[str] = []
    started = time.monotonic()
    from failforge.environments import environment

    plugin = environment("tau2")
    for domain in args.domain or ["retail", "airline"]:
        for task_id in list(plugin.tasks(plugin.Options(domain=domain)))[: args.tasks]:
            out = root / domain / task_id
            out.mkdir(parents=True, exist_ok=True)
            gold, why, seed = campaign(domain, task_id, out)
            rejected.update(why)
            for record in gold:
                label = record.label
                assert label is not None
                t = label.decisive_step
                breakdown = (record.outcome.details or {}).get("reward_breakdown", {}) if record.outcome else {}
                kept[(domain, label.mode_code, label.decisive_agent, _what(record))] += 1
                if [s.comparable() for s in record.steps[:t]] != [s.comparable() for s in seed.steps[:t]]:
                    problems.append(f"{record.id}: prefix differs from the seed")
                if not record.outcome or record.outcome.success or not any(v < 1.0 for v in breakdown.values()):
                    problems.append(f"{record.id}: tau2 did not fail it ({breakdown})")
                if not any(v.name == "decisiveness" and v.passed for v in label.filter_verdicts):
                    problems.append(f"{record.id}: no passed decisiveness verdict")
            print(
                f"{domain}/{task_id}: {len(gold)} gold, rejected {dict(why)} ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
    print("\ngold by domain, mode, party, decisive step:")
    for (domain, mode, party, what), n in sorted(kept.items()):
        print(f"  {domain:<8} {mode:<4} {party:<9} {what:<40} {n}")
    print(f"total gold {sum(kept.values())}; rejected by stage {dict(rejected)}; outputs in {root}")
    for problem in problems:
        print("PROBLEM", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
