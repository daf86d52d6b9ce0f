"""The one runner: a Plan decides what every index does, a Session owns the run and how it ends.

No environment and no framework: a real OpenAI client over a session's real model boundary, a team
oracle as the model, and the tool boundary fed by a tiny counter.
"""

from __future__ import annotations

import json

import openai
import pytest

from failforge.environments._base import Fingerprint, ToolResult, observe_tool_call
from failforge.errors import ConfigError, EnvironmentDrift, PromptDrift, RecordingExhausted
from failforge.llm import TeamOracle
from failforge.replay import Plan, Session
from failforge.roster import AgentProfile
from failforge.runlog import PLAN_MODES

LEAD = [AgentProfile(name="lead")]


def _oracle() -> TeamOracle:
    return TeamOracle({"lead": lambda ordinal, body, purpose: (f"answer #{ordinal}", None)})


def _ask(client: openai.OpenAI, text: str) -> str:
    return str(
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
        .choices[0]
        .message.content
    )


def _recorded(calls: int = 3) -> Session:
    session = Session(Plan.record(), run_id="seed-1", upstream=_oracle(), roster=LEAD)
    session.begin("the task")
    client = session.client("lead")
    for i in range(calls):
        _ask(client, ["open the account", "send the money", "report the balance"][i])
    session.end()
    return session


def test_the_plan_is_the_one_place_the_mode_is_spelled() -> None:
    assert PLAN_MODES == ("record", "replay", "branch", "resume")
    assert [Plan.record().action(i) for i in (0, 5)] == ["live", "live"]
    whole = Plan.replay(4)
    assert [whole.action(i) for i in range(6)] == ["replay"] * 4 + ["exhausted"] * 2 and not whole.stop
    prefix = Plan.replay(4, until=2)
    assert [prefix.action(i) for i in range(4)] == ["replay", "replay", "stop", "exhausted"] and prefix.stop
    branch = Plan.branch(2)
    assert [branch.action(i) for i in range(4)] == ["replay", "replay", "change", "live"]
    assert Plan.branch(2, changed=False).action(2) == "live"
    assert [Plan.resume(2).action(i) for i in range(3)] == ["replay", "replay", "live"]
    assert [p.record_phase for p in (Plan.record(), Plan.branch(1), Plan.resume(1))] == ["recorded", "live", "recorded"]
    assert Plan.branch(3).phase_for(2) == "replayed" and Plan.branch(3).phase_for(3) == "live"


def test_a_prefix_replay_stops_at_its_end_without_an_exception_and_is_not_a_failure() -> None:
    seed = _recorded()
    session = Session(
        Plan.replay(len(seed.steps), until=2), run_id="r", expected=seed.steps, seed_id="seed-1", roster=LEAD
    )
    session.begin("the task")
    client = session.client("lead")
    assert _ask(client, "open the account") == "answer #0"
    with pytest.raises(openai.BadRequestError) as refused:  # the call at the prefix end is refused, once, not retried
        _ask(client, "send the money")
    assert refused.value.body["code"] == "prefix_complete"  # type: ignore[index]
    assert session.settle(refused.value) is None and session.stopped and session.failure is None
    session.end()  # a stopped run ends cleanly
    assert len(session.steps) == 2


def test_a_drift_names_the_seed_the_step_the_agent_and_the_nearest_recorded_requests_once() -> None:
    seed = _recorded()
    session = Session(
        Plan.replay(len(seed.steps)), run_id="replay-of-seed", expected=seed.steps, seed_id="seed-1", roster=LEAD
    )
    session.begin("the task")
    client = session.client("lead")
    _ask(client, "open the account")
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(client, "send all the money")
    drift = session.failure
    assert isinstance(drift, PromptDrift)
    assert (drift.trajectory_id, drift.step, drift.agent) == ("seed-1", 2, "lead")  # the seed's id, not the run's
    assert (
        drift.nearest[0] == {"step": 2, "agent": "lead", "similarity": drift.nearest[0]["similarity"]}
        and drift.nearest[0]["similarity"] > 0.8
    )
    message = refused.value.body["message"]  # type: ignore[index]
    assert (
        "trajectory seed-1 step 2 (agent 'lead')" in message
        and "nearest recorded requests: step 2 of 'lead'" in message
    )
    assert message.count("--- recorded") == 1, "the diff is shown once"
    # every later call of a failed run is refused with the same failure, and nothing more is recorded
    with pytest.raises(openai.BadRequestError):
        _ask(client, "report the balance")
    assert len(session.steps) == 2
    with pytest.raises(PromptDrift):
        session.end()


def test_a_run_that_ends_before_its_recording_did_is_a_drift_and_a_failed_run_reports_its_first_failure() -> None:
    seed = _recorded()
    short = Session(Plan.replay(len(seed.steps)), expected=seed.steps, seed_id="seed-1", roster=LEAD)
    short.begin("the task")
    _ask(short.client("lead"), "open the account")
    with pytest.raises(PromptDrift, match="the seed goes on to step 3"):
        short.end()
    exhausted = Session(Plan.replay(len(seed.steps)), expected=seed.steps, seed_id="seed-1", roster=LEAD)
    exhausted.begin("the task")
    client = exhausted.client("lead")
    for i in range(3):
        _ask(client, ["open the account", "send the money", "report the balance"][i])
    with pytest.raises(openai.BadRequestError):
        _ask(client, "one too many")
    assert isinstance(exhausted.failure, RecordingExhausted) and exhausted.failure.trajectory_id == "seed-1"


def test_a_tool_drift_is_the_runs_failure_even_when_the_harness_swallows_it() -> None:
    counter = {"n": 0}

    def step(log, n: int):  # type: ignore[no-untyped-def]
        def run() -> ToolResult:
            counter["n"] += n
            return ToolResult(content=f"n={counter['n']}")

        return observe_tool_call(
            log,
            name="add",
            arguments={"n": n},
            call_id=None,
            run=run,
            fingerprint=lambda: Fingerprint(digest=str(counter["n"]), parts={"n": str(counter["n"])}),
            drift=EnvironmentDrift,
        )

    seed = Session(Plan.record(), upstream=_oracle(), roster=LEAD)
    seed.begin("count")
    step(seed.log, 1)
    counter["n"] = 0
    replaying = Session(Plan.replay(2), expected=seed.steps, seed_id="seed-2", roster=LEAD)
    replaying.begin("count")
    try:
        step(replaying.log, 2)  # a different call than recorded
    except EnvironmentDrift:
        pass  # a framework that catches tool errors and carries on
    assert (
        isinstance(replaying.failure, EnvironmentDrift)
        and replaying.failure.step == 1
        and replaying.failure.trajectory_id == "seed-2"
    )
    with pytest.raises(EnvironmentDrift):
        replaying.end()


def test_a_branch_serves_its_change_at_t_as_the_calling_agent_then_goes_live() -> None:
    seed = _recorded()
    seen: list[str] = []

    class Change:
        def for_agent(self, agent: str, purpose: str | None = None):  # type: ignore[no-untyped-def]
            seen.append(agent)
            return lambda body: {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "the mistake"}, "finish_reason": "stop"}
                ]
            }

    branch = Session(
        Plan.branch(2),
        run_id="b",
        expected=seed.steps,
        seed_id="seed-1",
        upstream=_oracle(),
        change=Change(),
        roster=LEAD,
    )  # type: ignore[arg-type]
    branch.begin("the task")
    client = branch.client("lead")
    assert [_ask(client, "open the account"), _ask(client, "send the money"), _ask(client, "report the balance")] == [
        "answer #0",
        "the mistake",
        "answer #0",
    ]
    assert seen == ["lead"] and [s.phase for s in branch.steps] == ["replayed", "replayed", "injected", "live"]
    record = branch.trajectory(task=_task(), outcome=None, harness=_spec("h"), environment=_spec("e"), model=_spec("m"))
    assert (record.parent_id, record.branch_step, record.provenance["plan"]["mode"]) == ("seed-1", 2, "branch")


def test_a_session_refuses_a_plan_it_cannot_carry_out() -> None:
    with pytest.raises(ConfigError, match="needs a recording"):
        Session(Plan.replay(5), expected=[])
    with pytest.raises(ConfigError, match="needs the change"):
        Session(Plan.branch(1), expected=_recorded().steps)


def _task():  # type: ignore[no-untyped-def]
    from failforge.trajectory import Task

    return Task(benchmark="b", task_id="t", instruction="the task")


def _spec(name: str):  # type: ignore[no-untyped-def]
    from failforge.trajectory import ComponentSpec

    return ComponentSpec(name=name)


def test_the_replay_report_carries_the_drifts_agent_and_nearest_requests() -> None:
    drift = PromptDrift(
        "x", trajectory_id="s", step=3, agent="lead", nearest=[{"step": 3, "agent": "lead", "similarity": 0.9}]
    )
    data = drift.to_dict()
    assert (data["trajectory_id"], data["step"], data["agent"], data["nearest"][0]["step"]) == ("s", 3, "lead", 3)
    assert json.dumps(data)
