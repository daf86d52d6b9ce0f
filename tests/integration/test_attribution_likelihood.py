"""Likelihood baselines on the real embedded model: the KV-cache reuse gives exactly the direct scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._likelihood import TokenScorer
from failforge.attribution._predictions import load_predictions
from failforge.attribution._run import AttributeConfig, LikelihoodConfig, run_attribution
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def short_records():  # type: ignore[no-untyped-def]
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    return sorted(records, key=lambda r: sum(len(s.content) for s in r.steps))[:2]


@pytest.fixture(scope="module")
def scorer():  # type: ignore[no-untyped-def]
    s = TokenScorer(n_ctx=1024, max_step_tokens=16, max_target_tokens=8)
    yield s
    s.close()


def _direct(
    scorer: TokenScorer,
    header: list[int],
    bodies: list[list[int]],
    target: list[int],
    skip: int | None = None,
    upto: int | None = None,
) -> float:
    tokens = list(header)
    for i, body in enumerate(bodies[:upto] if upto is not None else bodies):
        if i != skip:
            tokens += body
    scorer._eval(0, tokens)
    return scorer.target_logprob(len(tokens), target)


def test_incremental_and_leave_one_out_match_a_from_scratch_evaluation(scorer, short_records):
    record = short_records[0]
    header, bodies, candidates, target = scorer.layout(record)
    assert candidates == [i for i in record.candidate_steps() if i != len(record.steps) - 1] and len(bodies) >= 3
    inc_steps, inc = scorer.incremental(record)
    loo_steps, loo = scorer.leave_one_out(record)
    assert inc_steps == loo_steps == candidates
    for i in (0, len(bodies) // 2, len(bodies) - 1):
        expected_inc = _direct(scorer, header, bodies, target, upto=i + 1) - _direct(
            scorer, header, bodies, target, upto=i
        )
        assert inc[i] == pytest.approx(expected_inc, abs=1e-3)
        full = _direct(scorer, header, bodies, target)
        assert loo[i] == pytest.approx((full - _direct(scorer, header, bodies, target, skip=i)) / len(target), abs=1e-4)


def test_likelihood_methods_predict_the_argmax_step(short_records, tmp_path):
    config = AttributeConfig(
        method="incremental", likelihood=LikelihoodConfig(n_ctx=1024, max_step_tokens=16, max_target_tokens=8)
    )
    summary = run_attribution(short_records, config, tmp_path / "inc")
    assert summary.predicted == 2 and summary.live_calls == 0
    predictions, _ = load_predictions(tmp_path / "inc" / "predictions.jsonl")
    for record, prediction in zip(short_records, predictions, strict=False):
        scores = prediction.step_scores
        assert len(scores) == len(record.steps) and scores[-1] is None
        best = max((s, -i) for i, s in enumerate(scores) if s is not None)
        assert prediction.step == -best[1] and prediction.agent == record.author(prediction.step)
