"""Component-level likelihood baselines on the real embedded model: candidates are the components before the target."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._component_metrics import component_report
from failforge.attribution._components import ComponentLabel, check_label
from failforge.attribution._likelihood import TokenScorer, target_and_candidates
from failforge.attribution._predictions import load_predictions
from failforge.attribution._run import AttributeConfig, LikelihoodConfig, run_attribution
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def record():  # type: ignore[no-untyped-def]
    records, _ = summarise(
        importers.get("trajectory-attribution")(
            FIXTURES / "trajectory_attribution" / "data" / "cases" / "agent3sigma_canary" / "safety_refusal"
        )
    )
    return records[0]  # C0 user, C1 injected read (primary), C2 refusal (target)


def test_the_target_is_the_target_component_and_nothing_after_it_is_scored(record):
    candidates, target = target_and_candidates(record)
    assert (candidates, target) == ([0, 1], 2)


def test_incremental_and_loo_rank_the_candidates_and_score_reads_the_ranking(record, tmp_path):
    scorer = TokenScorer(n_ctx=1024, max_step_tokens=32, max_target_tokens=16)
    try:
        header, bodies, candidates, target = scorer.layout(record)
        assert candidates == [0, 1] and len(bodies) == 2
        assert target == scorer.tokenize(f"{record.steps[2].agent}: {' '.join(record.steps[2].content.split())}\n")[:16]
    finally:
        scorer.close()
    for method in ("incremental", "leave-one-out"):
        config = AttributeConfig(
            method=method, likelihood=LikelihoodConfig(n_ctx=1024, max_step_tokens=32, max_target_tokens=16)
        )
        summary = run_attribution([record], config, tmp_path / method)
        assert summary.predicted == 1 and summary.failed == 0
        predictions, bad = load_predictions(tmp_path / method / "predictions.jsonl")
        assert not bad
        p = predictions[0]
        assert sorted(p.ranking or []) == ["C0", "C1"] and p.step_scores is not None and p.step_scores[2] is None
        scores = {record.steps[i].component: p.step_scores[i] for i in (0, 1)}
        assert p.ranking == sorted(scores, key=lambda c: (-scores[c], c))  # type: ignore[operator]
        report = component_report([record], predictions)
        assert report is not None and report["overall"]["mrr"] == (1.0 if p.ranking[0] == "C1" else 0.5)  # type: ignore[index]
        # The chains: the other candidate joins when its score is positive and at least half the primary's,
        # before the primary (attack) or after it (execution); they pass the importer's chain checker.
        primary, other = p.ranking  # type: ignore[misc]
        joins = scores[primary] > 0 and scores[other] > 0 and scores[other] >= 0.5 * scores[primary]  # type: ignore[operator]
        order = record.component_order()
        before = [other] if joins and order.index(other) < order.index(primary) else []
        assert (p.attack_chain, p.execution_chain, p.chain_threshold) == (
            before,
            [other] if joins and not before else [],
            0.5,
        )
        check_label(
            record.component_order(),
            ComponentLabel(
                target_type=record.components.target_type,
                target="C2",
                primary=primary,
                attack_chain=p.attack_chain,
                execution_chain=p.execution_chain,
            ),
        )
        print(method, {c: round(v, 4) for c, v in scores.items()}, p.ranking, p.attack_chain, p.execution_chain)  # type: ignore[union-attr]
