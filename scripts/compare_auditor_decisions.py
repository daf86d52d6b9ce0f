#!/usr/bin/env python3
"""Agreement of the trajectory auditor's control-decision map with failforge's rule-based states.

For every agent step of every gold trajectory: the rules' state (``failforge.judgement.decisions``, run on
the trajectory itself, so a tool step's recorded error counts for ``recover``) against the auditor's
(``Audit.decisions``). Per-state agreement, overall agreement over the steps both decided, Cohen's kappa
and the confusion table; steps the rules left undecided are counted apart, with what the auditor said on
them (:mod:`failforge.attribution._decision_agreement`).

The audits come from a real run (``--audited``: the output of ``failforge attach-audit`` on the same gold)
or, by default, from ``failforge attribute --method auditor`` run here against the deterministic loopback
auditor judge (``failforge.testing.auditor_judge``), whose states follow the step's form (a tool call:
act; the last audited step: stop; a text ending in '?': ask; anything else: act). That judge never says
refuse, confirm or recover and never abstains, so its agreement with the rules is the agreement of two
form-based readings, not of a judge's understanding: a measure of the pipeline, not of the auditor.

    python scripts/compare_auditor_decisions.py                      # the bundled gold, loopback judge
    python scripts/compare_auditor_decisions.py --gold gold.jsonl --audited audited.jsonl --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = [
    ROOT / "tests" / "fixtures" / "attribution" / "failforge_gold.jsonl",
    ROOT / "tests" / "fixtures" / "labels" / "demo_gold_agentdojo.jsonl",
    ROOT / "tests" / "fixtures" / "labels" / "demo_gold_miniwob.jsonl",
]
SEEDS = sorted((ROOT / "src" / "failforge" / "data" / "seeds").glob("*.jsonl"))


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--gold",
        type=Path,
        action="append",
        help="failforge gold trajectories (JSONL; repeatable; default: the bundled gold)",
    )
    parser.add_argument(
        "--seeds",
        type=Path,
        action="append",
        help="seed trajectories (JSONL, no gold label; repeatable; default: the bundled seeds)",
    )
    parser.add_argument("--no-seeds", action="store_true", help="only the gold")
    parser.add_argument(
        "--audited",
        type=Path,
        help="records with attached audits (`failforge attach-audit`); default: run the loopback auditor",
    )
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    return parser


def trajectories(paths: list[Path], *, labelled: bool) -> list[Any]:
    from failforge.trajectory import load_jsonl

    out: list[Any] = []
    for path in paths:
        good, bad = load_jsonl(path)
        for problem in bad:
            print(f"skipped {problem}", file=sys.stderr)
        out.extend(t for t in good if (t.label is not None) == labelled)
    return out


def placeholder_labelled(seeds: list[Any], template: Any) -> list[Any]:
    """Seeds carry no gold label, and the auditor's prompt and the loopback judge need one (its attribution
    half names a gold step): each seed gets ``template``'s label moved to its last agent step. The decision
    map does not depend on it: the loopback judge's states follow the step's form only."""
    out = []
    for t in seeds:
        last = max(s.index for s in t.steps if s.kind == "agent")
        label = template.model_copy(
            update={
                "decisive_step": last,
                "decisive_agent": t.steps[last].agent,
                "seed_id": t.id,
                "branch_step": last,
                "target_component": None,
                "primary_component": None,
                "attack_chain": [],
                "execution_chain": [],
            }
        )
        out.append(t.model_copy(update={"label": label}))
    return out


def loopback_audits(records: list[Any]) -> dict[str, Any]:
    """Run the auditor method over ``records`` against the loopback auditor judge; record id -> audit."""
    from failforge.attribution._predictions import load_predictions
    from failforge.attribution._run import AttributeConfig, run_attribution
    from failforge.llm import ModelEndpoint
    from failforge.testing.auditor_judge import auditor_judge
    from failforge.testing.model_servers import LoopbackModelServer

    with tempfile.TemporaryDirectory() as tmp, LoopbackModelServer(policy=auditor_judge(records)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="auditor-judge", api_key_env=None)
        summary = run_attribution(
            records,
            AttributeConfig(method="auditor", judge_model="auditor-judge"),
            Path(tmp) / "run",
            endpoint=endpoint,
        )
        if summary.failed:
            raise SystemExit(f"{summary.failed} auditor session(s) failed: see the run's failed.jsonl")
        predictions, _ = load_predictions(Path(tmp) / "run" / "predictions.jsonl")
    return {p.record_id: p.audit for p in predictions}


def file_audits(path: Path) -> dict[str, Any]:
    from failforge.attribution import load_records

    records, problems = load_records(path)
    for problem in problems:
        print(f"skipped {problem}", file=sys.stderr)
    return {r.id: r.audit for r in records}


def measure(name: str, trajectories: list[Any], audits: dict[str, Any] | None, judge: str) -> dict[str, Any]:
    from failforge.attribution._decision_agreement import STATES, compare_decisions
    from failforge.attribution.importers.failforge_gold import from_trajectory
    from failforge.judgement import decisions

    if audits is None:
        audits = loopback_audits([from_trajectory(t) for t in trajectories])
    report = compare_decisions(
        (decisions(t), audits[t.id].decisions if audits.get(t.id) else None) for t in trajectories
    )
    print(f"== {name}: {report.records} trajectories, {report.steps} agent steps; {judge}")
    print(f"both decided {report.both_decided}: agreement {report.agreement}, Cohen's kappa {report.kappa}")
    print(
        f"rules undecided {report.rules_undecided} (auditor said {report.auditor_on_undecided}); auditor missing"
        f" {report.auditor_missing}"
    )
    print("state      rules  auditor  both  specific  auditor|rules")
    for state in STATES:
        s = report.per_state[state]
        print(
            f"{state:<10} {s.rules:>5} {s.auditor:>8} {s.both:>5} {s.specific_agreement!s:>9}"
            f" {s.auditor_given_rules!s:>14}"
        )
    print("confusion (rules -> auditor): " + json.dumps(report.confusion))
    return report.model_dump()


def main() -> None:
    args = arguments().parse_args()
    gold = trajectories(args.gold or BUNDLED, labelled=True)
    audits = file_audits(args.audited) if args.audited else None
    judge = f"audits from {args.audited}" if args.audited else "loopback auditor judge (form-based states)"
    out = {"gold": measure("gold", gold, audits, judge)}
    if not args.no_seeds and not args.audited:
        seeds = trajectories(args.seeds or SEEDS, labelled=False)
        if seeds:
            out["seeds"] = measure(
                "seeds (placeholder labels)", placeholder_labelled(seeds, gold[0].label), None, judge
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"report: {args.json}")


if __name__ == "__main__":
    main()
