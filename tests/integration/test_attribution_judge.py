"""Judge protocols against the real embedded model: recorded, replayed at zero tokens, resumed after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from failforge.attribution import summarise, write_records
from failforge.attribution._predictions import load_predictions
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.llm import LOCAL_MODEL_NAME, HttpUpstream, request_hash
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"

pytestmark = pytest.mark.local_model


@pytest.fixture(scope="module")
def short_records():  # type: ignore[no-untyped-def]
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    return sorted(records, key=lambda r: sum(len(s.content) for s in r.steps))[:2]


def test_a_judge_run_is_recorded_and_replays_at_zero_tokens(local_model, short_records, tmp_path):
    upstream = HttpUpstream(local_model.base_url, api_key_env=None, model=LOCAL_MODEL_NAME)
    config = AttributeConfig(
        method="all-at-once", judge_model=LOCAL_MODEL_NAME, max_tokens=64, prompt=PromptConfig(budget_chars=1500)
    )
    live = run_attribution(short_records[:1], config, tmp_path / "live", upstream=upstream)
    upstream.close()
    assert (live.predicted, live.live_calls, live.replayed_calls) == (1, 1, 0) and live.prompt_tokens > 0
    calls = [json.loads(line) for line in (tmp_path / "live" / "calls.jsonl").read_text().splitlines()]
    ref = calls[0]["step"]["model_call"]
    assert len(calls) == 1 and ref["request_hash"] == request_hash(ref["request"]) and ref["response"]["choices"]

    replay = run_attribution(short_records[:1], config, tmp_path / "replay", recording=tmp_path / "live")
    assert (
        replay.predicted,
        replay.live_calls,
        replay.replayed_calls,
        replay.prompt_tokens,
        replay.completion_tokens,
    ) == (1, 0, 1, 0, 0)
    first, _ = load_predictions(tmp_path / "live" / "predictions.jsonl")
    second, _ = load_predictions(tmp_path / "replay" / "predictions.jsonl")
    keep = ("agent", "step", "mode", "reply", "replies", "problems", "calls")
    assert [p.model_dump(include=set(keep)) for p in first] == [p.model_dump(include=set(keep)) for p in second]

    drifted = config.model_copy(update={"prompt": PromptConfig(budget_chars=1000)})
    changed = run_attribution(short_records[:1], drifted, tmp_path / "drift", recording=tmp_path / "live")
    failure = json.loads((tmp_path / "drift" / "failed.jsonl").read_text())
    assert changed.failed == 1 and changed.live_calls == 0 and failure["error"]["type"] == "PromptDrift"

    other = run_attribution(
        short_records[:1],
        config.model_copy(update={"method": "step-by-step"}),
        tmp_path / "other",
        recording=tmp_path / "live",
    )
    assert other.failed == 1 and other.live_calls == 0  # a different protocol asks other questions: never answered live


def test_an_interrupted_session_resumes_from_its_recording(local_model, short_records, tmp_path):
    write_records(tmp_path / "records.jsonl", short_records)
    command = [
        sys.executable,
        "-m",
        "failforge",
        "attribute",
        "records.jsonl",
        "--method",
        "step-by-step",
        "-o",
        "run",
        "--base-url",
        local_model.base_url,
        "--model",
        LOCAL_MODEL_NAME,
        "--api-key-env",
        "FAILFORGE_NO_KEY",
        "--budget-chars",
        "1500",
        "--max-tokens",
        "32",
    ]
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    calls = tmp_path / "run" / "calls.jsonl"
    process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and not (calls.exists() and calls.read_text().count("\n") >= 1):
        assert process.poll() is None, process.stderr.read().decode()[-2000:] if process.stderr else ""
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # a session needs at least two calls: this one is cut mid-way
    process.wait()
    assert not (tmp_path / "run" / "predictions.jsonl").exists()
    recorded_before = calls.read_text().count("\n")
    assert recorded_before >= 1

    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-2000:]
    predictions, _ = load_predictions(tmp_path / "run" / "predictions.jsonl")
    assert sorted(p.record_id for p in predictions) == sorted(r.id for r in short_records)
    per_session: dict[str, int] = {}
    for line in calls.read_text().splitlines():
        session = json.loads(line)["session"]
        per_session[session] = per_session.get(session, 0) + 1
    for p in predictions:
        assert p.calls == per_session[p.attempt_id]  # every call recorded exactly once
    resumed = predictions[0]
    assert (
        resumed.calls - resumed.live_calls == recorded_before and resumed.live_calls == resumed.calls - recorded_before
    )
