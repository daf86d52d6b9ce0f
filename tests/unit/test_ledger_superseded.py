"""An attempt appears in exactly one output file, once: a retried attempt's earlier failed line goes."""

from __future__ import annotations

import json
from pathlib import Path

from failforge.jobs import Ledger, attempt_ids_in


def _lines(path: Path) -> list[str]:
    return [json.loads(line)["attempt_id"] for line in path.read_text().splitlines()] if path.exists() else []


def _ledger(tmp_path: Path, ids: tuple[str, ...]) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.bind("h")
    ledger.plan([(a, "s", 1, "R.1", 0) for a in ids])
    return ledger


def test_a_requeued_failure_leaves_failed_jsonl_before_it_runs_again(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, ("infra", "drift"))
    for attempt, kind in (("infra", "infrastructure"), ("drift", "drift")):
        ledger.mark_running(attempt)
        ledger.finish(attempt, "failed", "boom", kind)
    (tmp_path / "failed.jsonl").write_text(
        "".join(json.dumps({"attempt_id": a, "reasons": ["boom"]}) + "\n" for a in ("infra", "drift"))
    )
    assert ledger.requeue_failed(everything=False, max_tries=3) == 1
    assert _lines(tmp_path / "failed.jsonl") == [
        "drift"
    ]  # the drift stays failed (not retried by default), with its line
    # the retry succeeds: one gold line, and the attempt is nowhere else
    ledger.mark_running("infra")
    (tmp_path / "gold.jsonl").write_text(json.dumps({"attempt_id": "infra"}) + "\n")
    ledger.finish("infra", "done")
    assert ledger.reconcile(tmp_path, max_interruptions=3)["superseded_failed_lines"] == 0
    everywhere = [
        a for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl") for a in attempt_ids_in(tmp_path / name)
    ]
    assert sorted(everywhere) == ["drift", "infra"]
    assert ledger.counts()["done"] == 1 and ledger.counts()["failed"] == 1
    assert ledger.requeue_failed(everything=True, max_tries=3) == 1 and _lines(tmp_path / "failed.jsonl") == []


def test_reconcile_supersedes_the_duplicates_an_older_run_left(tmp_path: Path) -> None:
    """A folder written before this rule: an earlier failed line beside the attempt's gold line, and one
    failed line per try of an attempt that failed twice."""
    ledger = _ledger(tmp_path, ("won", "twice", "once"))
    for attempt in ("won", "twice", "once"):
        ledger.mark_running(attempt)
    ledger.finish("won", "done")
    ledger.finish("twice", "failed", "again", "infrastructure")
    ledger.finish("once", "failed", "boom", "infrastructure")
    (tmp_path / "gold.jsonl").write_text(json.dumps({"attempt_id": "won"}) + "\n")
    lines = [
        {"attempt_id": "won", "try": 1},
        {"attempt_id": "twice", "try": 1},
        {"attempt_id": "once", "try": 1},
        {"attempt_id": "twice", "try": 2},
    ]
    (tmp_path / "failed.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json, kept\n")
    stats = ledger.reconcile(tmp_path, max_interruptions=3)
    assert stats["superseded_failed_lines"] == 2
    kept = (tmp_path / "failed.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in kept[:-1]] == [
        {"attempt_id": "once", "try": 1},
        {"attempt_id": "twice", "try": 2},
    ]
    assert kept[-1] == "not json, kept"
    assert ledger.counts()["done"] == 1 and ledger.counts()["failed"] == 2
