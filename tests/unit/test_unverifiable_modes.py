"""A campaign that plans modes nothing can verify is told so before it spends a model call on them."""

from __future__ import annotations

from failforge.campaign import CampaignConfig
from failforge.cli._generate import _unverifiable_modes
from failforge.judgement import STRUCTURAL_MODES


def _config(**fields: object) -> CampaignConfig:
    return CampaignConfig.model_validate({"seeds": ["s.jsonl"], "output": "out", **fields})


def test_semantic_modes_without_a_judge_are_named():
    named = _unverifiable_modes(_config())
    assert "PL.1" in named and "C.2" in named and not set(named) & set(STRUCTURAL_MODES)
    assert _unverifiable_modes(_config(plan={"modes": ["A.2", "R.1"]})) == ["R.1"]


def test_nothing_is_named_when_something_can_decide_or_nothing_asks():
    assert _unverifiable_modes(_config(plan={"modes": list(STRUCTURAL_MODES)})) == []
    assert _unverifiable_modes(_config(filters={"conformance": {"judge": True}})) == []
    assert _unverifiable_modes(_config(filters={"conformance": {"keep_unverified": True}})) == []
    without = [f for f in _config().filters.enabled if f != "mode_conformance"]
    assert _unverifiable_modes(_config(filters={"enabled": without})) == []
