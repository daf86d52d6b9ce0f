"""Prefix identity and every drift type, on every environment.

For AgentDojo, MiniWoB++ (Chromium) and HumanEval on both sandbox backends: a branch at t >= 3 has a
prefix equal to its seed's, step by step and field by field; and replay of a seed raises each typed
error at the step that was changed: PromptDrift (a recorded request edited), the environment's own
drift (an observation edited), RecordingExhausted (the recording cut short) and SeedIntegrityError (a
recorded answer edited).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from _required import require
from failforge.environments import environment
from failforge.errors import PromptDrift, RecordingExhausted, SeedIntegrityError
from failforge.injection import branch
from failforge.llm import HttpUpstream
from failforge.replay import replay
from failforge.testing import LoopbackModelServer
from failforge.trajectory import ComponentSpec, Trajectory

T = 3


def _agentdojo(tmp: Path) -> Trajectory:
    require("agentdojo")
    from failforge.seeds import oracle_seed

    return oracle_seed("agentdojo", "banking/user_task_3")


def _miniwob(tmp: Path) -> Trajectory:
    require("chromium")
    from failforge.seeds import oracle_seed

    return oracle_seed("miniwob", "login-user", {"cache_dir": str(tmp / "cache")})


def _humaneval(backend: str) -> Callable[[Path], Trajectory]:
    def make(tmp: Path) -> Trajectory:
        require("docker" if backend == "docker" else "local_sandbox")
        from failforge.seeds import oracle_seed

        return oracle_seed("humaneval", "HumanEval/2", {"backend": backend})

    return make


ENVIRONMENTS = {
    "agentdojo": _agentdojo,
    "miniwob": _miniwob,
    "humaneval-local": _humaneval("local"),
    "humaneval-docker": _humaneval("docker"),
}


@pytest.fixture(params=sorted(ENVIRONMENTS), scope="module")
def seed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Trajectory:
    made = ENVIRONMENTS[request.param](tmp_path_factory.mktemp(request.param))
    assert made.outcome is not None and made.outcome.success
    assert len(made.steps) > T + 1 and made.steps[T].kind == "agent", [s.kind for s in made.steps]
    return made


def _edit(seed: Trajectory, index: int, **update: object) -> Trajectory:
    steps = list(seed.steps)
    steps[index] = steps[index].model_copy(update=update)
    return seed.model_copy(update={"steps": steps})


def test_a_branch_at_t3_keeps_the_seeds_prefix_field_by_field(seed: Trajectory) -> None:
    with LoopbackModelServer() as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        try:
            made = branch(
                seed,
                T,
                note="Stop here and say the task is done.",
                agent=upstream,
                agent_model=ComponentSpec(name="loopback"),
                branch_id="b",
            )
        finally:
            upstream.close()
    steps = made.trajectory.steps
    for i in range(T):
        assert steps[i].comparable() == seed.steps[i].comparable(), f"step {i} differs"
        assert steps[i].phase == "replayed"
    assert steps[T].phase == "injected" and all(s.phase == "live" for s in steps[T + 1 :])
    assert made.trajectory.parent_id == seed.id and made.trajectory.branch_step == T
    assert made.trajectory.outcome is not None


def test_an_edited_request_is_prompt_drift_at_that_step(seed: Trajectory) -> None:
    agent = seed.steps[T]
    request = dict(agent.model_call.request)  # type: ignore[union-attr]
    request["messages"] = [*request["messages"][:-1], {**request["messages"][-1], "content": "edited"}]
    edited = _edit(seed, T, model_call=agent.model_call.model_copy(update={"request": request}))  # type: ignore[union-attr]
    with pytest.raises(PromptDrift) as info:
        replay(edited)
    assert info.value.step == T


def test_an_edited_observation_is_the_environments_drift_at_that_step(seed: Trajectory) -> None:
    tool = next(s for s in seed.steps[T:] if s.kind == "tool")
    drift = environment(seed.environment.name).drift_error
    with pytest.raises(drift) as info:
        replay(_edit(seed, tool.index, content=(tool.content or "") + " edited"))
    assert info.value.step == tool.index


def test_a_recording_cut_short_is_recording_exhausted(seed: Trajectory) -> None:
    assert seed.steps[T].tool_calls and seed.steps[T + 1].kind == "tool"
    cut = seed.model_copy(
        update={"steps": seed.steps[: T + 2]}
    )  # after the tool at T+1 the harness asks the model again
    with pytest.raises(RecordingExhausted) as info:
        replay(cut)
    assert info.value.step == T + 2


def test_an_edited_answer_is_a_seed_integrity_error(seed: Trajectory) -> None:
    final = seed.steps[-1]
    with pytest.raises(SeedIntegrityError) as info:
        replay(_edit(seed, final.index, content="I gave up."))
    assert info.value.step == final.index
