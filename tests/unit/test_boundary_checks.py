"""The model boundary's replay checks, each on the case that only it can catch.

A run is recorded through the real boundary (a real OpenAI client over it, failforge's TeamOracle as
the model), then replayed. Each test edits one thing the recording or the replaying harness could get
wrong and asserts the boundary's own typed error at the exact step: a request that differs (refused in
strict mode, recorded as a divergence otherwise), a model call where the seed has a tool step, a
record whose step author and stream disagree, the recorded request keeping no key.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from failforge.errors import AgentDrift, ConfigError, PromptDrift
from failforge.llm import AgentIdentity, ModelBoundary, TeamOracle, boundary_client, surface_boundary_error
from failforge.roster import AgentProfile, Handoff
from failforge.runlog import Plan, RunLog
from failforge.trajectory import Step

ROSTER = [
    AgentProfile(name="lead", role="orchestrator", handoffs=[Handoff(tool="delegate", to_argument="worker")]),
    AgentProfile(name="helper", role="worker", tools=["lookup"], reports_to="lead", opens_rounds=False),
]
CANARY = "ff-canary-5d4c3b2a19f8e7d6"
LEAD = AgentIdentity("lead", None, "explicit")


def _oracle() -> TeamOracle:
    def script(agent: str):
        return lambda ordinal, body, purpose: (f"{agent} answer #{ordinal}", None)

    return TeamOracle({"lead": script("lead"), "helper": script("helper")})


def _log(**kwargs) -> RunLog:
    log = RunLog(trajectory_id="t", **kwargs)
    log.set_roster(ROSTER, open_roster=False)
    log.append(Step(index=0, kind="task", agent="user", role="user", content="do it"))
    return log


def _ask(client: openai.OpenAI, text: str) -> str:
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return str(out.choices[0].message.content)


def _typed(boundary: ModelBoundary, call) -> BaseException:
    try:
        call()
    except Exception as exc:
        return surface_boundary_error(boundary, exc)
    raise AssertionError("the call should have failed")


def _recorded() -> list[Step]:
    log = _log()
    client = boundary_client(ModelBoundary(log, upstream=_oracle()))
    _ask(client.for_agent("lead"), "first turn")
    _ask(client.for_agent("helper"), "work")
    _ask(client.for_agent("lead"), "second turn")
    return list(log.steps)


def _replaying(seed: list[Step], strict: bool = True) -> tuple[ModelBoundary, RunLog]:
    log = _log(expected=seed, plan=Plan.replay(len(seed)))
    return ModelBoundary(log, upstream=None, strict=strict), log


def test_a_changed_request_is_prompt_drift_in_strict_mode_and_a_divergence_otherwise():
    seed = _recorded()
    boundary, _ = _replaying(seed)
    err = _typed(boundary, lambda: _ask(boundary_client(boundary, "lead"), "first turn, reworded"))
    assert isinstance(err, PromptDrift) and err.step == 1 and "reworded" in err.diff
    lenient, log = _replaying(seed, strict=False)
    client = boundary_client(lenient)
    assert _ask(client.for_agent("lead"), "first turn, reworded") == "lead answer #0"  # served from the recording
    assert [d.step for d in lenient.divergences] == [1] and lenient.failure is None
    assert _ask(client.for_agent("helper"), "work") == "helper answer #0"
    assert len(lenient.divergences) == 1  # an unchanged request adds none
    assert log.steps[1].phase == "replayed"


def test_a_model_call_where_the_seed_has_a_tool_step_is_prompt_drift():
    seed = _recorded()
    tool = Step(
        index=2, kind="tool", agent="environment", role="tool", content="42", tool_call_id="c0", tool_name="lookup"
    )
    edited = [*seed[:2], tool, *[s.model_copy(update={"index": s.index + 1}) for s in seed[2:]]]
    boundary, _ = _replaying(edited)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead"), "first turn")
    err = _typed(boundary, lambda: _ask(client.for_agent("helper"), "work"))
    assert isinstance(err, PromptDrift) and err.step == 2 and "a tool step" in str(err)


@pytest.mark.parametrize("field", ["agent", "stream"])
def test_a_step_whose_author_and_stream_disagree_is_agent_drift(field):
    """A record edited in one of the two places that name the caller is refused by the boundary itself
    (before the run log's field comparison): either disagreement is enough."""
    seed = [s.model_copy(deep=True) for s in _recorded()]
    if field == "agent":
        seed[2] = seed[2].model_copy(update={"agent": "lead"})
    else:
        seed[2].model_call.stream = "lead"
    boundary, _ = _replaying(seed)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead"), "first turn")
    err = _typed(boundary, lambda: _ask(client.for_agent("helper"), "work"))
    assert isinstance(err, AgentDrift) and err.step == 2 and err.actual == "helper"


def test_the_recorded_request_keeps_no_key_from_the_body():
    log = _log()
    boundary = ModelBoundary(log, upstream=_oracle())
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "api_key": CANARY,
        "extra_headers": {"Authorization": f"Bearer {CANARY}"},
    }
    boundary.complete(body, LEAD)
    recorded = log.steps[1].model_call
    assert CANARY not in recorded.model_dump_json()
    assert recorded.request["messages"] == body["messages"]


def test_a_body_carrying_a_key_replays_against_its_recording_whatever_the_key():
    """The key is neither stored nor hashed, so a seed recorded with one key replays with another."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "api_key": CANARY}
    log = _log()
    ModelBoundary(log, upstream=_oracle()).complete(dict(body), LEAD)
    replay_log = _log(expected=list(log.steps), plan=Plan.replay(len(log.steps)))
    ModelBoundary(replay_log, upstream=None).complete({**body, "api_key": "another-key-0123456789"}, LEAD)
    assert replay_log.steps[1].content == "lead answer #0"


def test_a_refused_call_is_answered_400_with_no_retry():
    seed = _recorded()
    boundary, _ = _replaying(seed)
    request = httpx.Request(
        "POST",
        "http://failforge.boundary/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "other"}]},
        headers={"x-failforge-agent": "lead"},
    )
    response = boundary.handle(request, explicit=None)
    assert response.status_code == 400 and response.headers["x-should-retry"] == "false"
    assert isinstance(boundary.failure, PromptDrift)


def test_a_closed_roster_refuses_an_agent_even_when_the_model_would_answer_it():
    """The roster decides, not the upstream: here the model has a script for the undeclared agent."""
    answered: list[str] = []

    def ghost(ordinal, body, purpose):
        answered.append("ghost")
        return "ghost answer", None

    log = _log()
    oracle = TeamOracle(
        {"lead": lambda o, b, p: ("lead", None), "helper": lambda o, b, p: ("helper", None), "ghost": ghost}
    )
    boundary = ModelBoundary(log, upstream=oracle)
    err = _typed(boundary, lambda: _ask(boundary_client(boundary, "ghost"), "hi"))
    assert isinstance(err, ConfigError) and "roster" in str(err) and "'ghost'" in str(err)
    assert answered == [] and log.agent_names() == ["lead", "helper"] and len(log.steps) == 1
