"""DA-Bench on the stateful interpreter, on both sandbox backends: the self-check, scripted-analyst seeds of a slice
of the full dev set recorded and audited through the CLI, drift named at the step with the variable that changed,
and the interpreter's determinism (a set shown to the agent, the clock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _required import dabench_dir, require
from failforge.errors import SandboxDrift
from failforge.fidelity import assert_self_check
from failforge.replay import replay
from failforge.seeds import oracle_seed

pytestmark = pytest.mark.timeout(900)

BACKENDS = {"local": "dabench_local", "docker": "dabench_docker"}
#: A one-answer question, a four-answer one, a six-answer one, on three different tables.
SLICE = ["dabench-0", "dabench-6", "dabench-28"]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_dabench_is_conformant_and_its_evaluator_fails_an_altered_answer(backend: str) -> None:
    require(BACKENDS[backend])
    report = assert_self_check("dabench", "dabench-18", {"backend": backend})
    assert report.passed and len(report.checks) == 6
    assert report.checks[-1].detail.startswith("final answer altered: dabench.eval_closed_form says failed"), (
        report.checks[-1].detail
    )
    tool_steps = [s for s in report.seed.steps if s.kind == "tool"] if report.seed else []
    assert [s.tool_name for s in tool_steps] == ["python_interpreter"] * 4
    # the variables carry across steps: step 2 made df, step 6 added answers, and every later fingerprint still has df
    assert all("ns:df" in (s.state_parts or {}) for s in tool_steps)
    assert "ns:answers" in (tool_steps[2].state_parts or {}) and "ns:answers" not in (tool_steps[1].state_parts or {})


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_a_slice_of_the_dev_set_records_and_audits_identically_through_the_cli(backend: str, tmp_path: Path) -> None:
    require(BACKENDS[backend])
    require("dabench_full")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    seeds = tmp_path / "seeds.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "failforge",
            "seeds",
            "dabench",
            "--data-dir",
            dabench_dir(),
            "--backend",
            backend,
            "--task",
            *SLICE,
            "-o",
            str(seeds),
        ],
        check=True,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    rows = [json.loads(line) for line in seeds.read_text().splitlines()]
    assert [r["task"]["task_id"] for r in rows] == SLICE and all(r["outcome"]["success"] for r in rows)
    assert [len(r["outcome"]["details"]["sub_answers"]) for r in rows] == [1, 4, 6]
    audit = subprocess.run(
        [sys.executable, "-m", "failforge", "audit", str(seeds), "--json", str(tmp_path / "audit.json")],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr
    summary = json.loads((tmp_path / "audit.json").read_text())
    text = json.dumps(summary)
    assert '"identical": 3' in text and '"seeds": 3' in text, text[:2000]


def test_a_changed_variable_is_drift_named_at_its_step_with_the_variable() -> None:
    require("dabench_local")
    seed = oracle_seed("dabench", "dabench-18", {"backend": "local"})
    steps = list(seed.steps)
    # the seed as if its third code block had stored another answer: the observation is the same, the namespace is not
    at = 6
    parts = dict(steps[at].state_parts or {})
    parts["ns:answers"] = "builtins.dict|0000000000000000"
    steps[at] = steps[at].model_copy(update={"state_parts": parts, "state_fingerprint": "f" * 64})
    with pytest.raises(SandboxDrift) as caught:
        replay(seed.model_copy(update={"steps": steps}))
    assert caught.value.step == at
    assert "ns:answers" in str(caught.value)


def test_the_interpreter_shows_the_allow_list_sorted_and_a_frozen_clock_on_both_runs() -> None:
    require("dabench_local")
    from failforge.environments import environment
    from failforge.runlog import Plan, RunLog

    plugin = environment("dabench")
    spec = plugin.spec("dabench-18", plugin.Options(backend="local"))
    seen = []
    for _ in range(2):
        with plugin.open(spec) as episode:
            log = RunLog(trajectory_id="determinism", plan=Plan.record())
            box = episode.toolbox(log)
            box.call("python_interpreter", json.dumps({"code": "import os"}), "c0")
            box.call(
                "python_interpreter",
                json.dumps(
                    {"code": "import time, datetime\nprint(time.time(), datetime.datetime.now())\n{'b', 'a', 'c'}"}
                ),
                "c1",
            )
            seen.append([(s.content, s.error, s.state_fingerprint) for s in log.steps])
    assert seen[0] == seen[1]
    first, second = seen[0]
    assert "Authorized imports are: ['collections', 'csv', 'datetime', 'itertools', 'json', 'math', 'numpy'" in (
        first[1] or ""
    )
    assert "1700000000.0 2023-11-14 22:13:20" in (second[0] or "")
