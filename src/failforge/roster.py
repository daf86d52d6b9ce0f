"""Who takes part in a run, and the rules that say whom every step is addressed to and where it sits.

A run has a roster: one :class:`AgentProfile` per agent (a stable name, a role, its tools, whom its
plain answers go to, which of its tool calls hand work to another agent, and whether its model calls
open a new round). From the roster alone, every step gets

- a **recipient**: the agent a model call's output is addressed to (a delegated worker, the
  orchestrator it reports to, the user, or ``environment`` for tool calls), the agent a tool
  observation goes back to, and the lead agent for the task itself;
- a **(round, position)** coordinate: a round opens at every model call of an agent whose profile
  ``opens_rounds`` (an orchestrator turn, a single agent's turn) and holds everything until the next
  one (the delegated worker's calls and tool results), so ``round.position`` reads like the
  coordinates multi-agent datasets use (Magentic-One logs: one orchestrator instruction and the
  worker's answer per round).

The rules are data-driven and deterministic, so the recorder, the replayer and the reader of an old
record all compute the same addresses: replay checks them like any other recorded field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from failforge.errors import ConfigError

USER = "user"
ENVIRONMENT = "environment"
#: Names that are not agents: the task's author and the tool side.
RESERVED_NAMES = frozenset({USER, ENVIRONMENT})
#: The agent of a single-agent run (and of every record written before rosters existed).
DEFAULT_AGENT = "agent"

#: Roles an agent may have. A harness spec or a record naming another role is rejected, because the
#: taxonomy decides where coordination errors can happen from the role (see COORDINATING_ROLES).
ROLES: dict[str, str] = {
    "agent": "a single agent that does the whole task itself",
    "orchestrator": (
        "keeps the plan and progress ledger, delegates one subtask at a time, decides when the task is done"
    ),
    "supervisor": "routes work among agents and collects their results",
    "manager": "drives agents that appear to it as tools",
    "planner": "writes the plan other agents carry out",
    "selector": "chooses which agent speaks next",
    "worker": "carries out delegated subtasks with its own tools and reports back",
    "executor": "carries out a plan with the tools",
    "verifier": "checks a result against the task and accepts it or sends it back",
    "user": "the simulated user of a conversation: told a scenario, talks to the agent, may act on its own side",
}
#: Roles whose messages to other agents delegate or assign work (where C.1 can happen).
COORDINATING_ROLES = frozenset({"orchestrator", "supervisor", "manager", "planner", "selector"})


class UnknownRole(ConfigError):
    """An agent's role is not one of :data:`ROLES`."""

    def __init__(self, agent: str, role: str) -> None:
        self.agent = agent
        self.role = role
        super().__init__(f"agent {agent!r} has the unknown role {role!r}; known roles: {', '.join(ROLES)}")


class Handoff(BaseModel):
    """A tool call of this agent that addresses another agent instead of the environment.

    ``to`` names the agent, or ``to_argument`` names the call argument that does (a ``delegate``
    tool whose ``worker`` argument picks the worker).

    With ``purpose`` instead of a tool, the rule is about the *text* of this agent's calls with that
    purpose, for frameworks that delegate in a structured answer rather than a tool call: ``to`` names
    the agent, or ``to_argument`` is a dotted path into the text's JSON object naming it (Magentic-One's
    progress ledger, ``next_speaker.answer``); a final answer made by a labelled call goes ``to`` the user.

    With ``addressed`` (a regular expression), the rule is about a plain answer's *text*, for frameworks
    whose agents address each other in the conversation itself (an AG2 group chat's manager writes
    ``banking_worker: <instruction>``): an answer without tool calls, of this rule's ``purpose`` (None:
    an unlabelled turn), whose text the expression matches (``re.search``) goes ``to`` the agent, or to
    the agent its first group names. A text that does not match falls through to the other rules, so a
    final answer still goes to ``reports_to``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = ""
    to: str | None = None
    to_argument: str | None = None
    purpose: str | None = None
    addressed: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Handoff:
        if self.addressed is None:
            return self
        if self.tool or self.to_argument is not None:
            raise ValueError(
                f"handoff addressed={self.addressed!r}: a text rule takes 'to' or its pattern's first group, not 'tool'"
                " or 'to_argument'"
            )
        try:
            groups = re.compile(self.addressed).groups
        except re.error as exc:
            raise ValueError(f"handoff addressed={self.addressed!r}: not a regular expression ({exc})") from None
        if self.to is None and groups < 1:
            raise ValueError(
                f"handoff addressed={self.addressed!r}: without 'to', the pattern needs a group naming the agent, e.g."
                " '^(\\w+):'"
            )
        return self


class AgentProfile(BaseModel):
    """One agent of a run, as the harness declares it (and the trajectory records it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    role: str = DEFAULT_AGENT
    description: str = ""
    tools: list[str] = Field(default_factory=list, description="environment tools this agent may call")
    reports_to: str = Field(default=USER, description="recipient of this agent's plain answers (no tool call)")
    handoffs: list[Handoff] = Field(default_factory=list)
    opens_rounds: bool = Field(default=True, description="each of its model calls opens a new round")


def check_roster(profiles: Sequence[AgentProfile]) -> None:
    """Names unique and not reserved, roles known; raise :class:`UnknownRole` or ConfigError naming the agent."""
    seen: set[str] = set()
    for profile in profiles:
        if profile.name in RESERVED_NAMES:
            raise ConfigError(
                f"{profile.name!r} cannot be an agent's name: it stands for the"
                f" {'task' if profile.name == USER else 'tools'}"
            )
        if profile.name in seen:
            raise ConfigError(f"agent {profile.name!r} appears twice in the roster")
        seen.add(profile.name)
        if profile.role not in ROLES:
            raise UnknownRole(profile.name, profile.role)


def single_agent_roster(names: Iterable[str] = (DEFAULT_AGENT,)) -> list[AgentProfile]:
    return [AgentProfile(name=name) for name in names]


class _Call(Protocol):
    name: str
    arguments: str


def recipient_of_call(
    agent: str,
    profile: AgentProfile | None,
    purpose: str | None,
    tool_calls: Sequence[_Call],
    content: str | None = None,
    known: Collection[str] | None = None,
) -> str:
    """Whom a model call's output is addressed to.

    A handoff tool call addresses its agent; any other tool call addresses the environment; plain text
    goes to ``reports_to``, except the output of a purpose-tagged call (a plan, a ledger, a speaker
    choice), which the agent keeps for itself unless a purpose handoff addresses it (a progress ledger
    naming the next speaker, a labelled final answer to the user). A text handoff (``addressed``)
    that matches the answer's text is tried first; with ``known`` (the roster's agent names), a name its
    pattern's group captures must be one of them or the user, so a line such as ``Note: ...`` in a chat
    message is not a handoff to an agent called ``Note``.
    """
    rules = profile.handoffs if profile else []
    if not tool_calls:
        for spoken in rules:
            if spoken.addressed is not None and spoken.purpose == (purpose or None):
                named = _addressee(spoken, content or "")
                if named and (spoken.to is not None or known is None or named in known or named == USER):
                    return named
    if purpose and not tool_calls:
        for labelled in rules:
            if labelled.addressed is None and labelled.purpose == purpose:
                if labelled.to is not None:
                    return labelled.to
                target = _json_path(content or "", labelled.to_argument or "")
                return target if target else agent
    handoffs = {h.tool: h for h in rules if h.purpose is None and h.addressed is None}
    for call in tool_calls:
        rule = handoffs.get(call.name)
        if rule is None:
            continue
        if rule.to is not None:
            return rule.to
        target = _argument(call.arguments, rule.to_argument or "")
        return target if target else agent
    if tool_calls:
        return ENVIRONMENT
    if purpose:
        return agent
    return profile.reports_to if profile else USER


def _addressee(rule: Handoff, text: str) -> str | None:
    """The agent a text handoff's pattern finds in ``text``: ``rule.to``, else its first group; None: no match."""
    match = re.search(rule.addressed or "", text)
    if match is None:
        return None
    if rule.to is not None:
        return rule.to
    named = match.group(1)
    return named.strip() if named and named.strip() else None


def _json_path(text: str, path: str) -> str | None:
    """The string at dotted ``path`` in the JSON object ``text`` holds (fenced or not), or None."""
    start, end = text.find("{"), text.rfind("}")
    try:
        value: Any = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except (json.JSONDecodeError, RecursionError):
        return None
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _argument(arguments: str, key: str) -> str | None:
    try:
        value: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get(key), str) and value[key].strip():
        return str(value[key]).strip()
    return None


class RoundClock:
    """Places steps in rounds as they are appended: ``place(kind, agent) -> (round, position)``.

    Round 0 holds the task. A model call of an agent whose profile opens rounds starts the next round
    at position 0; every other step takes the next position in the current round.
    """

    def __init__(self, profiles: Sequence[AgentProfile]) -> None:
        self._opens = {p.name: p.opens_rounds for p in profiles}
        self.round = 0
        self.position = -1

    def add(self, profile: AgentProfile) -> None:
        self._opens[profile.name] = profile.opens_rounds

    def place(self, kind: str, agent: str) -> tuple[int, int]:
        if kind == "task":
            self.round, self.position = 0, 0
        elif kind == "agent" and self._opens.get(agent, True):
            self.round, self.position = self.round + 1, 0
        else:
            self.position += 1
        return self.round, self.position


class _Step(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def tool_calls(self) -> Any: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def model_call(self) -> Any: ...


class StepAddresser:
    """Addresses steps in the order they happen: ``address(step) -> (recipient, round, position)``.

    Incremental (one call per appended step) so a run's log, a replay and the reader of an old record
    compute the same values the same way. A tool observation goes back to the agent whose call it
    answers (by tool-call id, else the last agent that called a tool).
    """

    def __init__(self, profiles: Sequence[AgentProfile]) -> None:
        self._profiles = {p.name: p for p in profiles}
        self.lead = profiles[0].name if profiles else DEFAULT_AGENT
        self._clock = RoundClock(profiles)
        self._callers: dict[str, str] = {}
        self._last_caller: str | None = None

    def add(self, profile: AgentProfile) -> None:
        """An agent that joined an open roster mid-run."""
        self._profiles[profile.name] = profile
        self._clock.add(profile)

    def address(self, step: _Step) -> tuple[str, int, int]:
        if step.kind == "task":
            recipient = self.lead
        elif step.kind == "agent":
            purpose = getattr(step.model_call, "purpose", None) if step.model_call is not None else None
            recipient = recipient_of_call(
                step.agent,
                self._profiles.get(step.agent),
                purpose,
                step.tool_calls,
                getattr(step, "content", None),
                known=self._profiles.keys(),
            )
            for call in step.tool_calls:
                self._callers[call.id] = step.agent
            if step.tool_calls:
                self._last_caller = step.agent
        else:
            caller = self._callers.get(step.tool_call_id) if step.tool_call_id else None
            recipient = caller or self._last_caller or self.lead
        round_, position = self._clock.place(step.kind, step.agent)
        return recipient, round_, position


__all__ = [
    "COORDINATING_ROLES",
    "DEFAULT_AGENT",
    "ENVIRONMENT",
    "RESERVED_NAMES",
    "ROLES",
    "USER",
    "AgentProfile",
    "Handoff",
    "RoundClock",
    "StepAddresser",
    "UnknownRole",
    "check_roster",
    "recipient_of_call",
    "single_agent_roster",
]
