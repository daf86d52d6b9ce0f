"""The attribution runner: run folders, the ledger, resuming after a torn write, refusing a mixed folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._predictions import load_predictions
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.errors import ConfigError
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    return records[:20]


def test_a_baseline_run_writes_one_prediction_per_record(records, tmp_path):
    summary = run_attribution(records, AttributeConfig(method="first-agent-step"), tmp_path / "run")
    predictions, bad = load_predictions(tmp_path / "run" / "predictions.jsonl")
    assert not bad and summary.predicted == 20 and summary.failed == 0
    assert [p.record_id for p in predictions] == [r.id for r in records]
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["method"] == "first-agent-step" and manifest["runs"][0]["predicted"] == 20
    again = run_attribution(records, AttributeConfig(method="first-agent-step"), tmp_path / "run")
    assert again.predicted == 0 and again.done_before == 20


def test_a_torn_last_line_is_cut_and_that_record_redone_once(records, tmp_path):
    run_attribution(records, AttributeConfig(method="random", seed=3), tmp_path / "run")
    path = tmp_path / "run" / "predictions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:12]) + lines[12][: len(lines[12]) // 2])  # a kill in the middle of a write
    summary = run_attribution(records, AttributeConfig(method="random", seed=3), tmp_path / "run")
    assert summary.predicted == 8 and summary.reconcile["torn_bytes"] > 0 and summary.reconcile["lost_results"] == 8
    predictions, bad = load_predictions(path)
    assert not bad and sorted(p.record_id for p in predictions) == sorted(r.id for r in records)
    assert [p.model_dump() for p in predictions[:12]] == [json.loads(line) for line in lines[:12]]


def test_a_folder_holds_one_run(records, tmp_path):
    run_attribution(records, AttributeConfig(method="random", seed=1), tmp_path / "run")
    with pytest.raises(ConfigError, match="different attribution run"):
        run_attribution(records, AttributeConfig(method="random", seed=2), tmp_path / "run")
    with pytest.raises(ConfigError, match="other records"):
        run_attribution(records[:5], AttributeConfig(method="random", seed=1), tmp_path / "run")


def test_a_judge_method_needs_a_judge_or_a_recording(records, tmp_path):
    with pytest.raises(ConfigError, match="needs a judge model"):
        run_attribution(records, AttributeConfig(method="all-at-once"), tmp_path / "run")


def test_failed_sessions_can_be_retried(records, tmp_path):
    import sqlite3

    run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run")
    predictions = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "run" / "predictions.jsonl").write_text("".join(predictions[:-2]))
    failed = [json.loads(p) for p in predictions[-2:]]
    (tmp_path / "run" / "failed.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "attempt_id": f["attempt_id"],
                    "record_id": f["record_id"],
                    "method": "last-step",
                    "error": {"type": "ModelUnavailable", "message": "timed out"},
                }
            )
            + "\n"
            for f in failed
        )
    )
    with sqlite3.connect(tmp_path / "run" / "ledger.sqlite") as db:
        db.executemany("UPDATE attempts SET state='failed' WHERE attempt_id=?", [(f["attempt_id"],) for f in failed])
    assert (
        run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run").predicted == 0
    )  # failures stay failed ...
    again = run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run", retry_failed=True)
    assert again.predicted == 2 and (tmp_path / "run" / "failed.jsonl").read_text() == ""  # ... unless retried
    assert len((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()) == 20


def test_a_session_interrupted_twice_is_given_up_with_a_line_and_stays_failed(records, tmp_path):
    """A session cut off while running, twice: failed.jsonl names it with the reason, and the next run leaves
    it failed."""
    import sqlite3

    run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run")
    path = tmp_path / "run" / "predictions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))  # its line never written: the process died while the session ran
    cut = json.loads(lines[-1])["attempt_id"]
    with sqlite3.connect(tmp_path / "run" / "ledger.sqlite") as db:
        db.execute("UPDATE attempts SET state='running', tries=2 WHERE attempt_id=?", (cut,))
    summary = run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run")
    assert summary.reconcile["given_up"] == 1 and summary.predicted == 0
    [failure] = [json.loads(line) for line in (tmp_path / "run" / "failed.jsonl").read_text().splitlines()]
    assert (
        failure["attempt_id"] == cut
        and failure["record_id"] == records[-1].id
        and "interrupted 2 times" in failure["error"]["message"]
    )
    again = run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run")
    assert (
        again.predicted == 0 and again.reconcile["lost_results"] == 0
    )  # failed, with its line: not requeued behind the user's back
    retried = run_attribution(records, AttributeConfig(method="last-step"), tmp_path / "run", retry_failed=True)
    assert retried.predicted == 1 and len(path.read_text().splitlines()) == 20


def test_a_model_file_is_named_by_size_and_sha256(tmp_path):
    from failforge.attribution._run import file_identity

    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"abc")
    assert file_identity(weights) == {
        "file": "model.gguf",
        "bytes": 3,
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    }
