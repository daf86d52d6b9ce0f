"""The dataset card's label-quality sections: guide kinds, conformance per mode, the realism probe."""

from __future__ import annotations

import json

from test_report_html import BUNDLED, make_dataset

from failforge.campaign import CampaignConfig
from failforge.campaign._card import write_card
from failforge.llm import ModelEndpoint


def test_card_reports_conformance_per_mode_and_realism_with_counts(tmp_path):
    out = make_dataset(tmp_path / "ds")
    config = CampaignConfig(seeds=[str(BUNDLED)], output=str(out), guide_kind="auto")
    manifest = json.loads((out / "manifest.json").read_text())
    card = write_card(out, config, manifest).read_text()
    assert "## Mode conformance" in card and "Kept records conformant: 0 of 5." in card
    assert (
        "| R.3 | 1 | 0 | 1 | 0 | 1 | 0 | 1 | 0 |" in card
    )  # one R.3 candidate, decided by rule: not exhibited, kept then
    assert "| R.4 | 1 | 0 | 0 | 1 | 0 | 0 | 1 | 0 |" in card  # one R.4 candidate, unverified
    assert "semantic modes have no judge here" in card and "are not kept as gold" in card
    assert "Guide kind `auto`" in card and "model 6, rules 1" in card
    assert "## Realism probe" in card
    assert "- Gold records: AUC 1.00 over 10 steps (5 injected, 5 natural, 4 seeds)" in card


def test_card_names_the_judge_when_one_is_enabled(tmp_path):
    out = make_dataset(tmp_path / "ds")
    judge = ModelEndpoint(base_url="http://127.0.0.1:9/v1", model="judge-xl", api_key_env=None)
    config = CampaignConfig(
        seeds=[str(BUNDLED)],
        output=str(out),
        filters={"conformance": {"judge": True, "judge_model": judge.model_dump()}},
    )
    card = write_card(out, config, json.loads((out / "manifest.json").read_text())).read_text()
    assert "semantic modes by a judge (judge-xl)" in card
