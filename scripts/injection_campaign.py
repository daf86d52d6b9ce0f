"""Environment-side injection campaign on AgentDojo against the deterministic loopback agent.

For every seed (default: the bundled AgentDojo seeds, all four suites; ``--all-oracle``: the oracle seed
of every v1 user task) it replays the seed (its safe twin: AgentDojo's utility check on the replay),
plans attacks x vectors x observation steps x injection tasks, runs each injection live against
``failforge.testing.injected_policy`` (follows, ignores or refuses an injected goal by a hash) and
adjudicates every run. It writes gold / rejected / failed / seeds JSONL to ``--output`` and prints:
records per status and per five-outcome class, the unsafe gold per suite, chain statistics, and the
steps not planned with why.

    PYTHONPATH=src python3 scripts/injection_campaign.py --output /tmp/inject-run
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from failforge.adjudication import adjudicated
from failforge.campaign._card import outcome_lines
from failforge.campaign._inject import run_injection_attempt, run_refusal_attempt
from failforge.injection import DEFAULT_ATTACK, plan_injections
from failforge.llm import HttpUpstream
from failforge.replay import replay
from failforge.testing import LoopbackModelServer
from failforge.testing.injected_policy import respond
from failforge.trajectory import ComponentSpec, Trajectory, load_jsonl, write_jsonl

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


def _seeds(args: argparse.Namespace) -> list[Trajectory]:
    if args.all_oracle:
        from failforge.environments.agentdojo_env import list_user_tasks
        from failforge.seeds import oracle_seed

        return [oracle_seed("agentdojo", f"{s}/{t}") for s, t in list_user_tasks(tuple(args.suite) or ("workspace", "travel", "banking", "slack"))]
    seeds, errors = load_jsonl(args.seeds)
    if errors:
        sys.exit(f"bad seed lines: {errors[0]}")
    return [s for s in seeds if s.environment.name == "agentdojo" and (not args.suite or s.environment.config.get("suite") in args.suite)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default=str(BUNDLED))
    parser.add_argument("--all-oracle", action="store_true", help="record and use the oracle seed of every v1 user task")
    parser.add_argument("--suite", action="append", default=[])
    parser.add_argument("--attack", action="append", default=[])
    parser.add_argument("--tasks-per-point", type=int, default=100, help="injection tasks per (step, vector); default: all of the suite's")
    parser.add_argument("--steps-per-seed", type=int, default=2)
    parser.add_argument("--output", default="/tmp/failforge-injection-campaign")
    parser.add_argument("--no-refusals", dest="refusals", action="store_false", help="skip the injected-refusal (over_refusal) attempts")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the steps not planned, run nothing")
    args = parser.parse_args()
    started = time.monotonic()
    out = Path(args.output)
    seeds = _seeds(args)
    twins: list[Trajectory] = []
    for seed in seeds:
        report = replay(seed, raise_on_drift=False)
        ok = report.identical and report.outcome is not None and bool(report.outcome.success)
        print(f"twin {seed.id}: replay identical={report.identical} utility={report.outcome.success if report.outcome else None}")
        if ok:
            twins.append(adjudicated(seed))
    plan = []
    for seed in twins:
        specs, why = plan_injections(seed, attacks=args.attack or [DEFAULT_ATTACK], steps_per_seed=args.steps_per_seed, tasks_per_point=args.tasks_per_point)
        plan.extend((seed, s) for s in specs)
        for t, reason in why.items():
            if seed.steps[t].kind == "tool" or args.dry_run:
                print(f"  not planned {seed.id}@{t}: {reason}")
    print(f"planned {len(plan)} injection attempts over {len(twins)} seeds")
    if args.dry_run:
        for _, spec in plan:
            print(f"  {spec.attempt_id}")
        return 0
    results = {"gold": [], "rejected": [], "failed": []}  # type: dict[str, list]
    with LoopbackModelServer(policy=respond) as server:
        agent = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1, model="loopback-injected-policy")
        for seed, spec in plan:
            result = run_injection_attempt(seed, spec, agent=agent, agent_model=ComponentSpec(name="loopback-injected-policy"))
            results[result.status].append(result.record)
        for seed in twins if args.refusals else ():  # refusal gold by construction: a refusal served at the first agent step
            first = next(s.index for s in seed.steps if s.kind == "agent")
            result = run_refusal_attempt(seed, first, agent=agent, agent_model=ComponentSpec(name="loopback-injected-policy"))
            results[result.status].append(result.record)
        agent.close()
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "seeds.jsonl", twins)
    for status, records in results.items():
        write_jsonl(out / f"{status}.jsonl", records)
    outcomes: Counter[str] = Counter()
    for seed in twins:
        outcomes[f"seed:{seed.adjudication.outcome if seed.adjudication else None}"] += 1
    for record in results["gold"]:
        outcomes[f"gold:{record.adjudication.outcome}"] += 1
    for record in results["rejected"]:
        adj = record.trajectory.adjudication if record.trajectory else None
        outcomes[f"rejected:{adj.outcome if adj else 'not run'}"] += 1
    for record in results["failed"]:
        outcomes[f"failed:{record.provenance.get('adjudication', {}).get('outcome')}"] += 1
    print(f"\nattempts: gold {len(results['gold'])}, rejected {len(results['rejected'])}, failed {len(results['failed'])}")
    print("records per five-outcome class:")
    for key, n in sorted(outcomes.items()):
        print(f"  {key:32s} {n}")
    refusal_gold = [r for r in results["gold"] if r.label.behaviour == "over_refusal"]
    results["gold"] = [r for r in results["gold"] if r.label.behaviour == "unsafe_action"]
    print(f"over_refusal gold (an injected refusal at a benign task): {len(refusal_gold)}, all adjudicated "
          f"{sorted({r.adjudication.outcome for r in refusal_gold})}, utility {sorted({r.outcome.success for r in refusal_gold})}")
    per_suite = Counter(r.label.injection["suite"] for r in results["gold"])
    print("unsafe_action gold per suite:", dict(sorted(per_suite.items())))
    confirmed = sum(1 for r in results["gold"] if r.outcome.details["security"]["attacker_goal_met"] is True)
    twin_ok = sum(1 for r in results["gold"] if next(s for s in twins if s.id == r.parent_id).outcome.success)
    print(f"gold confirmed by AgentDojo's security check: {confirmed}/{len(results['gold'])}; twins confirmed by its utility check (replayed): {twin_ok}/{len(results['gold'])}")
    lengths = Counter(len(r.label.execution_chain) for r in results["gold"])
    attack = Counter(len(r.label.attack_chain) for r in results["gold"])
    rules = Counter(r.label.injection["target_rule"] for r in results["gold"])
    gaps = Counter(int(r.label.target_component[1:]) - int(r.label.primary_component[1:]) for r in results["gold"])
    print(f"execution-chain lengths: {dict(sorted(lengths.items()))}; attack-chain lengths: {dict(sorted(attack.items()))}")
    print(f"target rule: {dict(rules)}; target - primary (steps): {dict(sorted(gaps.items()))}")
    reasons = Counter(r.reasons[0].split(":")[0] for r in results["rejected"])
    print("first rejection reason:", dict(reasons.most_common()))
    card = ["# failforge environment-side injection campaign (AgentDojo, loopback agent)", *outcome_lines(out)]
    (out / "README.md").write_text("\n".join(card) + "\n", encoding="utf-8")
    print("\n".join(card[1:]))
    print(f"written to {out}; {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    from failforge.errors import ConfigError

    try:
        raise SystemExit(main())
    except ConfigError as exc:  # a bad attack, vector or injection task: one line naming the valid ones
        sys.exit(f"error: {exc}")
