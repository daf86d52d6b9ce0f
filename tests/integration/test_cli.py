import json
import os
import subprocess
import sys

import pytest

from _required import require
from failforge.trajectory import Trajectory, load_jsonl


def _cli(*args, cwd):
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_taxonomy_prints_all_18_codes(tmp_path):
    result = _cli("taxonomy", cwd=tmp_path)
    assert result.returncode == 0
    for code in (
        "P.1",
        "P.2",
        "R.1",
        "R.2",
        "R.3",
        "R.4",
        "PL.1",
        "PL.3",
        "A.2",
        "A.3",
        "A.4",
        "A.5",
        "A.6",
        "V.1",
        "V.2",
        "C.1",
        "C.2",
        "C.3",
    ):
        assert code in result.stdout


def test_seeds_then_replay_then_tamper(tmp_path):
    result = _cli(
        "seeds",
        "agentdojo",
        "--task",
        "banking/user_task_0",
        "--task",
        "slack/user_task_2",
        "-o",
        "s.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    seeds, errors = load_jsonl(tmp_path / "s.jsonl")
    assert not errors and [s.task.task_id for s in seeds] == ["user_task_0", "user_task_2"]
    assert all(s.environment.config["python_hash_seed"] == "0" for s in seeds)  # the CLI pins it
    ok = _cli("replay", "s.jsonl", "--report", "r.json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2/2 seeds replayed identically" in ok.stdout.replace("\n", " ")

    bad = Trajectory.model_validate_json(seeds[1].model_dump_json())
    target = next(s.index for s in bad.steps if s.kind == "tool")
    bad.steps[target].content = "something else"
    lines = [seeds[0].model_dump_json(), "{broken", bad.model_dump_json()]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    drift = _cli("replay", "t.jsonl", "--report", "r2.json", cwd=tmp_path)
    assert drift.returncode == 1
    assert "malformed" in drift.stderr and "t.jsonl:2" in drift.stderr
    report = json.loads((tmp_path / "r2.json").read_text())
    assert report[0]["identical"] and not report[1]["identical"]
    assert report[1]["drift"]["type"] == "EnvStateDrift" and report[1]["drift"]["step"] == target


def test_bad_flag_gives_a_clear_error(tmp_path):
    result = _cli("export", "nothing.jsonl", "--format", "csv", cwd=tmp_path)
    assert result.returncode != 0 and "whowhen-pro" in (result.stderr + result.stdout)


@pytest.mark.local_model
def test_record_keeps_only_evaluator_successes(tmp_path):
    result = _cli(
        "record",
        "agentdojo",
        "--suite",
        "banking",
        "--task",
        "user_task_3",
        "-o",
        "rec.jsonl",
        "--keep-failures",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    kept = load_jsonl(tmp_path / "rec.jsonl")[0] if (tmp_path / "rec.jsonl").exists() else []
    failures = load_jsonl(tmp_path / "rec.failures.jsonl")[0] if (tmp_path / "rec.failures.jsonl").exists() else []
    assert len(kept) + len(failures) == 1
    assert all(t.outcome.success for t in kept) and not any(t.outcome.success for t in failures)
    run = (kept or failures)[0]
    assert run.model.name == "smollm2-135m-instruct" and not run.oracle
    assert all(s.model_call.source == "model" for s in run.agent_steps())


def test_seeds_miniwob_then_replay(tmp_path):
    require("chromium")
    result = _cli(
        "seeds",
        "miniwob",
        "--task",
        "click-button",
        "--task",
        "enter-text",
        "--cache-dir",
        "cache",
        "-o",
        "m.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seeds, errors = load_jsonl(tmp_path / "m.jsonl")
    assert (
        not errors
        and [s.task.task_id for s in seeds] == ["click-button", "enter-text"]
        and all(s.oracle for s in seeds)
    )
    ok = _cli("replay", "m.jsonl", cwd=tmp_path)
    assert ok.returncode == 0 and "2/2 seeds replayed identically" in ok.stdout.replace("\n", " ")


@pytest.mark.local_model
def test_record_model_seeds_on_miniwob_and_humaneval(tmp_path):
    for args in (
        ("miniwob", "--task", "click-button", "--cache-dir", "cache"),
        ("humaneval", "--task", "HumanEval/2", "--backend", "local"),
    ):
        result = _cli("record", *args, "-o", "rec.jsonl", "--keep-failures", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
    runs = []
    for name in ("rec.jsonl", "rec.failures.jsonl"):
        if (tmp_path / name).exists():
            runs += load_jsonl(tmp_path / name)[0]
    assert sorted(r.environment.name for r in runs) == ["humaneval", "miniwob"]
    assert all(
        not r.oracle and r.agent_steps() and all(s.model_call.source == "model" for s in r.agent_steps()) for r in runs
    )
    for name in ("rec.jsonl", "rec.failures.jsonl"):
        if (tmp_path / name).exists():
            replayed = _cli("replay", name, cwd=tmp_path)
            assert replayed.returncode == 0, replayed.stdout[-2000:]
