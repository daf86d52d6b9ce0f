"""The oracle conversation: both parties played deterministically from a task's ground truth, no model.

The agent replays the task's ground-truth actions whose requestor is ``assistant``, in order. Before
each write (a tool tau2 types ``ToolType.WRITE``) it asks the customer to confirm it, naming the call and
its arguments, as the domain policies require ("obtain explicit user confirmation (yes)"), and makes the
call in its next turn. When the next action is the user's (telecom's device actions) it asks the user to
perform it; when none is left it sends one final message carrying every ``communicate_info`` string.
The scripted customer opens with the scenario's reason for calling and what it knows, performs the
user-side actions it is asked for (as its own tool calls), confirms anything else ("yes, please go
ahead"), and ends with tau2's ``###STOP###`` once the agent's final message has arrived.

The confirmations are what give the customer decisive steps in the middle of a conversation: a
customer who ends the call, or refuses, at a confirmation leaves a write undone, and tau2's DB check
says so. One cursor over the actions is shared by the two scripts: the harness alternates them, so the
cursor says whose turn the next action is.
"""

from __future__ import annotations

import json
from typing import Any

from failforge.environments.tau2._package import AGENT, CUSTOMER
from failforge.llm import TeamOracle, oracle_tool_call

STOP = "###STOP###"
CONFIRM = "Yes, that is right. Please go ahead."
ASK = "Before I go ahead: I will call {name} with {arguments}. Do you confirm (yes/no)?"


def confirmation_request(action: Any) -> str:
    """The agent's confirmation question for a write, naming the call and its arguments."""
    return ASK.format(name=action.name, arguments=json.dumps(dict(action.arguments), sort_keys=True))


def opening(task: Any) -> str:
    """The scripted customer's first message: its reason for calling and what it knows."""
    instructions = task.user_scenario.instructions
    if isinstance(instructions, str):
        return instructions
    parts = [getattr(instructions, "reason_for_call", None), getattr(instructions, "known_info", None)]
    return "\n".join(str(p).strip() for p in parts if p) or "Hello, I need help."


def final_message(task: Any) -> str:
    info = list((task.evaluation_criteria.communicate_info or []) if task.evaluation_criteria else [])
    return "Everything is done." + (" " + " ".join(str(i) for i in info) if info else "")


class _Script:
    def __init__(self, task: Any, writes: frozenset[str]) -> None:
        criteria = task.evaluation_criteria
        self.actions = list((criteria.actions or []) if criteria else [])
        self.task = task
        self.writes = writes
        self.cursor = 0
        self.confirmed = -1  # the cursor position whose write the customer was asked to confirm
        self.final_sent = False

    def _pending(self, requestor: str) -> Any | None:
        if self.cursor < len(self.actions) and self.actions[self.cursor].requestor == requestor:
            return self.actions[self.cursor]
        return None

    def _call(self, agent: str, ordinal: int) -> list[dict[str, Any]]:
        action = self.actions[self.cursor]
        self.cursor += 1
        return [oracle_tool_call(agent, ordinal, action.name, dict(action.arguments))]

    def agent(
        self, ordinal: int, body: dict[str, Any], purpose: str | None
    ) -> tuple[str | None, list[dict[str, Any]] | None]:
        action = self._pending("assistant")
        if action is not None:
            if action.name in self.writes and self.confirmed != self.cursor:
                self.confirmed = self.cursor
                return confirmation_request(action), None
            return None, self._call(AGENT, ordinal)
        user_action = self._pending("user")
        if user_action is not None:
            return (
                (
                    f"Please do this on your side: {user_action.name}"
                    f" {json.dumps(dict(user_action.arguments), sort_keys=True)}."
                ),
                None,
            )
        self.final_sent = True
        return final_message(self.task), None

    def customer(
        self, ordinal: int, body: dict[str, Any], purpose: str | None
    ) -> tuple[str | None, list[dict[str, Any]] | None]:
        if ordinal == 0:
            return opening(self.task), None
        if self._pending("user") is not None:
            return None, self._call(CUSTOMER, ordinal)
        if self.final_sent:
            return STOP, None
        return CONFIRM, None


def conversation_oracle(task: Any, writes: frozenset[str] = frozenset()) -> TeamOracle:
    """Agent and customer of one task, played from its ground truth (see the module docstring); ``writes``
    are the tools the agent asks the customer to confirm first."""
    script = _Script(task, writes)
    return TeamOracle({AGENT: script.agent, CUSTOMER: script.customer}, name=f"tau2.ground_truth:{task.id}")
