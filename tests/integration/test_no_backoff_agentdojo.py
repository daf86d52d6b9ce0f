"""A boundary error reaches the caller after one request, through AgentDojo's own pipeline too.

AgentDojo's ``OpenAILLM`` wraps every model call in a tenacity retry (three attempts, random
exponential waits) that retries everything but 400 and 422. An error the boundary raised as a
transport exception was therefore slept on twice and the same request sent to the boundary again
before the drift surfaced. These tests count the requests that reach the boundary per step: the
drifting step (and the branch point, and a request past the end of the recording) must get exactly
one. The time it takes is measured in ``scripts/bench_replay.py``, not here.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

from failforge.errors import PromptDrift, RecordingExhausted
from failforge.harnesses import AgentDojoPipelineHarness, ToolCallingAgent
from failforge.llm import AgentIdentity, ModelBoundary
from failforge.llm import _boundary as boundary_module
from failforge.replay import replay
from failforge.trajectory import Trajectory

pytestmark = pytest.mark.timeout(300)

HARNESSES = {"agentdojo-pipeline": AgentDojoPipelineHarness, "builtin": ToolCallingAgent}


@pytest.fixture(scope="module", params=sorted(HARNESSES))
def seed(request: pytest.FixtureRequest) -> Trajectory:
    from _required import require

    require("agentdojo")
    from failforge.seeds import oracle_seed

    recorded = oracle_seed("agentdojo", "banking/user_task_3", harness=HARNESSES[request.param]())
    assert recorded.outcome is not None and recorded.outcome.success
    assert len(recorded.agent_steps()) >= 3, "the test needs a drifting step after at least one replayed model call"
    return recorded


@pytest.fixture()
def requests_per_step(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """How many requests reached the boundary at each step index (the real boundary, only counted)."""
    seen: Counter[int] = Counter()
    real = ModelBoundary.handle

    def counted(self: ModelBoundary, request: httpx.Request, *, explicit: AgentIdentity | None) -> httpx.Response:
        seen[self.log.next_index] += 1  # every HTTP request the client sends, retries included
        return real(self, request, explicit=explicit)

    monkeypatch.setattr(ModelBoundary, "handle", counted)
    return seen


def _copy(seed: Trajectory) -> Trajectory:
    return Trajectory.model_validate_json(seed.model_dump_json())


def test_a_drifting_step_gets_exactly_one_request(seed: Trajectory, requests_per_step: Counter[int]) -> None:
    target = seed.agent_steps()[-2].index  # a model call with replayed model calls before it
    drifted = _copy(seed)
    drifted.steps[target].model_call.request["messages"][0]["content"] += " Answer in French."
    with pytest.raises(PromptDrift) as info:
        replay(drifted)
    assert info.value.step == target
    assert requests_per_step[target] == 1, f"the drifting step was sent {requests_per_step[target]} times"
    earlier = [s.index for s in seed.agent_steps() if s.index < target]
    assert earlier and all(requests_per_step[i] == 1 for i in earlier)
    assert max(requests_per_step) == target  # nothing after the drift


def test_the_end_of_the_recording_gets_exactly_one_request(seed: Trajectory, requests_per_step: Counter[int]) -> None:
    short = _copy(seed)
    short.steps = short.steps[:-1]  # the final answer is gone: the harness asks once more
    with pytest.raises(RecordingExhausted) as info:
        replay(short)
    end = len(short.steps)
    assert info.value.step == end
    assert requests_per_step[end] == 1


def test_the_branch_point_of_a_prefix_replay_gets_exactly_one_request(
    seed: Trajectory, requests_per_step: Counter[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefix ends at the model call at t: that call is answered once with ``prefix_complete`` (no
    exception steers the run) and the harness, which no client retries past, stops there."""
    t = seed.agent_steps()[-1].index
    ends: list[int] = []
    real = boundary_module.stop_reply

    def noted(log: Any) -> Any:
        ends.append(log.next_index)
        return real(log)

    monkeypatch.setattr(boundary_module, "stop_reply", noted)
    report = replay(seed, until=t)
    assert report.identical and report.steps_replayed == t
    assert requests_per_step[t] == 1 and ends == [t]
