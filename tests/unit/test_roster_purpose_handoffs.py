"""A purpose handoff addresses the text of a labelled call: Magentic-One's progress ledger delegates in
JSON (its ``next_speaker``), not with a tool call, and its final answer is a labelled call to the user."""

from __future__ import annotations

import json

from failforge.roster import USER, AgentProfile, Handoff, recipient_of_call

LEAD = AgentProfile(name="orchestrator", role="orchestrator", handoffs=[Handoff(purpose="progress_ledger", to_argument="next_speaker.answer"),
                                                                        Handoff(purpose="final_answer", to=USER)])


def ledger(speaker: object) -> str:
    return json.dumps({"is_request_satisfied": {"answer": False, "reason": ""}, "next_speaker": {"answer": speaker, "reason": ""}})


def test_a_progress_ledger_is_addressed_to_the_speaker_it_names_fenced_or_not() -> None:
    assert recipient_of_call("orchestrator", LEAD, "progress_ledger", [], ledger("bank_worker")) == "bank_worker"
    assert recipient_of_call("orchestrator", LEAD, "progress_ledger", [], f"```json\n{ledger('bank_worker')}\n```") == "bank_worker"


def test_a_ledger_naming_nobody_or_broken_stays_with_its_author() -> None:
    for text in (ledger(""), ledger(3), "{not json", "", json.dumps({"next_speaker": "bank_worker"})):
        assert recipient_of_call("orchestrator", LEAD, "progress_ledger", [], text) == "orchestrator"


def test_a_fixed_purpose_handoff_and_the_untouched_rules() -> None:
    assert recipient_of_call("orchestrator", LEAD, "final_answer", [], "Done.") == USER
    assert recipient_of_call("orchestrator", LEAD, "plan", [], "- step") == "orchestrator"  # a plan is a note to self
    assert recipient_of_call("orchestrator", LEAD, None, [], "text") == USER  # plain text: reports_to
    assert Handoff(tool="delegate", to_argument="worker").purpose is None  # tool handoffs read as before
