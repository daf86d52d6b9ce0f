"""Re-scoring from a real recording (the embedded judge's calls): no model, no tokens, drift caught."""

from __future__ import annotations

import json
from pathlib import Path

from failforge.attribution import load_records, summarise
from failforge.attribution._predictions import load_predictions
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.plugins import importers

RECORDING = Path(__file__).resolve().parents[2] / "fixtures" / "attribution" / "recording" / "all-at-once"
FIXTURES = RECORDING.parents[1]


def _config(**prompt: object) -> AttributeConfig:
    recorded = json.loads((RECORDING / "manifest.json").read_text())["config"]
    return AttributeConfig(
        method="all-at-once",
        judge_model=recorded["judge_model"],
        max_tokens=recorded["max_tokens"],
        prompt=PromptConfig(**{**recorded["prompt"], **prompt}),
    )


def test_replay_reproduces_the_predictions_at_zero_tokens(tmp_path):
    records, _ = load_records(RECORDING / "records.jsonl")
    summary = run_attribution(records, _config(), tmp_path / "again", recording=RECORDING)
    assert (summary.predicted, summary.failed, summary.live_calls, summary.replayed_calls) == (2, 0, 0, 2)
    assert summary.prompt_tokens == summary.completion_tokens == 0
    original, _ = load_predictions(RECORDING / "predictions.jsonl")
    again, _ = load_predictions(tmp_path / "again" / "predictions.jsonl")
    fields = {"record_id", "agent", "step", "mode", "reply", "replies", "problems", "calls"}
    assert [p.model_dump(include=fields) for p in again] == [p.model_dump(include=fields) for p in original]
    assert not (tmp_path / "again" / "calls.jsonl").exists()  # nothing live, nothing new recorded


def test_a_changed_prompt_is_drift_not_a_new_question(tmp_path):
    records, _ = load_records(RECORDING / "records.jsonl")
    summary = run_attribution(records, _config(budget_chars=2000), tmp_path / "shorter", recording=RECORDING)
    assert (summary.predicted, summary.failed, summary.live_calls) == (0, 2, 0)
    failures = [json.loads(line) for line in (tmp_path / "shorter" / "failed.jsonl").read_text().splitlines()]
    assert {f["error"]["type"] for f in failures} == {"PromptDrift"} and all(f["error"]["diff"] for f in failures)
    # another variant (no gold answer) is another session: the recording has none of its calls
    other = run_attribution(records, _config(with_answer=False), tmp_path / "no-answer", recording=RECORDING)
    failures = [json.loads(line) for line in (tmp_path / "no-answer" / "failed.jsonl").read_text().splitlines()]
    assert (
        other.failed == 2 and other.live_calls == 0 and {f["error"]["type"] for f in failures} == {"RecordingExhausted"}
    )


def test_a_record_missing_from_the_recording_is_never_run_live(tmp_path):
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated" / "3.json"))
    summary = run_attribution(records, _config(), tmp_path / "unrecorded", recording=RECORDING)
    failure = json.loads((tmp_path / "unrecorded" / "failed.jsonl").read_text())
    assert summary.failed == 1 and summary.live_calls == 0 and failure["error"]["type"] == "RecordingExhausted"
