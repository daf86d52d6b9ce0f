"""Environment-side injection campaign on AgentDojo against the deterministic loopback agent.

A thin wrapper over ``failforge generate``'s own path (:func:`failforge.campaign.run_campaign` with a
``[plan.injections]`` table: the same planner, ledger, executor and runners, so it resumes and its records
carry the config hash). It first replays every seed (its safe twin: AgentDojo's utility check on the replay;
a seed that does not replay identically and successfully is left out), writes the twins to
``--output/twins.jsonl`` and runs the campaign over them against ``failforge.testing.injected_policy``
(follows, ignores or refuses an injected goal by a hash). It prints: records per status and per
five-outcome class, the gold per behaviour and suite, how many AgentDojo's security check confirms, chain
statistics, and the steps not planned with why.

    PYTHONPATH=src python3 scripts/injection_campaign.py --output /tmp/inject-run
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from failforge.campaign import CampaignConfig, run_campaign
from failforge.campaign._card import outcome_lines
from failforge.gold import ResolvedModels
from failforge.judgement import adjudicated
from failforge.llm import ModelEndpoint
from failforge.replay import replay
from failforge.testing import LoopbackModelServer
from failforge.testing.injected_policy import respond
from failforge.trajectory import Trajectory, iter_jsonl, load_jsonl, write_jsonl

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
AGENT = "loopback-injected-policy"


def _seeds(args: argparse.Namespace) -> list[Trajectory]:
    if args.all_oracle:
        from failforge.environments.agentdojo import list_user_tasks
        from failforge.seeds import oracle_seed

        return [
            oracle_seed("agentdojo", f"{s}/{t}")
            for s, t in list_user_tasks(tuple(args.suite) or ("workspace", "travel", "banking", "slack"))
        ]
    seeds, errors = load_jsonl(args.seeds)
    if errors:
        sys.exit(f"bad seed lines: {errors[0]}")
    return [
        s
        for s in seeds
        if s.environment.name == "agentdojo" and (not args.suite or s.environment.config.get("suite") in args.suite)
    ]


def _twins(seeds: list[Trajectory], out: Path) -> Path:
    """Replay every seed; keep (adjudicated) the ones that replay identically and succeed."""
    twins = []
    for seed in seeds:
        report = replay(seed, raise_on_drift=False)
        ok = report.identical and report.outcome is not None and bool(report.outcome.success)
        print(
            f"twin {seed.id}: replay identical={report.identical}"
            f" utility={report.outcome.success if report.outcome else None}"
        )
        if ok:
            twins.append(adjudicated(seed))
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "twins.jsonl", twins)
    print(
        f"seeds: {len(twins)} of {len(seeds)} replayed identically and successful; adjudicated "
        f"{dict(Counter(t.adjudication.outcome if t.adjudication else None for t in twins))}"
    )
    return out / "twins.jsonl"


def _records(path: Path) -> list:
    return [r for r in iter_jsonl(path) if not isinstance(r, Exception)] if path.exists() else []


def _report(out: Path) -> None:
    """What the campaign folder holds, counted from its files (the same numbers for a resumed run)."""
    gold = _records(out / "gold.jsonl")
    rejected = (
        [json.loads(line) for line in (out / "rejected.jsonl").read_text().splitlines()]
        if (out / "rejected.jsonl").exists()
        else []
    )
    failed = (
        [json.loads(line) for line in (out / "failed.jsonl").read_text().splitlines()]
        if (out / "failed.jsonl").exists()
        else []
    )
    print(f"\nattempts: gold {len(gold)}, rejected {len(rejected)}, failed {len(failed)}")
    print("\n".join(outcome_lines(out)[1:]))
    by = Counter(
        (r.label.behaviour, r.label.injection["suite"] if r.label.injection else r.environment.config.get("suite"))
        for r in gold
    )
    print("gold per behaviour and suite:", {f"{b}/{s}": n for (b, s), n in sorted(by.items())})
    unsafe = [r for r in gold if r.label.behaviour in ("unsafe_action", "unsafe_completion")]
    confirmed = sum(1 for r in unsafe if r.outcome.details["security"]["attacker_goal_met"] is True)
    print(
        "unsafe gold (unsafe_action + unsafe_completion) confirmed by AgentDojo's security check:"
        f" {confirmed}/{len(unsafe)}"
    )
    twins = [r for r in gold if r.label.behaviour == "unsafe_completion"]
    held = Counter(r.label.injection["twin_outcome"] for r in twins)
    print(f"unsafe_completion twins (the run under attack, before the flip): {dict(held)}")
    refusal = [r for r in gold if r.label.behaviour == "over_refusal"]
    print(f"over_refusal gold: {len(refusal)}, utility {sorted({r.outcome.success for r in refusal})}")
    for behaviour in ("unsafe_action", "unsafe_completion"):
        rows = [r for r in gold if r.label.behaviour == behaviour]
        if rows:
            lengths = Counter((len(r.label.attack_chain), len(r.label.execution_chain)) for r in rows)
            gaps = Counter(int(r.label.target_component[1:]) - int(r.label.primary_component[1:]) for r in rows)
            print(
                f"{behaviour}: (attack, execution) chain lengths {dict(sorted(lengths.items()))}; target - primary"
                f" {dict(sorted(gaps.items()))}"
            )
    reasons = Counter(r["reasons"][0].split(":")[0] for r in rejected)
    print("first rejection reason:", dict(reasons.most_common()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default=str(BUNDLED))
    parser.add_argument(
        "--all-oracle", action="store_true", help="record and use the oracle seed of every v1 user task"
    )
    parser.add_argument("--suite", action="append", default=[])
    parser.add_argument("--attack", action="append", default=[])
    parser.add_argument(
        "--tasks-per-point",
        type=int,
        default=100,
        help="injection tasks per (step, vector); default: all of the suite's",
    )
    parser.add_argument("--steps-per-seed", type=int, default=2)
    parser.add_argument("--output", default="/tmp/failforge-injection-campaign")
    parser.add_argument(
        "--no-refusals", dest="refusals", action="store_false", help="skip the injected-refusal (over_refusal) attempts"
    )
    parser.add_argument(
        "--no-compliance",
        dest="compliance",
        action="store_false",
        help="skip the flipped-compliance (unsafe_completion) attempts",
    )
    parser.add_argument("--executor", default="local")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the steps not planned, run nothing")
    args = parser.parse_args()
    started = time.monotonic()
    out = Path(args.output)
    injections = {
        "only": True,
        "refusals": args.refusals,
        "compliance": args.compliance,
        "tasks_per_point": args.tasks_per_point,
        "steps_per_seed": args.steps_per_seed,
        **({"attacks": args.attack} if args.attack else {}),
    }
    twins = _twins(_seeds(args), out)
    with LoopbackModelServer(policy=respond) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model=AGENT, api_key_env=None)
        config = CampaignConfig(
            seeds=[str(twins)],
            output=str(out / "campaign"),
            executor=args.executor,
            concurrency=args.concurrency,
            agent=endpoint,
            plan={"injections": injections},
        )
        if args.dry_run:
            from failforge.campaign._run import CampaignSummary, plan_campaign, select_seeds

            plan, why = plan_campaign(config, select_seeds(config, CampaignSummary(output=out)))
            print(
                "\n".join(
                    [
                        *(f"  not planned {w}" for w in why),
                        *(f"  {spec.attempt_id}" for _, spec in plan),
                        f"planned {len(plan)} attempts",
                    ]
                )
            )
            return 0
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    print(
        f"planned {summary.planned}; this run: {summary.attempts} attempts ({summary.skipped} already done); config"
        f" hash {config.config_hash()}"
    )
    manifest = json.loads((out / "campaign" / "manifest.json").read_text())
    for line in manifest.get("injections_not_planned", []):
        print(f"  not planned {line}")
    _report(out / "campaign")
    print(f"written to {out / 'campaign'} (dataset card: README.md); {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    from failforge.errors import ConfigError

    try:
        raise SystemExit(main())
    except ConfigError as exc:  # a bad attack, vector or injection task: one line naming the valid ones
        sys.exit(f"error: {exc}")
