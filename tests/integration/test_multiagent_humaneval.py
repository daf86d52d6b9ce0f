"""The two multi-agent harnesses on HumanEval in a real sandbox: a coder and a tester (orchestrator-workers)
or a planner, an executor and a verifier, the sandbox fingerprinted after every tool call, the official
tests judging, replay identical, a tampered observation caught at the worker's step."""

from __future__ import annotations

import json

import pytest

from failforge.errors import SandboxDrift
from failforge.replay import replay
from failforge.seeds import oracle_seed, oracle_seeds
from failforge.trajectory import Trajectory

HARNESSES = ("orchestrator-workers", "plan-execute-verify")
TASKS = ["HumanEval/0", "HumanEval/2", "HumanEval/53", "HumanEval/163"]


def _check(seeds: list[Trajectory]) -> None:
    for seed in seeds:
        assert seed.outcome.success, f"{seed.id}: {seed.outcome}"
        tool_steps = [s for s in seed.steps if s.kind == "tool"]
        assert tool_steps and all(s.state_fingerprint and s.state_parts for s in tool_steps)
        report = replay(seed, raise_on_drift=False)
        assert report.identical and report.outcome.success, f"{seed.id}: {report.drift or report.infrastructure}"


@pytest.mark.parametrize("harness", HARNESSES)
def test_team_seeds_on_the_local_sandbox(harness):
    seeds = list(oracle_seeds("humaneval", {"backend": "local"}, TASKS, harness=harness))
    _check(seeds)
    if harness == "orchestrator-workers":
        assert all(s.agents == ["orchestrator", "code_worker", "test_worker"] for s in seeds)
        writer = {
            s.agent for seed in seeds for s in seed.agent_steps() if any(c.name == "write_file" for c in s.tool_calls)
        }
        runner = {
            s.agent for seed in seeds for s in seed.agent_steps() if any(c.name == "run_python" for c in s.tool_calls)
        }
        assert (writer, runner) == ({"code_worker"}, {"test_worker"})
    else:
        assert all(s.agents == ["planner", "executor", "verifier"] for s in seeds)


@pytest.mark.parametrize("harness", HARNESSES)
def test_team_seeds_on_the_docker_sandbox(docker_ok, harness):
    _check(list(oracle_seeds("humaneval", {"backend": "docker"}, TASKS[:2], harness=harness)))


def test_a_tampered_sandbox_observation_is_caught_at_the_workers_step():
    seed = oracle_seed("humaneval", "HumanEval/2", {"backend": "local"}, harness="orchestrator-workers")
    k = next(s.index for s in seed.steps if s.kind == "tool" and s.recipient == "test_worker")
    bad = Trajectory.model_validate(json.loads(seed.model_dump_json()))
    bad.steps[k].content = (bad.steps[k].content or "").replace("True", "False")
    with pytest.raises(SandboxDrift) as info:
        replay(bad)
    assert info.value.step == k
