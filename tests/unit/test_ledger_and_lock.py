"""The campaign ledger and the folder lock: exactly-once bookkeeping without running any attempt."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.errors import ConfigError
from failforge.jobs import FolderLock, Ledger, repair_jsonl


def test_repair_cuts_only_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert repair_jsonl(path) == len('{"c": ')
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n'
    assert repair_jsonl(path) == 0


def _ledger(tmp_path: Path, ids: tuple[str, ...] = ("a", "b", "c", "d")) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.bind("h1")
    ledger.plan([(a, "s", 1, "R.1", 0) for a in ids])
    return ledger


def test_ledger_reconciles_with_output_files(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    for attempt in ("a", "b", "c", "d"):
        ledger.mark_running(attempt)
    ledger.finish("c", "done")  # ledger says done, but its line never reached the file
    (tmp_path / "rejected.jsonl").write_text(json.dumps({"attempt_id": "a"}) + "\n" + '{"attempt_id": "b", "torn')
    stats = ledger.reconcile(tmp_path, max_interruptions=3)
    assert (
        stats["settled_from_files"] == 1
        and stats["lost_results"] == 1
        and stats["requeued"] == 2
        and stats["torn_bytes"] > 0
    )
    assert ledger.counts()["rejected"] == 1 and sorted(ledger.pending()) == ["b", "c", "d"]
    with pytest.raises(ConfigError, match="different"):
        ledger.bind("h2")


def test_interrupted_attempts_go_to_the_back_and_are_given_up_only_after_the_budget(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    ledger.mark_running("a")
    ledger.reconcile(tmp_path, max_interruptions=2)
    assert ledger.pending() == ["b", "c", "d", "a"]  # not always the same attempt first after a crash
    ledger.mark_running("a")
    stats = ledger.reconcile(tmp_path, max_interruptions=2)
    assert stats["given_up"] == 1 and [a for a, _ in ledger.given_up()] == ["a"]
    assert ledger.requeue_failed(everything=False, max_tries=5) == 0  # an interruption is not an infrastructure failure
    assert ledger.requeue_failed(everything=True, max_tries=5) == 1 and "a" in ledger.pending()


def test_a_clean_interruption_does_not_count_as_a_try(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, ("a",))
    ledger.mark_running("a")
    assert ledger.release_running() == 1
    tries = ledger.db.execute("SELECT tries, interruptions, state FROM attempts").fetchone()
    assert tries == (0, 0, "planned")


def test_infrastructure_failures_are_retried_within_the_budget_drift_is_not(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, ("infra", "drift"))
    for attempt, kind in (("infra", "infrastructure"), ("drift", "drift")):
        ledger.mark_running(attempt)
        ledger.finish(attempt, "failed", "boom", kind)
    (tmp_path / "failed.jsonl").write_text("".join(json.dumps({"attempt_id": a}) + "\n" for a in ("infra", "drift")))
    ledger.reconcile(tmp_path, max_interruptions=3)
    assert ledger.requeue_failed(everything=False, max_tries=2) == 1 and ledger.pending() == ["infra"]
    # The retried attempt is still planned after a crash before it ran: its old failed line does not settle it.
    ledger.reconcile(tmp_path, max_interruptions=3)
    assert ledger.pending() == ["infra"]
    ledger.mark_running("infra")
    ledger.reconcile(tmp_path, max_interruptions=3)  # cut off while retrying: the earlier failed line is not this try's
    assert ledger.pending() == ["infra"]
    ledger.mark_running("infra")
    ledger.finish("infra", "failed", "boom again", "infrastructure")
    assert ledger.requeue_failed(everything=False, max_tries=2) == 0  # two tries used: budget spent


def test_a_garbage_ledger_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "ledger.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="is not a failforge ledger"):
        Ledger(tmp_path / "ledger.sqlite")


def test_a_second_run_on_a_locked_folder_stops_with_a_clear_message(tmp_path: Path) -> None:
    with FolderLock(tmp_path):
        with pytest.raises(ConfigError, match=r"in use by another failforge run \(pid \d+"):
            with FolderLock(tmp_path):
                pass
    with FolderLock(tmp_path):  # released: usable again
        pass


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    """SIGKILL leaves no stale lock: the kernel drops an flock with its holder."""
    code = (
        "from failforge.jobs import FolderLock; import os, signal; l ="
        f" FolderLock(__import__('pathlib').Path({str(tmp_path)!r})).__enter__(); os.kill(os.getpid(), signal.SIGKILL)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode == -9
    with FolderLock(tmp_path):
        pass
