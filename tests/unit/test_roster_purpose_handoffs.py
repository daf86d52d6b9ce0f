"""A purpose handoff addresses the text of a labelled call: Magentic-One's progress ledger delegates in
JSON (its ``next_speaker``), not with a tool call, and its final answer is a labelled call to the user."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from failforge.roster import USER, AgentProfile, Handoff, recipient_of_call

LEAD = AgentProfile(
    name="orchestrator",
    role="orchestrator",
    handoffs=[
        Handoff(purpose="progress_ledger", to_argument="next_speaker.answer"),
        Handoff(purpose="final_answer", to=USER),
    ],
)


def ledger(speaker: object) -> str:
    return json.dumps(
        {"is_request_satisfied": {"answer": False, "reason": ""}, "next_speaker": {"answer": speaker, "reason": ""}}
    )


def test_a_progress_ledger_is_addressed_to_the_speaker_it_names_fenced_or_not() -> None:
    assert recipient_of_call("orchestrator", LEAD, "progress_ledger", [], ledger("bank_worker")) == "bank_worker"
    assert (
        recipient_of_call("orchestrator", LEAD, "progress_ledger", [], f"```json\n{ledger('bank_worker')}\n```")
        == "bank_worker"
    )


def test_a_ledger_naming_nobody_or_broken_stays_with_its_author() -> None:
    for text in (ledger(""), ledger(3), "{not json", "", json.dumps({"next_speaker": "bank_worker"})):
        assert recipient_of_call("orchestrator", LEAD, "progress_ledger", [], text) == "orchestrator"


def test_a_fixed_purpose_handoff_and_the_untouched_rules() -> None:
    assert recipient_of_call("orchestrator", LEAD, "final_answer", [], "Done.") == USER
    assert recipient_of_call("orchestrator", LEAD, "plan", [], "- step") == "orchestrator"  # a plan is a note to self
    assert recipient_of_call("orchestrator", LEAD, None, [], "text") == USER  # plain text: reports_to
    assert Handoff(tool="delegate", to_argument="worker").purpose is None  # tool handoffs read as before


MANAGER = AgentProfile(name="manager", role="manager", handoffs=[Handoff(addressed=r"^(\w+):")])
PER_WORKER = AgentProfile(
    name="manager", role="manager", handoffs=[Handoff(addressed=r"^bank_worker:", to="bank_worker")]
)


class _Call:
    name = "send_money"
    arguments = "{}"


def test_a_text_handoff_addresses_the_agent_its_pattern_names_and_otherwise_falls_through() -> None:
    """An AG2 group chat's manager delegates in the chat text (``<worker>: <instruction>``)."""
    for profile in (MANAGER, PER_WORKER):
        assert (
            recipient_of_call("manager", profile, None, [], "bank_worker: Call send_money with arguments {}")
            == "bank_worker"
        )
        assert (
            recipient_of_call("manager", profile, None, [], "The balance is 3. TERMINATE") == USER
        )  # no match: reports_to
        assert (
            recipient_of_call("manager", profile, None, [_Call()], "bank_worker: do it") == "environment"
        )  # a tool call is not text
        assert (
            recipient_of_call("manager", profile, "plan", [], "bank_worker: do it") == "manager"
        )  # another purpose: not this rule
    assert (
        recipient_of_call("manager", PER_WORKER, None, [], "slack_worker: read the channel") == USER
    )  # only the declared worker
    assert recipient_of_call("manager", MANAGER, None, [], "Ask bank_worker: later") == USER  # anchored at the start


def test_a_group_form_text_handoff_names_only_an_agent_of_the_roster() -> None:
    """``Note: ...`` at the start of a manager's message is not a handoff to an agent called Note."""
    known = {"manager", "bank_worker"}
    assert (
        recipient_of_call("manager", MANAGER, None, [], "Note: the balance is 3.", known=known) == USER
    )  # falls through to reports_to
    assert recipient_of_call("manager", MANAGER, None, [], "bank_worker: Call send_money", known=known) == "bank_worker"
    assert recipient_of_call("manager", MANAGER, None, [], "user: done", known=known) == USER
    assert (
        recipient_of_call("manager", MANAGER, None, [], "Note: the balance is 3.") == "Note"
    )  # no roster given: the pattern decides


def test_a_text_handoff_must_say_whom_it_addresses() -> None:
    for bad in (
        {"addressed": r"^\w+:"},
        {"addressed": "(", "to": "w"},
        {"addressed": r"^(\w+):", "tool": "ask"},
        {"addressed": r"^(\w+):", "to_argument": "worker"},
    ):
        with pytest.raises(ValidationError, match="addressed"):
            Handoff(**bad)
