"""Fixed subsets (`failforge subset`), their manifest checks, LongRCA-style fidelity, and the role prior.

The 7 metric fixture records (toy/a: r1-r3, toy/b: r4-r7; see test_attribution_metrics.py for the gold
and the "hand" predictions). Two per source with seed 0 draws r1 r2 (toy/a) and r5 r7 (toy/b): pinned,
because a fixed subset must redraw the same members on every machine and Python version.

Fidelity of "hand" by hand, macro over sources (a source with no value for a metric is left out):
    full   agent:  toy/a multi r1 r2 -> r1 right 50; toy/b multi r4 r6 -> both right 100  => 75
           exact:  toy/a r1 1/3 = 33.33; toy/b 0/4 = 0                                   => 16.67
           ±5:     toy/a r1 r2 r3 3/3 = 100; toy/b 0                                     => 50
    subset agent:  toy/a r1 right, r2 wrong 50; toy/b r5 r7 single-agent (no value)      => 50
           exact:  toy/a r1 1/2 = 50; toy/b 0                                            => 25
           ±5:     toy/a 2/2 = 100; toy/b 0                                              => 50
    |dev|  25, 8.33, 0 -> mean 11.11, max 25.
A perfect method scores 100 everywhere on both, so its deviation is 0; the ranking (perfect above
"hand" on Step exact) is the same on both: Kendall tau 1.0. Over the two methods: (25 + 8.33) / 6 = 5.555
(rounded to 3 places), max 25.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution import FailureStep, Gold, LabelledFailure, Origin, TaskInfo, load_records
from failforge.attribution._baselines import RolePrior
from failforge.attribution._methods import DatasetFacts, MethodContext
from failforge.attribution._predictions import Prediction, load_predictions
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._subset import (
    SubsetMismatch,
    check_subset,
    draw_subset,
    fidelity,
    make_manifest,
    record_hash,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution" / "metrics"


@pytest.fixture()
def records() -> list[LabelledFailure]:
    return load_records(FIXTURES / "records.jsonl")[0]


def test_draw_is_pinned_stratified_and_ignores_order(records: list[LabelledFailure]) -> None:
    manifest = make_manifest(records, 2, 0)
    assert [(m.id, m.source) for m in manifest.members] == [
        ("r1", "toy/a"),
        ("r2", "toy/a"),
        ("r5", "toy/b"),
        ("r7", "toy/b"),
    ]
    assert {s: (v.population, v.drawn) for s, v in manifest.strata.items()} == {"toy/a": (3, 2), "toy/b": (4, 2)}
    assert [m.id for m in make_manifest(list(reversed(records)), 2, 0).members] == [m.id for m in manifest.members]
    assert draw_subset({"s": ["b", "a"]}, 5, 0) == {"s": ["a", "b"]}  # a small source is taken whole


def test_the_draw_cannot_see_labels(records: list[LabelledFailure]) -> None:
    relabelled = [
        r.model_copy(update={"gold": r.gold.model_copy(update={"step": 0, "agent": "someone"})}) for r in records
    ]
    assert [m.id for m in make_manifest(relabelled, 2, 0).members] == [
        m.id for m in make_manifest(records, 2, 0).members
    ]


def test_manifest_checks_refuse_what_does_not_reproduce(records: list[LabelledFailure]) -> None:
    manifest = make_manifest(records, 2, 0)
    assert [r.id for r in check_subset(manifest, records)] == ["r1", "r2", "r5", "r7"]
    with pytest.raises(SubsetMismatch, match="'r5' .* is not in the records"):
        check_subset(manifest, [r for r in records if r.id != "r5"])
    edited = [
        r.model_copy(update={"gold": r.gold.model_copy(update={"step": 1})}) if r.id == "r1" else r for r in records
    ]
    with pytest.raises(SubsetMismatch, match="'r1' changed since the draw"):
        check_subset(manifest, edited)
    edited_outside = [
        r.model_copy(update={"gold": r.gold.model_copy(update={"step": 1})}) if r.id == "r3" else r for r in records
    ]
    with pytest.raises(SubsetMismatch, match="drawn from another dataset"):
        check_subset(manifest, edited_outside)
    by_id = {r.id: r for r in records}
    picked = manifest.model_copy(
        update={
            "members": [
                *manifest.members[:3],
                manifest.members[3].model_copy(update={"id": "r4", "sha256": record_hash(by_id["r4"])}),
            ]
        }
    )
    with pytest.raises(SubsetMismatch, match="does not redraw these members"):
        check_subset(picked, records)


def test_fidelity_matches_the_hand_computation(records: list[LabelledFailure]) -> None:
    hand = load_predictions(FIXTURES / "predictions.jsonl")[0]
    perfect = [
        Prediction(
            attempt_id=f"p::{r.id}",
            record_id=r.id,
            method="perfect",
            agent=r.gold.agent,
            step=r.gold.step,
            mode=r.gold.mode,
        )
        for r in records
    ]
    report = fidelity(records, make_manifest(records, 2, 0), {"hand": hand, "perfect": perfect})
    rows = {row["method"]: row for row in report["methods"]}  # type: ignore[attr-defined]
    assert rows["hand"]["full"] == {"agent": 75.0, "step_exact": 16.67, "step_within_k": 50.0}
    assert rows["hand"]["subset"] == {"agent": 50.0, "step_exact": 25.0, "step_within_k": 50.0}
    assert rows["hand"]["deviation_pp"] == {"agent": 25.0, "step_exact": 8.33, "step_within_k": 0.0}
    assert rows["perfect"]["deviation_pp"] == {"agent": 0.0, "step_exact": 0.0, "step_within_k": 0.0}
    assert (report["mean_deviation_pp"], report["max_deviation_pp"], report["kendall_tau_step_exact"]) == (
        5.555,
        25.0,
        1.0,
    )
    assert (report["subset_size"], report["full_size"]) == (4, 7)


def _team_record(rid: str, worker: str, gold: str) -> LabelledFailure:
    steps = [
        FailureStep(index=0, kind="user", agent="user", content="task"),
        FailureStep(index=1, kind="agent", agent="lead", content="delegate"),
        FailureStep(index=2, kind="agent", agent=worker, content="work"),
        FailureStep(index=3, kind="agent", agent="lead", content="answer"),
    ]
    return LabelledFailure(
        id=rid,
        source="team",
        framework="t",
        topology="multi",
        agents=["lead", worker],
        roles={"lead": "orchestrator", worker: "worker"},
        task=TaskInfo(question="q"),
        steps=steps,
        gold=Gold(agent=gold, step=2 if gold == worker else 1, step_label="x"),
        origin=Origin(format="t", path="t", step_convention="t"),
    )


def test_role_prior_predicts_by_role_where_names_differ() -> None:
    team = [_team_record("a", "w1", "w1"), _team_record("b", "w2", "w2"), _team_record("c", "w3", "lead")]
    facts = DatasetFacts.of(team)
    assert (
        facts.majority_role == {"team": "worker"} and facts.majority_agent["team"] == "lead"
    )  # the names w1 w2 w3 split the vote
    got = [RolePrior().predict(MethodContext(record=r, prompt=PromptConfig(), seed=0, dataset=facts)) for r in team]
    assert [(o.agent, o.step) for o in got] == [("w1", 2), ("w2", 2), ("w3", 2)]
