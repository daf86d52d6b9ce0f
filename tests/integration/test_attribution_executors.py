"""An attribution run over a few hundred Who&When records in worker processes, its driver SIGKILLed mid-run,
then resumed: every record predicted once, every judge call recorded once, the predictions those of an
uninterrupted thread run. The judge is a deterministic loopback server (step-by-step asks several
questions per record, so a kill lands between the calls of some sessions).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from _required import require
from failforge.attribution import summarise, write_records
from failforge.attribution._dispatch import WORKERS_LOCK
from failforge.attribution._predictions import load_predictions
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.llm import ModelEndpoint
from failforge.plugins import importers
from failforge.testing.model_servers import LoopbackModelServer

pytestmark = pytest.mark.timeout(600)

#: The public Who&When folder when the environment names one (e.g. ../shared/datasets/who_and_when);
#: else the bundled fixture logs.
WHO_AND_WHEN = Path(os.environ["FAILFORGE_WHO_AND_WHEN"]) if os.environ.get("FAILFORGE_WHO_AND_WHEN") else None
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution" / "who_and_when"


def judge(body: dict[str, Any]) -> tuple[str, None]:
    """A judge whose every answer is a function of the question: 'yes' to about one step in three."""
    text = body["messages"][-1]["content"]
    digest = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    if "most recent step" in text:
        return ("1. Yes.\n2. Reason: it derails." if digest % 3 == 0 else "1. No.\n2. Reason: fine."), None
    return f"Error Mode: {['A.1', 'B.2', 'C.3'][digest % 3]}\nReason: the step says so.", None


@pytest.fixture(scope="module")
def records() -> list[Any]:
    source = WHO_AND_WHEN or FIXTURES
    imported = [
        r
        for folder in ("Algorithm-Generated", "Hand-Crafted")
        if (source / folder).exists()
        for r in summarise(importers.get("whowhen")(source / folder))[0]
    ]
    # a few hundred: the imported logs, then copies under new ids (the records are the same questions)
    copies = [r.model_copy(update={"id": f"{r.id}#copy"}) for r in imported]
    return (imported + copies)[:300]


def _run_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _workers_gone(folder: Path, timeout: float) -> bool:
    fd = os.open(folder / WORKERS_LOCK, os.O_RDWR | os.O_CREAT)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                time.sleep(0.1)
        return False
    finally:
        os.close(fd)


def _reference_run(records: list[Any], server: LoopbackModelServer, tmp_path: Path) -> None:
    """The uninterrupted run in threads (tmp_path/reference) the interrupted ones are compared with."""
    endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
    reference = run_attribution(
        records,
        AttributeConfig(method="step-by-step", judge_model="loopback", concurrency=2),
        tmp_path / "reference",
        endpoint=endpoint,
    )
    assert reference.predicted == len(records) and reference.failed == 0


def _process_command(server: LoopbackModelServer) -> list[str]:
    """``failforge attribute`` of tmp_path/records.jsonl into tmp_path/run in two worker processes."""
    return [
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
        server.base_url,
        "--model",
        "loopback",
        "--api-key-env",
        "FAILFORGE_NO_KEY",
        "--executor",
        "process",
        "--workers",
        "2",
    ]


_ENV = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")


def _start_until_a_third_is_predicted(command: list[str], tmp_path: Path, total: int) -> subprocess.Popen[bytes]:
    """The driver in its own process, returned once a third of the records are predicted (it is still running)."""
    predictions = tmp_path / "run" / "predictions.jsonl"
    driver = subprocess.Popen(command, cwd=tmp_path, env=_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (
        predictions.exists() and predictions.read_text().count("\n") >= total // 3
    ):
        assert driver.poll() is None, driver.stderr.read().decode()[-2000:] if driver.stderr else ""
        time.sleep(0.02)
    return driver


def test_a_killed_process_run_resumes_exactly_once_with_the_predictions_of_an_uninterrupted_run(records, tmp_path):
    assert len(records) >= 200
    write_records(tmp_path / "records.jsonl", records)
    with LoopbackModelServer(policy=judge, latency=0.002) as server:
        _reference_run(records, server, tmp_path)
        command = _process_command(server)
        predictions = tmp_path / "run" / "predictions.jsonl"
        driver = _start_until_a_third_is_predicted(command, tmp_path, len(records))
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        done_at_kill = predictions.read_text().count("\n")
        assert len(records) // 3 <= done_at_kill < len(records)
        # the dead driver's workers saw it go (pidfd watch) and left, releasing their shared lock
        assert _workers_gone(tmp_path / "run", timeout=30)

        resumed = subprocess.run(command, cwd=tmp_path, env=_ENV, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert (
            f"/{len(records)} ·" in resumed.stderr and "ETA" in resumed.stderr
        )  # the progress line (a log: plain lines)

    run = tmp_path / "run"
    got, problems = load_predictions(run / "predictions.jsonl")
    want, _ = load_predictions(tmp_path / "reference" / "predictions.jsonl")
    assert not problems and not (run / "failed.jsonl").exists()
    # exactly once: every record predicted once, the ledger settled, every (session, call) recorded once
    assert Counter(p.record_id for p in got) == Counter(r.id for r in records)
    db = sqlite3.connect(f"file:{run / 'ledger.sqlite'}?mode=ro", uri=True)
    assert dict(db.execute("SELECT state, COUNT(*) FROM attempts GROUP BY state").fetchall()) == {"done": len(records)}
    db.close()
    calls = Counter((c["session"], c["step"]["index"]) for c in _run_lines(run / "calls.jsonl"))
    assert calls and max(calls.values()) == 1
    assert (
        len(calls)
        == sum(p.calls for p in got)
        == sum(p.calls for p in want)
        == len(_run_lines(tmp_path / "reference" / "calls.jsonl"))
    )
    # the same predictions as the uninterrupted run (ids, answers, every reply)
    keep = {"attempt_id", "agent", "step", "mode", "reply", "replies", "problems", "calls"}
    assert {p.record_id: p.model_dump(include=keep) for p in got} == {
        p.record_id: p.model_dump(include=keep) for p in want
    }
    manifest = json.loads((run / "manifest.json").read_text())
    second = manifest["runs"][-1]
    assert second["executor"] == "process" and second["workers"] == 2 and second["done_before"] >= done_at_kill
    assert (
        second["live_calls"] + second["replayed_calls"] == second["calls"]
        and second["predicted"] == len(records) - second["done_before"]
    )
    assert manifest["judge"] == {"model": "loopback", "base_url": server.base_url}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_worker_killed_mid_run_is_replaced_and_its_sessions_record_each_call_once(records, tmp_path):
    """A worker's death breaks its pool: every session in flight there runs again in a new pool. A session
    that had recorded live calls replays them (read again from calls.jsonl), never asks them twice."""
    write_records(tmp_path / "records.jsonl", records)
    with LoopbackModelServer(policy=judge, latency=0.002) as server:
        _reference_run(records, server, tmp_path)
        driver = _start_until_a_third_is_predicted(_process_command(server), tmp_path, len(records))
        # the workers are the forkserver's children (the driver's grandchildren)
        workers = [w for child in _children(driver.pid) for w in _children(child)]
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)
        _, stderr = driver.communicate(timeout=300)
        assert driver.returncode == 0, stderr.decode()[-2000:]
    run = tmp_path / "run"
    got, problems = load_predictions(run / "predictions.jsonl")
    want, _ = load_predictions(tmp_path / "reference" / "predictions.jsonl")
    assert not problems and not (run / "failed.jsonl").exists()
    calls = Counter((c["session"], c["step"]["index"]) for c in _run_lines(run / "calls.jsonl"))
    assert calls and max(calls.values()) == 1
    assert len(calls) == sum(p.calls for p in want) == len(_run_lines(tmp_path / "reference" / "calls.jsonl"))
    keep = {"attempt_id", "agent", "step", "mode", "reply", "replies", "problems", "calls"}
    assert {p.record_id: p.model_dump(include=keep) for p in got} == {
        p.record_id: p.model_dump(include=keep) for p in want
    }


@pytest.mark.slow
def test_ray_tasks_give_the_thread_runs_predictions_and_record_each_call_once(records, tmp_path):
    require("ray")
    few = records[:30]
    with LoopbackModelServer(policy=judge) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
        runs = {
            ex: run_attribution(
                few,
                AttributeConfig(method="step-by-step", judge_model="loopback", concurrency=2, executor=ex),
                tmp_path / ex,
                endpoint=endpoint,
            )
            for ex in ("thread", "ray")
        }
    assert runs["thread"].predicted == runs["ray"].predicted == len(few) and runs["ray"].failed == 0
    keep = {"attempt_id", "agent", "step", "mode", "replies", "calls"}
    got = {
        ex: sorted(
            json.dumps(p.model_dump(include=keep), sort_keys=True)
            for p in load_predictions(tmp_path / ex / "predictions.jsonl")[0]
        )
        for ex in runs
    }
    assert got["thread"] == got["ray"]
    calls = Counter((c["session"], c["step"]["index"]) for c in _run_lines(tmp_path / "ray" / "calls.jsonl"))
    assert max(calls.values()) == 1 and len(calls) == runs["thread"].calls


@pytest.mark.slow
def test_under_the_callers_own_ray_the_idle_workers_do_not_hold_the_folder(records, tmp_path):
    """Ray started by the caller outlives the run, and so do its workers: they hold the workers lock per session
    only, so the folder is free as soon as the run ends (a rerun does not wait for idle workers)."""
    require("ray")
    import fcntl
    import os

    import ray

    from failforge.attribution._dispatch import WORKERS_LOCK

    few = records[:6]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        with LoopbackModelServer(policy=judge) as server:
            endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
            config = AttributeConfig(method="step-by-step", judge_model="loopback", concurrency=2, executor="ray")
            first = run_attribution(few, config, tmp_path / "run", endpoint=endpoint)
            assert first.predicted == len(few) and ray.is_initialized()  # the caller's Ray, still up with its workers
            fd = os.open(tmp_path / "run" / WORKERS_LOCK, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError while any worker holds it
            finally:
                os.close(fd)
            again = run_attribution(few, config, tmp_path / "run", endpoint=endpoint)
            assert again.predicted == 0 and again.done_before == len(few)
    finally:
        ray.shutdown()
