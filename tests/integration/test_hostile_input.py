"""What a hostile tester tries: bad input, concurrent runs, outages, signals, tampered seeds, leaked keys.

Each test reproduces a defect the way a user meets it (through the CLI, on real AgentDojo seeds, against
a loopback model server) and checks what failforge does now: a one-line error and a non-zero exit, no
output folder left behind, nothing written twice, nothing lost, no key in any file.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from failforge.errors import SeedIntegrityError
from failforge.replay import replay
from failforge.testing import FaultPlan, LoopbackModelServer
from failforge.trajectory import Trajectory, write_jsonl

CANARY = "sk-canary-0123456789abcdefXYZ"
TASKS = ("banking/user_task_1", "banking/user_task_3", "slack/user_task_0", "slack/user_task_2")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Trajectory]]:
    from failforge.seeds import oracle_seed

    made = [oracle_seed("agentdojo", task) for task in TASKS]
    path = tmp_path_factory.mktemp("seeds") / "seeds.jsonl"
    write_jsonl(path, made)
    return path, made


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONHASHSEED": "0", "COLUMNS": "200", **extra}


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _toml(
    path: Path, seeds: Path, base_url: str, *, output: str = "out", api_key_env: str = "NO_KEY_NEEDED", **extra: object
) -> Path:
    lines = [f'seeds = ["{seeds}"]', f'output = "{output}"', *(f"{k} = {json.dumps(v)}" for k, v in extra.items())]
    lines += [
        "[agent]",
        f'base_url = "{base_url}"',
        'model = "loopback"',
        f'api_key_env = "{api_key_env}"',
        "timeout = 5.0",
        "max_attempts = 2",
    ]
    lines += ["[plan]", "steps_per_seed = 2", "modes_per_step = 2"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout[-500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[-1500:]
    message = " ".join(result.stderr.split())
    for needle in needles:
        assert needle in message, message


# --- bad input -------------------------------------------------------------------------------------


def test_bad_inputs_get_one_line_errors_and_leave_no_output_folder(
    tmp_path: Path, seeds: tuple[Path, list[Trajectory]]
) -> None:
    path, _ = seeds
    cases = [
        (("generate", "--seeds", "missing.jsonl", "-o", "o1"), ["missing.jsonl", "does not exist"]),
        (("generate", "--seeds", str(tmp_path), "-o", "o2"), ["is a directory"]),
        (("generate", "no-such-campaign.toml"), ["no-such-campaign.toml", "does not exist"]),
    ]
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    cases.append((("generate", "binary.toml"), ["binary.toml", "not UTF-8"]))
    (tmp_path / "string.toml").write_text(f'seeds = "{path}"\noutput = "o3"\n')
    cases.append((("generate", "string.toml"), ["string.toml", "field 'seeds'", "expected a list"]))
    (tmp_path / "afile").write_text("x")
    cases.append(
        (
            ("generate", "--seeds", str(path), "-o", "afile", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"),
            ["afile", "is a file"],
        )
    )
    for args, needles in cases:
        _one_line_error(_cli(*args, cwd=tmp_path), *needles)
    assert not any((tmp_path / name).exists() for name in ("o1", "o2", "o3"))


def test_a_garbage_ledger_is_a_one_line_error(tmp_path: Path, seeds: tuple[Path, list[Trajectory]]) -> None:
    with LoopbackModelServer() as server:
        campaign = _toml(tmp_path / "c.toml", seeds[0], server.base_url)
        (tmp_path / "out").mkdir()
        (tmp_path / "out" / "ledger.sqlite").write_bytes(b"not a database" * 200)
        _one_line_error(_cli("generate", str(campaign), cwd=tmp_path), "ledger.sqlite", "is not a failforge ledger")


def test_malformed_lines_lose_nothing_else_and_set_the_exit_code(
    tmp_path: Path, seeds: tuple[Path, list[Trajectory]]
) -> None:
    good = seeds[0].read_bytes().splitlines(keepends=True)
    bad = tmp_path / "mixed.jsonl"
    future = json.loads(good[1])
    future["schema_version"] = "99"
    bad.write_bytes(
        good[0]
        + b'{"id": "x", "broken\xff\xfe": 1}\n'
        + ("[" * 100000 + "]" * 100000).encode()
        + b"\n"
        + json.dumps(future).encode()
        + b"\n"
    )
    result = _cli("replay", "mixed.jsonl", cwd=tmp_path)
    text = " ".join(result.stdout.split()) + " ".join(result.stderr.split())
    assert result.returncode == 1 and "Traceback" not in text
    assert "1/1 seeds replayed identically" in text and "malformed: 3" in text
    assert "mixed.jsonl:2: field '<encoding>'" in text and "mixed.jsonl:3" in text and "nested too deeply" in text
    assert "mixed.jsonl:4: field 'schema_version'" in text and "'99' is not a schema version" in text

    (tmp_path / "empty.jsonl").write_text("")
    empty = _cli("replay", "empty.jsonl", cwd=tmp_path)
    assert empty.returncode == 2 and "no seeds in empty.jsonl" in " ".join(
        empty.stderr.split()
    )  # bad input, as in generate
    _one_line_error(_cli("replay", "nowhere.jsonl", cwd=tmp_path), "nowhere.jsonl: no such file")


def test_one_bad_seed_does_not_abort_replay_or_audit(tmp_path: Path, seeds: tuple[Path, list[Trajectory]]) -> None:
    _, made = seeds
    odd = made[0].model_copy(
        update={"id": "odd-harness", "harness": made[0].harness.model_copy(update={"name": "no.such.harness"})}
    )
    gone = made[1].model_copy(
        update={"id": "odd-env", "environment": made[1].environment.model_copy(update={"name": "nowhere"})}
    )
    write_jsonl(tmp_path / "s.jsonl", [odd, gone, made[2]])
    for command in (("replay", "s.jsonl", "--report", "r.json"), ("audit", "s.jsonl", "--json", "a.json")):
        result = _cli(*command, cwd=tmp_path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-1500:]
        assert "1/3 seeds replayed identically" in " ".join(result.stdout.split())
    rows = {r["trajectory_id"]: r for r in json.loads((tmp_path / "r.json").read_text())}
    assert "unknown harness 'no.such.harness'" in rows["odd-harness"]["infrastructure"]
    assert "unknown environment 'nowhere'" in rows["odd-env"]["infrastructure"]


# --- tampered seeds --------------------------------------------------------------------------------


def _edit(seed: Trajectory, index: int, **update: object) -> Trajectory:
    steps = list(seed.steps)
    steps[index] = steps[index].model_copy(update=update)
    return seed.model_copy(update={"steps": steps})


def test_replay_catches_every_kind_of_edit_to_a_seed(seeds: tuple[Path, list[Trajectory]]) -> None:
    seed = next(s for s in seeds[1] if s.task.task_id == "user_task_3")
    edited_task = seed.model_copy(
        update={"task": seed.task.model_copy(update={"instruction": seed.task.instruction.replace("friend", "frend")})}
    )
    assert edited_task.task != seed.task
    with pytest.raises(SeedIntegrityError, match="task record differs .* instruction") as info:
        replay(edited_task)
    assert info.value.step == 0

    agent = next(s for s in seed.steps if s.kind == "agent" and s.tool_calls)
    with pytest.raises(SeedIntegrityError, match=f"step {agent.index} .*tool_calls") as info:
        replay(
            _edit(
                seed, agent.index, tool_calls=[agent.tool_calls[0].model_copy(update={"arguments": '{"amount": 15.0}'})]
            )
        )
    assert info.value.step == agent.index

    final = seed.steps[-1]
    with pytest.raises(SeedIntegrityError, match=f"step {final.index} .*content"):
        replay(_edit(seed, final.index, content="I could not do it."))
    with pytest.raises(
        SeedIntegrityError, match=f"step {agent.index} .*content"
    ):  # a prefix edit reaches a branch's prefix too
        replay(_edit(seed, agent.index, content="Sure."), until=final.index)

    flipped = seed.model_copy(update={"outcome": seed.outcome.model_copy(update={"success": False})})  # type: ignore[union-attr]
    with pytest.raises(
        SeedIntegrityError, match="evaluator says success=True on replay, but the seed records success=False"
    ):
        replay(flipped)
    assert replay(seed).identical  # the untouched seed still replays


# --- concurrent runs, outages, signals --------------------------------------------------------------


def test_two_runs_on_one_folder_never_write_an_attempt_twice(
    tmp_path: Path, seeds: tuple[Path, list[Trajectory]]
) -> None:
    with LoopbackModelServer(latency=0.02) as server:
        campaign = _toml(tmp_path / "c.toml", seeds[0], server.base_url)
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "failforge", "generate", str(campaign)],
                cwd=tmp_path,
                env=_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        results = [(p.wait(timeout=600), p.stderr.read() if p.stderr else "") for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0, results
    if codes[1] == 2:  # the usual case: the second saw the lock
        assert any("in use by another failforge run" in " ".join(err.split()) for _, err in results)
    ids = [
        json.loads(line).get("attempt_id") or json.loads(line)["provenance"]["attempt_id"]
        for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl")
        if (tmp_path / "out" / name).exists()
        for line in (tmp_path / "out" / name).read_text().splitlines()
    ]
    assert ids and len(ids) == len(set(ids))


def test_an_outage_trips_the_breaker_and_the_next_run_retries_what_failed(
    tmp_path: Path, seeds: tuple[Path, list[Trajectory]]
) -> None:
    """The outage hits the decisiveness check's original arms first (they run before the attempts): the
    attempts of each point whose arm could not run fail with it, as infrastructure, until the breaker trips;
    the rest stay planned. The next run retries exactly those."""
    with LoopbackModelServer(faults=FaultPlan(error_rate=1.0)) as server:
        campaign = _toml(tmp_path / "c.toml", seeds[0], server.base_url, circuit_breaker=3)
        down = _cli("generate", str(campaign), cwd=tmp_path)
        assert down.returncode == 3, down.stderr[-1500:]
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        failed = manifest["result"]["totals"]["failed"]
        assert manifest["status"] == "stopped: circuit breaker" and 3 <= failed < manifest["planned_attempts"]
        assert f"{failed} attempts in a row failed for infrastructure reasons" in " ".join(down.stderr.split())
        assert manifest["result"]["totals"]["unfinished"] == manifest["planned_attempts"] - failed
        rows = [json.loads(line) for line in (tmp_path / "out" / "failed.jsonl").read_text().splitlines()]
        assert len(rows) == failed and all(
            r["stage"] == "decisiveness" and r["error_kind"] == "infrastructure" for r in rows
        )
        server.faults = FaultPlan()  # the endpoint is back
        up = _cli("generate", str(campaign), cwd=tmp_path)
    assert up.returncode == 0, up.stderr[-1500:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    totals = manifest["result"]["totals"]
    assert manifest["result"]["this_run"]["recovery"]["retried"] == failed
    assert (
        totals["failed"] == 0
        and totals["unfinished"] == 0
        and totals["kept"] + totals["rejected"] == manifest["planned_attempts"]
    )


def test_every_attempt_failing_is_a_non_zero_exit(tmp_path: Path, seeds: tuple[Path, list[Trajectory]]) -> None:
    with LoopbackModelServer(faults=FaultPlan(error_rate=1.0)) as server:
        campaign = _toml(tmp_path / "c.toml", seeds[0], server.base_url, circuit_breaker=0)
        result = _cli(
            "generate",
            str(campaign),
            "--max-seeds",
            "1",
            "--steps-per-seed",
            "1",
            "--modes-per-step",
            "1",
            "--guide-kind",
            "model",
            cwd=tmp_path,
        )
    assert result.returncode == 1 and "every attempt of this run failed" in " ".join(result.stderr.split())


def _ledger_finished(path: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return int(
                db.execute("SELECT COUNT(*) FROM attempts WHERE state IN ('done','rejected','failed')").fetchone()[0]
            )
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def test_sigterm_interrupts_cleanly_and_the_same_command_resumes(
    tmp_path: Path, seeds: tuple[Path, list[Trajectory]]
) -> None:
    with LoopbackModelServer(latency=0.2) as server:
        campaign = _toml(tmp_path / "c.toml", seeds[0], server.base_url, concurrency=2)
        proc = subprocess.Popen(
            [sys.executable, "-m", "failforge", "generate", str(campaign)],
            cwd=tmp_path,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 300
        while _ledger_finished(tmp_path / "out" / "ledger.sqlite") < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        err = proc.stderr.read() if proc.stderr else ""
        assert code == 130 and "rerun the same command to resume" in " ".join(err.split()), err[-1500:]
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert manifest["status"] == "interrupted"
        db = sqlite3.connect(tmp_path / "out" / "ledger.sqlite")
        assert db.execute("SELECT COUNT(*) FROM attempts WHERE state='running'").fetchone()[0] == 0
        assert (
            db.execute("SELECT COUNT(*) FROM attempts WHERE state='failed'").fetchone()[0] == 0
        )  # an interruption is no failure
        db.close()
        resumed = _cli("generate", str(campaign), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-1500:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["result"]["totals"]["unfinished"] == 0


def test_no_key_reaches_any_file_a_run_writes(tmp_path: Path, seeds: tuple[Path, list[Trajectory]]) -> None:
    """A canary key in the key variable and in the base URL's userinfo; the server echoes credentials in
    its error bodies (as providers quote a rejected key). Every byte of every output file is scanned."""
    with LoopbackModelServer(faults=FaultPlan(error_rate=0.5, seed=1), echo_credentials=True) as server:
        url = server.base_url.replace("http://", f"http://user:{CANARY}@")
        campaign = _toml(tmp_path / "c.toml", seeds[0], url, api_key_env="FF_CANARY_KEY", circuit_breaker=0)
        result = _cli("generate", str(campaign), cwd=tmp_path, env=_env(FF_CANARY_KEY=CANARY))
    assert result.returncode in (0, 1), result.stderr[-1500:]
    assert CANARY not in result.stdout + result.stderr
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"manifest.json", "ledger.sqlite", "failed.jsonl", "README.md"}
    failed = (tmp_path / "out" / "failed.jsonl").read_text()
    assert "for credentials" in failed  # the echo really happened and was stored (masked)
    for path in written:
        data = path.read_bytes()
        assert CANARY.encode() not in data and b"//user:" not in data, f"{path} holds the key"
