"""The deterministic team model as agno spells a team (``examples/external/agno_team.py``).

An agno ``Team`` in coordinate mode gives its leader one delegation tool for all members,
``delegate_task_to_member(member_id, task)`` (agno/team/_default_tools.py), whose result is the
member's final answer; a member is an ordinary agno ``Agent`` that gets the task as its user message
and calls its MCP tools. So the lead's handoff is one tool whose ``member_id`` argument names the
worker (``Handoff.to_argument``), not a tool per worker as in :class:`AgentsAsToolsPolicy`; answers
and tool results are spelled as there (plain text, the ``tool`` message).
"""

from __future__ import annotations

from typing import Any

from external_teams import AgentsAsToolsPolicy, roster_for

from failforge.harnesses._frameworks import Answer, function_call
from failforge.roster import AgentProfile, Handoff

#: agno's delegation tool and its arguments (agno/team/_default_tools.py, ``delegate_task_to_member``).
DELEGATE = "delegate_task_to_member"
MEMBER_ARGUMENT = "member_id"
TASK_ARGUMENT = "task"


def agno_roster(suite: str) -> list[AgentProfile]:
    """The suite's lead and workers (:func:`roster_for`), the lead handing work over with agno's one
    delegation tool, whose ``member_id`` names the worker."""
    lead, *workers = roster_for(suite)
    lead = lead.model_copy(update={"handoffs": [Handoff(tool=DELEGATE, to_argument=MEMBER_ARGUMENT)]})
    return [lead, *workers]


class AgnoTeamPolicy(AgentsAsToolsPolicy):
    """The lead delegates with ``delegate_task_to_member(member_id=<worker>, task=<instruction>)``."""

    handoff = DELEGATE
    argument = TASK_ARGUMENT

    def _is_handoff(self, call: dict[str, Any]) -> bool:
        return bool(call["function"]["name"] == DELEGATE)

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        arguments = {MEMBER_ARGUMENT: worker, TASK_ARGUMENT: instruction}
        return None, [function_call(self.config.lead.name, messages, DELEGATE, arguments)]


__all__ = ["DELEGATE", "AgnoTeamPolicy", "agno_roster"]
