"""The trajectory auditor without a model: parsing, field-wise validation, the retry's merge, the mapping."""

from __future__ import annotations

from typing import Any

from failforge.attribution import FailureStep, Gold, LabelledFailure, Origin, TaskInfo, ToolCallRecord
from failforge.attribution._auditor import (
    Auditor,
    attach_audits,
    audit_prompt,
    decision_steps,
    parse_decision,
    validate,
)
from failforge.attribution._methods import MethodContext
from failforge.attribution._predictions import Prediction
from failforge.attribution._prompts import PromptConfig


def _record() -> LabelledFailure:
    steps = [
        FailureStep(index=0, kind="system", agent="system", content="framing"),
        FailureStep(index=1, kind="user", agent="user", content="Find the cheapest flight."),
        FailureStep(
            index=2, kind="agent", agent="Planner", content="I will search flights for Monday.", recipient="Searcher"
        ),
        FailureStep(
            index=3,
            kind="agent",
            agent="Searcher",
            content="",
            tool_calls=[ToolCallRecord(name="search_flights", arguments='{"day": "Tuesday"}')],
        ),
        FailureStep(index=4, kind="tool", agent="search_flights", content="3 flights on Tuesday"),
        FailureStep(index=5, kind="agent", agent="Searcher", content="The cheapest flight is on Tuesday."),
    ]
    return LabelledFailure(
        id="r1",
        source="s",
        framework="f",
        topology="multi",
        agents=["Planner", "Searcher"],
        task=TaskInfo(question="Find the cheapest flight."),
        steps=steps,
        gold=Gold(agent="Searcher", step=3, step_label="3", mode="R.1"),
        origin=Origin(format="t", path="t", step_convention="t"),
    )


GOOD = """Decision: 2 | act | "search flights for Monday" | 0.9
Decision: 3 | Act | "[call search_flights({"day": "Tuesday"})]" | 0.2
Decision: 5 | stop | "the CHEAPEST   flight" | 80%
Outcome: 1
Control: 2/5
Trajectory: 3
Source: grounding
Impact: recoverable with cost
Agent: **searcher**
Step: 3
Mode: R.1
Reason: searched the wrong day."""


def test_the_prompt_asks_for_every_agent_step_and_the_arm_s_mode_line() -> None:
    record = _record()
    assert decision_steps(record) == [2, 3, 5]  # agent steps only: not the task, not the tool observation
    menu = audit_prompt(record, PromptConfig())[1]["content"]
    assert (
        "For each agent step among 2, 3, 5," in menu and "- R.1:" in menu and "Mode: (one code from the list)" in menu
    )
    free = audit_prompt(record, PromptConfig(menu=False))[1]["content"]
    assert "- R.1:" not in free and "Mode: (your description)" in free


def test_a_good_reply_validates_field_by_field() -> None:
    valid, problems, dropped = validate(_record(), GOOD, PromptConfig())
    assert problems == {} and dropped == []
    assert [(d.step, d.state, d.confidence) for d in valid["decisions"]] == [
        (2, "act", 0.9),
        (3, "act", 0.2),
        (5, "stop", 0.8),
    ]
    assert (valid["outcome"], valid["control"], valid["trajectory"]) == (1, 2, 3)
    assert (valid["error_source"], valid["impact"]) == (
        "grounding",
        "cost-recoverable",
    )  # AgentAtlas's wording read as failforge's value
    assert (valid["agent"], valid["step"], valid["mode"]) == (
        "Searcher",
        3,
        "R.1",
    )  # the agent as recorded, not as written


def test_bad_decision_lines_are_dropped_and_named() -> None:
    allowed = {2, 3, 5}
    record = _record()
    assert (
        parse_decision(record, '4 | act | "3 flights" | 0.5', allowed) == "decision '4': not one of the audited steps"
    )
    assert "state 'wait'" in str(parse_decision(record, '2 | wait | "search" | 0.5', allowed))
    assert "quote is not in the step's text" in str(parse_decision(record, '2 | act | "book a hotel" | 0.5', allowed))
    assert "outside 0..1" in str(parse_decision(record, '2 | act | "search" | 1.5', allowed))
    assert "expected 'step | state" in str(parse_decision(record, "2 act", allowed))


def test_invalid_fields_stay_invalid_and_name_themselves() -> None:
    reply = (
        GOOD.replace("Outcome: 1", "Outcome: 7")
        .replace("Source: grounding", "Source: luck")
        .replace("Agent: **searcher**", "Agent: Booker")
    )
    valid, problems, _ = validate(_record(), reply, PromptConfig())
    assert set(problems) == {"outcome", "error_source", "agent"}
    assert (
        problems["outcome"] == "Outcome '7' is not an integer 0-5"
        and "Agent 'Booker' is not a recorded agent" == problems["agent"]
    )
    assert "outcome" not in valid and valid["step"] == 3  # the other fields stay valid on their own


class _Judge:
    """Serves fixed replies in order and keeps what it was asked."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.asked: list[list[dict[str, Any]]] = []

    def ask(self, messages: list[dict[str, Any]], *, max_tokens: int | None = None, schema: Any = None) -> str:
        self.asked.append(messages)
        return self.replies.pop(0)


def _predict(judge: _Judge, config: PromptConfig | None = None):  # type: ignore[no-untyped-def]
    return Auditor().predict(MethodContext(record=_record(), prompt=config or PromptConfig(), seed=0, judge=judge))  # type: ignore[arg-type]


def test_one_retry_merges_field_by_field_the_retry_first() -> None:
    first = GOOD.replace("Impact: recoverable with cost", "Impact: bad").replace("Step: 3", "Step: 99")
    second = GOOD.replace("Step: 3", "Step: 5").replace("Agent: **searcher**", "Agent: Nobody")
    judge = _Judge(first, second)
    out = _predict(judge)
    assert len(judge.asked) == 2 and "Impact 'bad' is not one of" in judge.asked[1][-1]["content"]
    assert (out.agent, out.step, out.mode) == ("Searcher", 5, "R.1")  # agent from the first reply, step from the retry
    assert out.audit is not None and out.audit.impact == "cost-recoverable" and out.problems == []


def test_a_field_invalid_twice_stays_none_and_the_agent_is_not_the_step_s_author() -> None:
    bad = GOOD.replace("Agent: **searcher**", "Agent: Nobody")
    out = _predict(_Judge(bad, bad))
    assert (
        out.agent is None
        and out.step == 3
        and out.problems == ["after one retry: Agent 'Nobody' is not a recorded agent"]
    )


def test_free_text_keeps_the_words_and_maps_them() -> None:
    reply = GOOD.replace("Mode: R.1", "Mode: the agent did not verify the result before reporting it")
    out = _predict(_Judge(reply), PromptConfig(menu=False))
    assert out.description == "the agent did not verify the result before reporting it" and out.mode is not None
    assert out.audit is not None and out.audit.mode == out.mode


def test_a_valid_reply_costs_one_call_and_the_audit_keeps_everything() -> None:
    judge = _Judge(GOOD)
    out = _predict(judge)
    assert len(judge.asked) == 1 and out.audit is not None
    assert out.audit.model_dump(
        include={"outcome", "control", "trajectory", "error_source", "impact", "mode_source"}
    ) == {
        "outcome": 1,
        "control": 2,
        "trajectory": 3,
        "error_source": "grounding",
        "impact": "cost-recoverable",
        "mode_source": "grounding",
    }


def test_attach_puts_each_prediction_s_audit_on_its_record() -> None:
    record = _record()
    out = _predict(_Judge(GOOD))
    prediction = Prediction(
        attempt_id="a", record_id="r1", method="auditor/answer/menu", agent=out.agent, step=out.step, audit=out.audit
    )
    other = record.model_copy(update={"id": "r2"})
    audited, missing = attach_audits([record, other], [prediction], "judge-x")
    assert missing == ["r2"] and audited[1].audit is None
    assert audited[0].audit is not None and (
        audited[0].audit.method,
        audited[0].audit.judge_model,
        audited[0].audit.step,
    ) == ("auditor/answer/menu", "judge-x", 3)
    assert (
        LabelledFailure.model_validate_json(audited[0].model_dump_json()).audit == audited[0].audit
    )  # round-trips through JSONL
