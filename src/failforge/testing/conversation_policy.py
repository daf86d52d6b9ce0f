"""A deterministic tau2 conversation for tests and campaign scripts: both parties, a pure function of the request.

The agent plays what the oracle plays (``environments/tau2/_oracle.py``): the task's assistant ground truth,
counted from its own history, asking the customer to confirm each write first, and a final message with the
task's ``communicate_info``. Unlike the oracle it *reads*: it uses the values (order numbers, zip codes, ids)
the customer actually stated where the ground truth uses the scenario's, and when a tool answers with an error
after the customer stated a value other than the scenario's, it says it cannot go on — what a careful agent
does, so a customer's misstated id has its consequence (errors the ground truth itself meets, such as a
product id that is not found, are gone past as the oracle does). The
customer opens with its scenario, confirms, and stops after the agent's final message (``###TRANSFER###``
after a transfer to a human).

Under a steering note (the rule guide's wording, ``injection/_rules.py`` and ``_user_rules.py``) either party
makes the named mistake: A.5 (answer or hang up now, or transfer to a human), R.3 (a figure in the answer, or a
number in a call's argument), A.2 (another value in a call's argument), R.1 at the customer's step (a value
misstated). The guide model is told every other note is not feasible, and the judge says "no": only rule-
written, rule-checked mistakes come out of a campaign run against it.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from failforge.environments.tau2 import CONFIRM, STOP, confirmation_request, final_message, opening, task, write_tools
from failforge.injection import NOTE_PREFIX
from failforge.testing.model_servers import NoScriptedAnswer

TRANSFER_TOOL = "transfer_to_human_agents"
TRANSFERRED = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
SORRY = "Sorry, I cannot go on: "
_VALUE = re.compile(r"#?[A-Za-z0-9][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*")
_WRITE_AS = re.compile(r"write (\S+) where you would write (\S+),")
_FIGURE = re.compile(r"state the figure as (\S+?)\.$")
_ARGUMENT = re.compile(r"Call (\w+)(?: now)? with (\w+) = (.+?)(?:, keeping its other arguments as you would)?\.$")

Reply = tuple[str | None, list[dict[str, Any]] | None]


def _call(name: str, arguments: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [
        {"id": f"call_agent_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    ]


def _literal(text: str) -> Any:
    """A value as the rule guide's note writes it (``show``: strings in single quotes, numbers and lists as code)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


class ConversationPolicy:
    """Agent and customer of one tau2 task (``domain``, ``task_id``), as ``LoopbackModelServer(agent_policy=...)``."""

    def __init__(self, domain: str, task_id: str, split: str = "base") -> None:
        self.task = task(domain, split, task_id)
        self.actions = [a for a in self.task.evaluation_criteria.actions if a.requestor == "assistant"]
        self.writes = write_tools(domain)
        self.info = list(self.task.evaluation_criteria.communicate_info or [])

    # -- the customer ------------------------------------------------------------------------------

    def customer(self, messages: list[dict[str, Any]], note: str) -> Reply:
        last = str(messages[-1].get("content") or "") if messages else ""
        opened = any(m.get("role") == "assistant" for m in messages)
        if note:
            told = _WRITE_AS.search(note)
            if told and not opened:  # R.1: the customer misstates one value of its opening
                return opening(self.task).replace(told.group(2), told.group(1)), None
            return STOP, None  # A.5: the customer ends the conversation now
        if not opened:
            return opening(self.task), None
        if TRANSFERRED in last:
            return "###TRANSFER###", None
        if last.startswith(("Everything is done", SORRY)):
            return STOP, None
        return CONFIRM, None

    # -- the agent ---------------------------------------------------------------------------------

    def _stated(self, messages: list[dict[str, Any]]) -> dict[str, str]:
        """Scenario value -> the value the customer stated instead (the customer's first message with values)."""
        said = next(
            (
                str(m.get("content"))
                for m in messages
                if m.get("role") == "user" and _VALUE.search(str(m.get("content") or ""))
            ),
            "",
        )
        return {
            known: given
            for known, given in zip(_VALUE.findall(opening(self.task)), _VALUE.findall(said), strict=False)
            if known != given
        }

    def _next(self, messages: list[dict[str, Any]]) -> Reply:
        mine = [m for m in messages if m.get("role") == "assistant"]
        done = sum(1 for m in mine if m.get("tool_calls"))
        if done >= len(self.actions):
            return final_message(self.task), None
        action = self.actions[done]
        asked = bool(mine) and mine[-1].get("content") == confirmation_request(action)
        if action.name in self.writes and not (asked and messages[-1].get("content") == CONFIRM):
            return confirmation_request(action), None
        arguments = json.dumps(dict(action.arguments))
        for known, given in self._stated(messages).items():
            arguments = arguments.replace(json.dumps(known), json.dumps(given))
        return None, _call(action.name, json.loads(arguments), done)

    def agent(self, messages: list[dict[str, Any]], note: str) -> Reply:
        last = messages[-1] if messages else {}
        n = sum(1 for m in messages if m.get("role") == "assistant")
        if note:
            return self._noted(messages, note, n)
        if last.get("role") == "tool" and "Transfer successful" in str(last.get("content")):
            return TRANSFERRED, None
        if last.get("role") == "tool" and str(last.get("content") or "").startswith("Error") and self._stated(messages):
            return SORRY + str(last.get("content")), None  # what the customer stated is not found: it cannot go on
        return self._next(messages)

    def _noted(self, messages: list[dict[str, Any]], note: str, n: int) -> Reply:
        if TRANSFER_TOOL in note:
            return None, _call(TRANSFER_TOOL, {"summary": "the customer's request"}, n)
        content, calls = self._next(messages)
        figure = _FIGURE.search(note)
        if figure and content and content.startswith("Everything is done") and self.info:
            return content.replace(" ".join(self.info), figure.group(1)), None
        argument = _ARGUMENT.search(note)
        if argument and calls and calls[0]["function"]["name"] == argument.group(1):
            arguments = json.loads(calls[0]["function"]["arguments"])
            arguments[argument.group(2)] = _literal(argument.group(3))
            return None, _call(argument.group(1), arguments, n)
        if note.startswith(("Give the user your final answer now", "End the conversation now")):
            return final_message(self.task), None
        return content, calls  # a note this policy does not act on: the seed's own step (rejected as not exhibited)

    def __call__(self, agent: str | None, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        system = str((messages[0] or {}).get("content") or "") if messages else ""
        if "realistic mistakes" in system:  # the model guide: only the rule guide's notes are played
            return "NOT FEASIBLE", None
        if system.startswith("You check the labels"):
            return "EXHIBITED: no\nRATIONALE: the loopback policy does not judge semantic modes.", None
        last = messages[-1] if messages else {}
        noted = last.get("role") in ("system", "developer") and str(last.get("content") or "").startswith(NOTE_PREFIX)
        note = str(last.get("content") or "").removeprefix(NOTE_PREFIX).strip() if noted else ""
        seen = messages[:-1] if noted else messages
        if agent == "customer":
            return self.customer(seen, note)
        if agent == "agent":
            return self.agent(seen, note)
        raise NoScriptedAnswer(
            f"the tau2 conversation has the parties agent and customer, not {agent!r}: name one by the route"
            " /agents/NAME/v1 or the header X-Failforge-Agent"
        )
