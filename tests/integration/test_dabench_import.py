"""``failforge import --format smolagents``: a real smolagents CodeAgent run (tests/fixtures/dabench/
smolagents_run_q0.json, made by scripts/dabench_real_smolagents_run.py: smolagents' own LocalPythonExecutor against
a loopback model that computes DA-Bench question 0's mean fare) becomes a seed whose observations, re-executed on
failforge's interpreter, equal the saved ones byte for byte; a run whose observation, answer or task is off is refused
with the reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from _required import dabench_dir, require
from failforge.replay import replay
from failforge.seeds.smolagents_run import import_run, parse_run

pytestmark = pytest.mark.timeout(600)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "dabench" / "smolagents_run_q0.json"


@pytest.fixture(scope="module")
def saved() -> dict:
    require("dabench_local")
    require("dabench_full")
    require("smolagents")
    return json.loads(FIXTURE.read_text())


def test_a_real_smolagents_run_becomes_a_seed_that_replays_identically(saved: dict) -> None:
    verdict = import_run(parse_run(saved, str(FIXTURE)), str(FIXTURE), data_dir=dabench_dir(), backend="local")
    assert verdict.reasons == [] and verdict.seed is not None, verdict.reasons
    seed = verdict.seed
    assert seed.task.task_id == "dabench-0" and seed.outcome and seed.outcome.success
    assert seed.harness.name == "smolagents.code"
    assert [s.kind for s in seed.steps] == ["task"] + ["agent", "tool"] * 3
    assert seed.provenance["imported_from"]["source"].startswith("smolagents CodeAgent (LocalPythonExecutor)")
    report = replay(seed, raise_on_drift=False)
    assert report.identical, report.drift


def test_a_run_whose_saved_observation_differs_is_refused_naming_the_step(saved: dict) -> None:
    edited = copy.deepcopy(saved)
    edited["steps"][2]["observations"] = edited["steps"][2]["observations"].replace("34.65", "34.66")
    verdict = import_run(parse_run(edited, "edited"), "edited", data_dir=dabench_dir(), backend="local")
    assert verdict.seed is None
    assert len(verdict.reasons) == 1 and verdict.reasons[0].startswith(
        "step 4 (the run's step 2): the observation differs"
    )
    assert "34.66" in verdict.reasons[0]


def test_a_wrong_answer_or_an_unknown_task_is_refused(saved: dict) -> None:
    wrong = copy.deepcopy(saved)
    wrong["steps"][-1]["action_output"] = "@mean_fare[34.7]"
    verdict = import_run(parse_run(wrong, "wrong"), "wrong", data_dir=dabench_dir(), backend="local")
    assert (
        verdict.seed is None
        and "fails dabench.eval_closed_form (mean_fare: found '34.7', label '34.65')" in verdict.reasons[0]
    )
    other = copy.deepcopy(saved)
    other["steps"][0]["task"] = "Summarise the weather."
    verdict = import_run(parse_run(other, "other"), "other", data_dir=dabench_dir(), backend="local")
    assert verdict.seed is None and verdict.reasons[0].startswith("the run's task names no DA-Bench question")


def test_the_cli_writes_the_seed_and_exits_1_when_a_run_is_refused(saved: dict, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    edited = copy.deepcopy(saved)
    edited["steps"][-1]["action_output"] = "@mean_fare[0]"
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps(saved) + "\n" + json.dumps(edited) + "\n")
    seeds = tmp_path / "seeds.jsonl"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "failforge",
            "import",
            str(runs),
            "--format",
            "smolagents",
            "--data-dir",
            dabench_dir(),
            "--backend",
            "local",
            "-o",
            str(seeds),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "runs.jsonl:2: its final answer '@mean_fare[0]' fails dabench.eval_closed_form" in " ".join(
        done.stderr.split()
    )
    assert len(seeds.read_text().splitlines()) == 1
