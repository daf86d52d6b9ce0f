"""The deterministic team policy spelled as crewAI's hierarchical process spells a delegation.

crewAI (1.15) gives a crew's ``manager_agent`` two tools of its own, ``delegate_work_to_coworker`` and
``ask_question_to_coworker`` (``crewai/tools/agent_tools/delegate_work_tool.py``), each with the
arguments ``task``/``question``, ``context`` and ``coworker`` (the worker's role). The named worker runs
the subtask as a task of its own — its user message is ``Current Task: <task>`` followed by the
context — and its final answer comes back to the manager as that tool call's result. With native
function calling a final answer is a plain assistant message without tool calls; a worker's tool
result is a ``tool`` message. So the lead's policy counts its own delegations, and the worker's reads
the instruction from its task and the result from its last tool message.
"""

from __future__ import annotations

from typing import Any

from external_teams import roster_for

from failforge.harnesses._frameworks import Answer, TeamPolicy, function_call, text_of
from failforge.roster import AgentProfile, Handoff

#: The manager's delegation tool as crewAI names it to the model (``DelegateWorkTool.name``, sanitized).
DELEGATE = "delegate_work_to_coworker"
#: The manager's other coworker tool (a question; its answer comes back the same way).
ASK = "ask_question_to_coworker"
#: What the policy's manager puts in ``context``: the instruction already holds every value.
CONTEXT = "The instruction holds every value needed; report the exact result."


def crewai_roster(suite: str) -> list[AgentProfile]:
    """:func:`external_teams.roster_for` with the manager's handoffs as crewAI spells them: one tool for
    every worker, the worker named by its ``coworker`` argument (the worker's role, which the team
    script sets to its roster name)."""
    lead, *workers = roster_for(suite)
    handoffs = [Handoff(tool=DELEGATE, to_argument="coworker"), Handoff(tool=ASK, to_argument="coworker")]
    return [lead.model_copy(update={"handoffs": handoffs}), *workers]


class CrewAIHierarchicalPolicy(TeamPolicy):
    """The manager delegates each ground-truth call with crewAI's ``delegate_work_to_coworker``; the
    worker named as ``coworker`` makes the call and reports; answers are plain text."""

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if c["function"]["name"] == DELEGATE
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        arguments = {"task": instruction, "context": CONTEXT, "coworker": worker}
        return None, [function_call(self.config.lead.name, messages, DELEGATE, arguments)]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return text_of(last.get("content")) if last.get("role") == "tool" else None


__all__ = ["ASK", "CONTEXT", "DELEGATE", "CrewAIHierarchicalPolicy", "crewai_roster"]
