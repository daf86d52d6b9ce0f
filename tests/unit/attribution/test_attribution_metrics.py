"""Metrics on hand-computed fixtures, perfect predictions, the substring inflation, intervals, bootstrap.

tests/fixtures/attribution/metrics/ holds 7 records (sources toy/a: r1-r3, toy/b: r4-r7; r1 r2 r4 r6
multi-agent) and 6 predictions (r7 has none). Gold (agent, step, mode) and prediction:

    r1 Coder/4/R.3     "coder "/4/R.3          all right
    r2 Planner/2/PL.1  Coder/1/R.3             agent wrong, 1 early, mode wrong
    r3 agent/6/A.2     agent/9/A.2             3 late, mode right (single agent)
    r4 Coder/8/R.3     Coder/1/A.2             7 early, mode wrong (family wrong too)
    r5 agent/3/A.5     agent/12/A.5            step 12 is out of range (10 steps): invalid
    r6 Planner/1/-     "Planner (-> Coder)"/10 9 late; "1" is a substring of "10"
    r7 agent/5/V.1     (no prediction)

By hand (k = 5):
    Agent      multi r1 r2 r4 r6 -> right r1 r4 r6: 3/4 = 75.00, Wilson 95% [30.06, 95.44]
    Step       r1: 1/7 = 14.29;  ±5: r1 r2 r3: 3/7 = 42.86
    MAE        toy/a (0+1+3)/3 = 4/3 weighted 3/7, toy/b (7+9)/2 = 8 weighted 4/7: 36/7 = 5.143
    Signed     (0 - 1 + 3 - 7 + 9) / 5 = 0.8; early r2 r4: 2/5 = 40; late r3 r6: 2/5 = 40
    Mode F1    over r1 r2 r3 r4 r5 r7: R.3 2*1/(2+1+1) = .5, PL.1 0, A.2 2/(2+1) = .667, A.5 1, V.1 0 -> 43.33
    Family F1  Reasoning .5, Planning 0, Action 2*2/(4+1) = .8, Verification 0 -> 32.50
    Joint      r1 only: 14.29
    Substring  "4" in "4", "1" in "10": 2/7 = 28.57, +14.29 pp over the integer rule, 1 record
"""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution import load_records, summarise
from failforge.attribution._metrics import compare, macro_f1, score
from failforge.attribution._predictions import Prediction, load_predictions
from failforge.attribution._stats import wilson
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"


@pytest.fixture(scope="module")
def hand():  # type: ignore[no-untyped-def]
    records, bad = load_records(FIXTURES / "metrics" / "records.jsonl")
    predictions, bad2 = load_predictions(FIXTURES / "metrics" / "predictions.jsonl")
    assert not bad and not bad2
    return records, predictions


def _values(metrics: dict) -> dict:
    return {k: v["value"] for k, v in metrics.items() if isinstance(v, dict)}


def test_hand_computed_overall(hand):
    report = score(*hand, k=5)
    overall = report["overall"]
    assert _values(overall) == {
        "agent": 75.0,
        "step_exact": 14.29,
        "step_within_k": 42.86,
        "mae": 5.143,
        "signed_error": 0.8,
        "early_share": 40.0,
        "late_share": 40.0,
        "mode_macro_f1": 43.33,
        "family_macro_f1": 32.5,
        "joint": 14.29,
    }
    assert overall["agent"]["n"] == 4 and overall["agent"]["ci95"] == (30.06, 95.44)
    assert (overall["n"], overall["predicted"], overall["valid_steps"]) == (7, 6, 5)
    assert report["counts"]["missing"] == 1


def test_hand_computed_per_source_and_macro(hand):
    report = score(*hand, k=5)
    a, b = report["by_source"]["toy/a"], report["by_source"]["toy/b"]
    # toy/a: agent r1 right r2 wrong; step r1; all within 5; MAE 4/3; modes R.3 (1 right, 1 FP) .5*... see module doc
    assert (
        _values(a)["agent"] == 50.0
        and _values(a)["step_exact"] == 33.33
        and _values(a)["step_within_k"] == 100.0
        and _values(a)["mae"] == 1.333
    )
    # toy/b: agents r4 r6 right; no exact step; MAE (7+9)/2
    assert _values(b)["agent"] == 100.0 and _values(b)["step_exact"] == 0.0 and _values(b)["mae"] == 8.0 and b["n"] == 4
    macro = report["macro_source"]
    assert macro["step_exact"]["value"] == round((100 / 3 + 0) / 2, 2) == 16.67
    assert macro["agent"]["value"] == 75.0  # (50 + 100) / 2
    assert set(report["by_modality"]) == {"text", "image"} and set(report["by_topology"]) == {"single", "multi"}


def test_substring_rule_inflation_on_the_hand_file(hand):
    sub = score(*hand, k=5)["upstream_substring"]
    assert sub["step_accuracy_integer"] == 14.29 and sub["step_accuracy_substring"] == 28.57
    assert sub["step_inflation_pp"] == 14.29 and sub["records_counted_only_by_substring"] == 1


def _perfect(records) -> list[Prediction]:  # type: ignore[no-untyped-def]
    return [
        Prediction(
            attempt_id=f"gold::{r.id}",
            record_id=r.id,
            method="gold",
            agent=r.gold.agent,
            step=r.gold.step,
            mode=r.gold.mode,
            step_text=str(r.gold.step),
        )
        for r in records
    ]


@pytest.mark.parametrize(
    "fmt,path", [("whowhen", "who_and_when"), ("whowhen-pro", "whowhen_pro"), ("tracertraj", "tracertraj/sample.jsonl")]
)
def test_perfect_predictions_score_100_everywhere(fmt, path):
    records, _ = summarise(importers.get(fmt)(FIXTURES / path))
    report = score(records, _perfect(records), k=5)
    for group in [report["overall"], *report["by_source"].values(), *report["by_modality"].values()]:
        values = _values(group)
        for key in ("agent", "step_exact", "step_within_k", "joint", "mode_macro_f1", "family_macro_f1"):
            assert values[key] in (100.0, None), (fmt, key, values[key])
        assert values["mae"] == 0.0 and values["signed_error"] == 0.0 and values["early_share"] == 0.0
    assert report["overall"]["step_exact"]["n"] == len(records)


def test_missing_and_invalid_predictions_stay_in_the_denominator(hand):
    records, predictions = hand
    only_one = [p for p in predictions if p.record_id == "r1"]
    overall = score(records, only_one, k=5)["overall"]
    assert overall["step_exact"]["n"] == 7 and overall["step_exact"]["value"] == round(100 / 7, 2)
    assert overall["valid_steps"] == 1


def test_macro_f1_small_cases():
    assert macro_f1([("A.2", "A.2"), ("R.3", "R.3")]) == 100.0
    assert macro_f1([("A.2", None), ("A.2", "A.2")]) == pytest.approx(100 * 2 / 3)
    assert macro_f1([("A.2", "R.3")]) == 0.0
    assert macro_f1([]) is None


def test_wilson_known_values():
    assert wilson(0, 10) == (0.0, 27.75)
    assert wilson(10, 10) == (72.25, 100.0)
    assert wilson(5, 10) == (23.66, 76.34)
    assert wilson(0, 0) is None


def test_paired_bootstrap_separates_a_perfect_method_from_a_weak_one(hand):
    records, predictions = hand
    same = compare(records, predictions, predictions, resamples=300)
    assert same["step_exact"]["observed"] == 0 and same["step_exact"]["p_value"] == 1.0
    better = compare(records, _perfect(records), predictions, resamples=2000, seed=7)
    step = better["step_exact"]
    assert step["observed"] == pytest.approx(100 * 6 / 7, abs=1e-3) and step["low"] > 0 and step["p_value"] < 0.05
    again = compare(records, _perfect(records), predictions, resamples=2000, seed=7)
    assert again == better  # seeded
