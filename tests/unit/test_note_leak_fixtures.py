"""Regression: the records `failforge demo` kept as gold on the day none of them showed its label.

tests/fixtures/labels/ holds them as written then (five AgentDojo records, one MiniWoB record). Each
must now be rejected, by the note-leak filter or by mode conformance, for the reason written here.
The last test switches those checks off and sees the first record pass every filter again, so these
assertions depend on the checks they name.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.filters import mode_conformance, note_leak
from failforge.gold import FilterContext, run_filters
from failforge.judgement import _checks
from failforge.taxonomy import get_mode
from failforge.trajectory import Trajectory, load_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "labels"
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"

# record id -> (leak checks that must fire, conformance reason that must be given)
EXPECTED = {
    "gold-b6a94873f8f3": (
        ["third_person", "guide_values", "paraphrase"],
        "not a mistake at this task",
    ),  # V.2 copying the prompt's example
    "gold-0cf396fb841d": (["paraphrase"], "unverified"),  # R.4 rewording its note
    "gold-2d4af9221273": ([], "a_t uses no number"),  # R.3 without a number
    "gold-41a8835a601f": ([], "not a mistake at this task"),  # PL.1 off-topic text
    "gold-2628f6909574": (["paraphrase"], "not a mistake at this task"),  # R.2 retelling the note's persona
    "gold-eab60cba5cfb": (["third_person", "paraphrase"], "calls no tool"),  # MiniWoB A.2 with no tool call
}


def _records() -> list[Trajectory]:
    out: list[Trajectory] = []
    for name in ("demo_gold_agentdojo.jsonl", "demo_gold_miniwob.jsonl"):
        good, bad = load_jsonl(FIXTURES / name)
        assert not bad
        out.extend(good)
    return out


def _context(record: Trajectory) -> FilterContext:
    seeds = {s.id: s for s in load_jsonl(BUNDLED)[0]}
    label = record.label
    assert label is not None
    t = label.decisive_step
    # the MiniWoB seed is not bundled: its prefix is the record's by construction, and a_t is on the label
    seed = seeds.get(record.parent_id) or record.model_copy(
        update={"steps": [*record.steps[:t], label.original_step], "label": None}
    )
    return FilterContext(
        seed=seed,
        branch=record,
        step=t,
        mode=get_mode(label.mode_code),
        note=label.steering_note,
        guide_request=label.guide_request,
    )


def test_fixtures_are_the_six_records():
    assert sorted(r.id for r in _records()) == sorted(EXPECTED)


@pytest.mark.parametrize("record", _records(), ids=lambda r: f"{r.id}-{r.label.mode_code}")
def test_fixture_is_rejected_for_the_stated_reason(record):
    ctx = _context(record)
    leaks, conformance_reason = EXPECTED[record.id]
    leak = note_leak.check(ctx)
    for name in leaks:
        assert f"{name}:" in leak.reason, leak.reason
    assert leak.passed is (not leaks)
    conformance = mode_conformance.check(ctx)
    assert not conformance.passed and conformance_reason in conformance.reason, conformance.reason
    verdicts = run_filters(ctx)
    assert not all(v.passed for v in verdicts)


def test_the_v2_record_passes_again_without_the_new_checks(monkeypatch):
    record = next(r for r in _records() if r.id == "gold-b6a94873f8f3")
    ctx = _context(record)
    old_filters = ["evaluator_failure", "note_leak", "gold_exposure", "differs", "well_formed"]
    assert not all(v.passed for v in run_filters(ctx, old_filters))
    for name in list(note_leak.CHECKS):
        if name not in ("meta_phrase", "verbatim"):  # the two checks that existed when it was kept
            monkeypatch.setitem(note_leak.CHECKS, name, lambda scan: None)
    assert all(v.passed for v in run_filters(ctx, old_filters))  # kept as gold, as it was that day
    assert "not a mistake at this task" in mode_conformance.check(ctx).reason
    monkeypatch.setattr(_checks, "on_task", lambda *_: (True, "off"))
    assert "not a mistake at this task" not in mode_conformance.check(ctx).reason
