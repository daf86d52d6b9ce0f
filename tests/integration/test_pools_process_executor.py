"""The process executor (a pool of worker processes) keeps the ledger's guarantees of the thread pool.

A worker process killed under an attempt breaks Python's process pool and fails every attempt in
flight with it; those attempts run again in a new pool, so none is lost, duplicated or recorded as
failed for a death that was not its own. Ctrl-C reaches the whole process group: the workers leave
it to the driver, which puts the attempts in flight back in the queue (exit 130, nothing failed),
and the same command resumes. Real AgentDojo, replay and filters; the model is a loopback server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from failforge.campaign import CampaignConfig, PlanConfig, ResolvedModels, run_campaign
from failforge.llm import ModelEndpoint
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Trajectory, write_jsonl

pytestmark = pytest.mark.timeout(900)

TASKS = ("banking/user_task_0", "banking/user_task_3", "slack/user_task_0", "slack/user_task_1")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from _required import require

    require("agentdojo")
    from failforge.seeds import oracle_seed

    made: list[Trajectory] = [oracle_seed("agentdojo", task) for task in TASKS]
    path = tmp_path_factory.mktemp("seeds") / "seeds.jsonl"
    write_jsonl(path, [s for s in made if s.outcome and s.outcome.success])
    return path


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                found += [int(x) for x in handle.read().split()]
        except OSError:
            pass
    return found


def _workers() -> list[int]:
    """This process's pool workers: the children of its forkserver (the one child that has children)."""
    return [worker for child in _children(os.getpid()) for worker in _children(child)]


def _finished(ledger: Path) -> dict[str, str]:
    if not ledger.exists():
        return {}
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=5)
        try:
            return dict(db.execute("SELECT attempt_id, state FROM attempts").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def _group(pgid: int) -> list[str]:
    """Live (not zombie) processes of process group ``pgid``, as "pid command"."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    command = handle.read().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry} {command[:120]}")
        except (OSError, IndexError, ValueError):
            pass
    return found


def _left_in_group(pgid: int, patience_s: float = 60.0) -> list[str]:
    """The group's processes still alive once they have had ``patience_s`` to end (none, when all is well)."""
    deadline = time.monotonic() + patience_s
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _lines(out: Path) -> dict[str, str]:
    """attempt id -> the file its one line is in (asserting it is in exactly one)."""
    where: dict[str, str] = {}
    for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl"):
        path = out / name
        for line in path.read_text().splitlines() if path.exists() else []:
            record = json.loads(line)
            attempt = record.get("attempt_id") or record["provenance"]["attempt_id"]
            assert attempt not in where, f"{attempt} written twice"
            where[attempt] = name
    return where


def test_a_worker_killed_under_an_attempt_loses_and_fails_nothing(tmp_path: Path, seeds: Path) -> None:
    with LoopbackModelServer(latency=0.3) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=30)
        resolved = ResolvedModels(agent=endpoint, guide=endpoint)
        plan = PlanConfig(steps_per_seed=2, modes_per_step=2)
        local = CampaignConfig(
            seeds=[str(seeds)], output=str(tmp_path / "local"), executor="local", concurrency=2, plan=plan
        )
        run_campaign(local, resolved)
        killed: list[int] = []

        def kill_one_worker_mid_run() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                done = [
                    s
                    for s in _finished(tmp_path / "process" / "ledger.sqlite").values()
                    if s in ("done", "rejected", "failed")
                ]
                running = [s for s in _finished(tmp_path / "process" / "ledger.sqlite").values() if s == "running"]
                workers = _workers()
                if len(done) >= 2 and running and workers:
                    os.kill(workers[0], signal.SIGKILL)
                    killed.append(workers[0])
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_one_worker_mid_run, daemon=True)
        killer.start()
        processes = CampaignConfig(
            seeds=[str(seeds)], output=str(tmp_path / "process"), executor="process", concurrency=2, plan=plan
        )
        summary = run_campaign(processes, resolved)
        killer.join(timeout=10)
    assert killed, "no worker was killed: the test did not exercise a death"
    assert summary.failed == 0
    by_local, by_process = _lines(tmp_path / "local"), _lines(tmp_path / "process")
    assert by_process == by_local and len(by_process) == summary.planned
    assert set(_finished(tmp_path / "process" / "ledger.sqlite").values()) <= {"done", "rejected"}


def _as_a_foreground_job(command: list[str]) -> list[str]:
    """The command with SIGINT at its default, as a terminal's foreground job has it. A process inherits an
    ignored SIGINT, and Python then installs no KeyboardInterrupt handler: pytest started as a background job
    of a non-interactive shell (`bash .ci/run &`) ignores SIGINT, and so would the campaign, which then runs
    to the end under the test's Ctrl-C and exits 0. A shell resets SIGINT for the jobs it runs in the
    foreground; this does the same before exec."""
    reset = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    return [sys.executable, "-c", reset, *command]


def test_ctrl_c_to_the_process_group_interrupts_cleanly_and_the_same_command_resumes(
    tmp_path: Path, seeds: Path
) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0", "COLUMNS": "200"}
    with LoopbackModelServer(latency=0.3) as server:
        campaign = tmp_path / "c.toml"
        campaign.write_text(
            f'seeds = ["{seeds}"]\noutput = "out"\nexecutor = "process"\nconcurrency = 2\n[agent]\nbase_url ='
            f' "{server.base_url}"\nmodel = "loopback"\napi_key_env = "NO_KEY_NEEDED"\ntimeout ='
            " 30.0\n[plan]\nsteps_per_seed = 2\nmodes_per_step = 2\n"
        )
        command = [sys.executable, "-m", "failforge", "generate", str(campaign)]
        proc = subprocess.Popen(
            _as_a_foreground_job(command),
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        ledger = tmp_path / "out" / "ledger.sqlite"
        deadline = time.monotonic() + 300
        # mid-run: two settled, one running and one still queued, so the driver is inside the executor's loop
        # (with nothing queued the last attempt may finish, and the run exit 0, before the signal lands)
        while (
            sum(s in ("done", "rejected", "failed") for s in _finished(ledger).values()) < 2
            or "running" not in _finished(ledger).values()
            or "planned" not in _finished(ledger).values()
        ):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the driver and every worker get it
        code = proc.wait(timeout=300)
        # The driver leaves at once; its worker processes (which ignore Ctrl-C) must not outlive it: an
        # orphaned worker waits for work forever and holds this test's stderr pipe open.
        left = _left_in_group(proc.pid)
        for line in left:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        assert not left, f"processes of the interrupted campaign still running: {left}"
        err = proc.stderr.read() if proc.stderr else ""
        assert code == 130, err[-2000:]
        states = _finished(ledger)
        assert "running" not in states.values() and "failed" not in states.values(), states
        assert not (tmp_path / "out" / "failed.jsonl").exists() or not (tmp_path / "out" / "failed.jsonl").read_text()
        resumed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (
        manifest["status"] == "finished"
        and manifest["result"]["totals"]["unfinished"] == 0
        and manifest["result"]["totals"]["failed"] == 0
    )
    assert len(_lines(tmp_path / "out")) == manifest["planned_attempts"]
