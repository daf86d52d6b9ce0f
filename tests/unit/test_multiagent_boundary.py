"""The agent-aware model boundary: identity resolution, per-agent streams, replay order, purposes.

A run log with a declared two-agent roster, the real boundary and a real OpenAI client over it; the
model is failforge's own TeamOracle (a scripted responder), so no model server is needed.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from failforge.errors import AgentDrift, ConfigError, PromptDrift, SeedIntegrityError
from failforge.llm import (
    AGENT_HEADER,
    PURPOSE_HEADER,
    AgentIdentity,
    ModelBoundary,
    TeamOracle,
    agent_route,
    boundary_client,
    surface_boundary_error,
)
from failforge.roster import AgentProfile, Handoff
from failforge.runlog import Plan, RunLog
from failforge.trajectory import Step

ROSTER = [
    AgentProfile(name="lead", role="orchestrator", handoffs=[Handoff(tool="delegate", to_argument="worker")]),
    AgentProfile(name="helper", role="worker", tools=["lookup"], reports_to="lead", opens_rounds=False),
]


def _script(agent: str):
    def script(ordinal: int, body: dict, purpose: str | None):
        return f"{agent} answer #{ordinal} ({purpose or 'turn'})", None

    return script


def _oracle() -> TeamOracle:
    return TeamOracle({"lead": _script("lead"), "helper": _script("helper")})


def _log(**kwargs) -> RunLog:
    log = RunLog(trajectory_id="t", **kwargs)
    log.set_roster(ROSTER, open_roster=False)
    log.append(Step(index=0, kind="task", agent="user", role="user", content="do it"))
    return log


def _ask(client: openai.OpenAI, text: str, **kwargs) -> str:
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}], **kwargs)
    return str(out.choices[0].message.content)


def _typed(boundary: ModelBoundary, call) -> BaseException:
    try:
        call()
    except Exception as exc:  # the SDK wraps the transport's error; the boundary keeps the typed one
        return surface_boundary_error(boundary, exc)
    raise AssertionError("the call should have failed")


def test_identity_sources_in_order_explicit_route_header_resolver():
    log = _log()
    current = {"identity": AgentIdentity("helper", "ledger", "resolver")}
    boundary = ModelBoundary(log, upstream=_oracle(), resolver=lambda: current["identity"])
    client = boundary_client(boundary)
    # explicit per-agent client beats the header and the resolver
    assert _ask(client.for_agent("lead"), "a", extra_headers={AGENT_HEADER: "helper"}) == "lead answer #0 (turn)"
    # the route beats the header and the resolver
    routed = openai.OpenAI(
        base_url=agent_route("http://failforge.boundary/v1", "lead"),
        api_key="x",
        max_retries=0,
        http_client=httpx.Client(transport=boundary),
    )
    assert (
        _ask(routed, "b", extra_headers={AGENT_HEADER: "helper"}) == "lead answer #1 (turn)"
    )  # the resolver's purpose is the helper's
    # the header beats the resolver; the purpose header is read too
    assert _ask(client, "c", extra_headers={AGENT_HEADER: "lead", PURPOSE_HEADER: "plan"}) == "lead answer #2 (plan)"
    # the resolver, when nothing else names the agent
    assert _ask(client, "d") == "helper answer #0 (ledger)"
    agents = [(s.agent, s.model_call.stream, s.model_call.ordinal, s.model_call.purpose) for s in log.steps[1:]]
    assert agents == [
        ("lead", "lead", 0, None),
        ("lead", "lead", 1, None),
        ("lead", "lead", 2, "plan"),
        ("helper", "helper", 0, "ledger"),
    ]
    client.close()


def test_an_unidentified_call_with_several_agents_is_an_error_not_a_guess():
    log = _log()
    boundary = ModelBoundary(log, upstream=_oracle())
    client = boundary_client(boundary)
    err = _typed(boundary, lambda: _ask(client, "who am I"))
    assert isinstance(err, ConfigError) and "unidentified agent" in str(err) and AGENT_HEADER in str(err)
    assert len(log.steps) == 1


def test_a_closed_roster_refuses_an_agent_it_does_not_have_and_an_open_one_admits_it():
    boundary = ModelBoundary(_log(), upstream=_oracle())
    err = _typed(boundary, lambda: _ask(boundary_client(boundary, "ghost"), "hi"))
    assert isinstance(err, ConfigError) and "'ghost'" in str(err) and "lead, helper" in str(err)
    open_log = RunLog(trajectory_id="o")
    open_log.append(Step(index=0, kind="task", agent="user", role="user", content="x"))
    scripts = TeamOracle({"agent": _script("agent"), "extra": _script("extra")})
    open_boundary = ModelBoundary(open_log, upstream=scripts)
    assert _ask(boundary_client(open_boundary), "a") == "agent answer #0 (turn)"  # the single agent by default
    assert _ask(boundary_client(open_boundary, "extra"), "b") == "extra answer #0 (turn)"
    assert open_log.agent_names() == ["agent", "extra"]


def _recorded() -> list[Step]:
    log = _log()
    boundary = ModelBoundary(log, upstream=_oracle())
    client = boundary_client(boundary)
    _ask(client.for_agent("lead", "plan"), "plan it")
    _ask(client.for_agent("lead"), "first turn")
    _ask(client.for_agent("helper"), "work")
    _ask(client.for_agent("lead"), "second turn")
    return list(log.steps)


def test_replay_serves_each_agent_its_own_responses_and_records_streams():
    seed = _recorded()
    assert [(s.agent, s.model_call.ordinal) for s in seed[1:]] == [("lead", 0), ("lead", 1), ("helper", 0), ("lead", 2)]
    assert [s.recipient for s in seed] == [
        "lead",
        "lead",
        "user",
        "lead",
        "user",
    ]  # plan: a note to itself; helper reports to lead
    assert [s.coordinate for s in seed] == [
        "0.0",
        "1.0",
        "2.0",
        "2.1",
        "3.0",
    ]  # the helper's call sits in the lead's round
    log = _log(expected=seed, plan=Plan.replay(len(seed)))
    boundary = ModelBoundary(log, upstream=None)
    client = boundary_client(boundary)
    assert _ask(client.for_agent("lead", "plan"), "plan it") == "lead answer #0 (plan)"
    assert _ask(client.for_agent("lead"), "first turn") == "lead answer #1 (turn)"
    assert _ask(client.for_agent("helper"), "work") == "helper answer #0 (turn)"
    assert _ask(client.for_agent("lead"), "second turn") == "lead answer #2 (turn)"
    assert [s.comparable() for s in log.steps] == [s.comparable() for s in seed]
    assert boundary.live_calls == 0


def test_a_call_from_another_agent_than_recorded_names_the_step_and_both_agents():
    seed = _recorded()
    log = _log(expected=seed, plan=Plan.replay(len(seed)))
    boundary = ModelBoundary(log, upstream=None)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead", "plan"), "plan it")
    _ask(client.for_agent("lead"), "first turn")
    err = _typed(boundary, lambda: _ask(client.for_agent("lead"), "second turn"))  # the helper should speak at step 3
    assert isinstance(err, AgentDrift) and err.step == 3
    assert (err.expected, err.actual) == ("helper", "lead")
    assert "'helper'" in str(err) and "'lead'" in str(err) and "next recorded call is step 4" in str(err)


def test_a_call_with_another_purpose_than_recorded_is_agent_drift():
    seed = _recorded()
    boundary = ModelBoundary(_log(expected=seed, plan=Plan.replay(len(seed))), upstream=None)
    err = _typed(boundary, lambda: _ask(boundary_client(boundary, "lead"), "plan it"))  # recorded with purpose "plan"
    assert isinstance(err, AgentDrift) and err.step == 1 and (err.expected, err.actual) == ("plan", None)


def test_a_tampered_ordinal_is_caught_as_out_of_order():
    seed = [s.model_copy(deep=True) for s in _recorded()]
    seed[4].model_call.ordinal = 5
    boundary = ModelBoundary(_log(expected=seed, plan=Plan.replay(len(seed))), upstream=None)
    client = boundary_client(boundary)
    for agent, purpose, text in (("lead", "plan", "plan it"), ("lead", None, "first turn"), ("helper", None, "work")):
        _ask(client.for_agent(agent, purpose), text)
    err = _typed(boundary, lambda: _ask(client.for_agent("lead"), "second turn"))
    assert isinstance(err, AgentDrift) and err.step == 4 and "out of their recorded order" in str(err)


def test_an_edited_response_is_refused_at_its_own_step_and_an_edited_request_is_prompt_drift():
    seed = [s.model_copy(deep=True) for s in _recorded()]
    seed[3].model_call.response["choices"][0]["message"]["content"] = "helper answer: nothing found"
    boundary = ModelBoundary(_log(expected=seed, plan=Plan.replay(len(seed))), upstream=None)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead", "plan"), "plan it")
    _ask(client.for_agent("lead"), "first turn")
    err = _typed(boundary, lambda: _ask(client.for_agent("helper"), "work"))
    assert isinstance(err, SeedIntegrityError) and err.step == 3 and "'helper'" in str(err)
    seed = [s.model_copy(deep=True) for s in _recorded()]
    seed[2].model_call.request["messages"][0]["content"] = "first turn, edited"
    boundary = ModelBoundary(_log(expected=seed, plan=Plan.replay(len(seed))), upstream=None)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead", "plan"), "plan it")
    err = _typed(boundary, lambda: _ask(client.for_agent("lead"), "first turn"))
    assert isinstance(err, PromptDrift) and err.step == 2 and "edited" in err.diff


def test_the_injector_answers_only_the_agent_recorded_at_the_branch_point():
    seed = _recorded()
    served: list[dict] = []

    def injector(body: dict) -> dict:
        served.append(body)
        return {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "injected"}, "finish_reason": "stop"}]
        }

    log = _log(expected=seed, plan=Plan.branch(3))
    boundary = ModelBoundary(log, upstream=None, injector=injector)
    client = boundary_client(boundary)
    _ask(client.for_agent("lead", "plan"), "plan it")
    _ask(client.for_agent("lead"), "first turn")
    assert _ask(client.for_agent("helper"), "work") == "injected"
    step = log.steps[3]
    assert (step.agent, step.phase, step.model_call.stream, step.model_call.ordinal) == (
        "helper",
        "injected",
        "helper",
        0,
    )
    assert json.dumps(served[0]).count("work") == 1
    wrong = ModelBoundary(_log(expected=seed, plan=Plan.branch(3)), upstream=None, injector=injector)
    c2 = boundary_client(wrong)
    _ask(c2.for_agent("lead", "plan"), "plan it")
    _ask(c2.for_agent("lead"), "first turn")
    err = _typed(wrong, lambda: _ask(c2.for_agent("lead"), "turn"))
    assert isinstance(err, AgentDrift) and err.step == 3


def test_a_copied_client_keeps_the_boundary_and_the_agent():
    log = _log()
    boundary = ModelBoundary(log, upstream=_oracle())
    helper = boundary_client(boundary).for_agent("helper")
    copied = helper.with_options(timeout=5.0)  # frameworks copy the client they are given
    assert copied.boundary is boundary and copied.identity == helper.identity
    assert _ask(copied, "x") == "helper answer #0 (turn)"
    assert _ask(copied.for_agent("lead", "plan"), "y") == "lead answer #0 (plan)"
    with pytest.raises(TypeError):
        type(helper)(api_key="k")  # never a boundary client without a boundary
