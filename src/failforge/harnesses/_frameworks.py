"""What the framework adapters share: a team config, a roster, the tool bridge, and a scripted policy.

Every adapter runs the same topology in its own framework: a lead agent (manager, supervisor,
orchestrator) that hands one subtask at a time to a worker per tool domain, each worker using its
own subset of the environment's tools. The framework is imported inside ``run()`` only, so a missing
framework never breaks the harness registry; everything here is plain failforge.

The scripted policy is a deterministic model for such a team: a pure function of (calling agent, request), so
the same policy plays the team when served by a loopback OpenAI-compatible server (model-recorded
seeds), inside failforge as a team oracle (oracle seeds), and continues a branch live. Each adapter
only says how its framework spells a delegation, a tool call, a final answer and a tool result; the
class every adapter subclasses, and the one schema->tool bridge, are in :mod:`failforge.harnesses._adapter`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from failforge.errors import ConfigError
from failforge.harnesses._team import Sampling, TeamMember, tool_list
from failforge.llm import AgentScript, TeamOracle
from failforge.roster import USER, AgentProfile, Handoff

#: How a scripted lead phrases a subtask (the scripted worker reads it back).
INSTRUCTION = "Call {tool} with arguments {arguments} and report what it returns."
_INSTRUCTION = re.compile(r"Call (\w+) with arguments (\{.*?\}) and report what it returns\.", re.DOTALL)

LEAD_PROMPT = (
    "You lead a team of agents working on a user's task and do not use environment tools yourself. Your team:\n{team}\n"
    "Hand one subtask at a time to the worker whose tools fit, with every value it needs; read its report before "
    "the next step; when the task is done, give the final answer."
)
WORKER_PROMPT = (
    "You are {name}, a worker in a team. You handle {domain} with these tools: {tools}. Carry out the instruction "
    "you are given with your tools, one call at a time, then report what you did and found, with the exact values."
)


class FrameworkTeamConfig(BaseModel):
    """A lead and its workers, exactly as the adapter builds them (recorded in the harness spec)."""

    model_config = ConfigDict(extra="forbid")

    lead: TeamMember = Field(
        default_factory=lambda: TeamMember(
            name="manager", role="manager", system_prompt=LEAD_PROMPT.format(team="(no workers)")
        )
    )
    workers: list[TeamMember] = Field(default_factory=list)
    lead_max_steps: int = Field(default=12, ge=1, description="model calls the lead may make")
    worker_max_steps: int = Field(default=4, ge=1, description="model calls a worker may make per subtask")
    sampling: Sampling = Field(default_factory=Sampling)
    streaming: bool = Field(default=False, description="the framework streams every model call (stream=True)")
    asynchronous: bool = Field(
        default=False, description="run the framework's async entry point (frameworks with both)"
    )


def team_config(
    domains: dict[str, list[str]],
    *,
    lead_name: str,
    lead_role: str,
    budget: int,
    max_tokens: int | None,
    overrides: dict[str, Any],
) -> FrameworkTeamConfig:
    """One worker per tool domain (``banking`` -> ``banking_worker``), the lead told who does what."""
    workers = [
        TeamMember(
            name=f"{d}_worker",
            role="worker",
            description=f"{d} ({tool_list(tools)})",
            tools=list(tools),
            system_prompt=WORKER_PROMPT.format(name=f"{d}_worker", domain=d, tools=tool_list(tools)),
        )
        for d, tools in domains.items()
    ]
    team = "\n".join(f"- {w.name}: {w.description}" for w in workers)
    lead = TeamMember(
        name=lead_name,
        role=lead_role,
        description="hands out subtasks, answers the user",
        system_prompt=LEAD_PROMPT.format(team=team),
    )
    data: dict[str, Any] = {
        "lead": lead,
        "workers": workers,
        "lead_max_steps": max(4, budget),
        "sampling": Sampling(max_tokens=max_tokens),
    }
    data.update(overrides)
    return FrameworkTeamConfig.model_validate(data)


def team_roster(
    config: FrameworkTeamConfig,
    *,
    handoff_tool: str | None = None,
    report_tool: str | None = None,
    addressed_by: str | None = None,
    hand_back: str | None = None,
    members: Sequence[AgentProfile] = (),
) -> list[AgentProfile]:
    """The lead (opens rounds), ``members`` (agents the framework adds), and the workers.

    The lead's handoffs: a tool per worker, named after it or ``handoff_tool`` with ``{worker}``; or,
    with ``addressed_by``, the one tool ``handoff_tool`` whose argument of that name picks the worker.
    ``report_tool``: the tool a final answer is (the lead's goes to the user, a worker's to the lead);
    ``hand_back``: the tool (``{lead}`` for the lead's name) a worker transfers the conversation back with.
    """
    lead = config.lead
    if addressed_by:
        handoffs = [Handoff(tool=str(handoff_tool), to_argument=addressed_by)]
    else:
        handoffs = [
            (
                Handoff(tool=handoff_tool.format(worker=w.name), to=w.name)
                if handoff_tool
                else Handoff(tool=w.name, to=w.name)
            )
            for w in config.workers
        ]
    if report_tool:  # the lead's final answer is a tool call too: it goes to the user
        handoffs.append(Handoff(tool=report_tool, to=USER))
    profiles = [
        AgentProfile(
            name=lead.name,
            role=lead.role,
            description=lead.description,
            tools=[],
            reports_to="user",
            handoffs=handoffs,
            opens_rounds=True,
        )
    ]
    profiles += members
    back = (
        [Handoff(tool=report_tool, to=lead.name)]
        if report_tool
        else [Handoff(tool=hand_back.format(lead=lead.name), to=lead.name)]
        if hand_back
        else []
    )
    for w in config.workers:
        profiles.append(
            AgentProfile(
                name=w.name,
                role=w.role,
                description=w.description,
                tools=list(w.tools),
                reports_to=lead.name,
                handoffs=list(back),
                opens_rounds=False,
            )
        )
    return profiles


def need_workers(name: str, config: FrameworkTeamConfig) -> None:
    if not config.workers:
        raise ConfigError(
            f"{name} has no workers; build its config for an environment (failforge.seeds.harness_for) or list them in"
            " harness.config.workers"
        )


def require_framework(harness: str, module: str, extra: str) -> None:
    """Import ``module`` or say how to install it: a harness names its framework, never a bare ImportError."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"harness {harness!r} needs {module} ({exc}); install it: pip install 'failforge[{extra}]'"
        ) from None


def tool_schemas(toolbox: Any, names: list[str], agent: str) -> list[dict[str, Any]]:
    by_name = {s["function"]["name"]: s for s in toolbox.schemas()}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ConfigError(f"agent {agent!r} is given tool(s) {', '.join(missing)} that this environment does not have")
    return [by_name[n] for n in names]


def text_of(content: Any) -> str:
    """A message's text, whether the framework sent a string or a list of text parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def call_id(agent: str, messages: list[dict[str, Any]]) -> str:
    """A deterministic tool-call id, unique across the run: the agent, its turn, and its conversation."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()[:8]
    turn = sum(1 for m in messages if m.get("role") == "assistant")
    return f"call_{agent}_{turn}_{digest}"


def function_call(agent: str, messages: list[dict[str, Any]], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id(agent, messages),
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


Answer = tuple[str | None, list[dict[str, Any]] | None]


class TeamPolicy:
    """A deterministic team for one task: the lead hands out the ground-truth calls one by one, each to
    the worker that owns the tool, and answers ``final``; a worker makes the call it was told to make
    and reports what the tool returned. A pure function of (calling agent, request) — framework-specific
    spelling in the subclasses — so recording, replay and a live continuation all see the same behaviour.
    Served by a loopback server it is told the agent by route or header (``respond``); as a team oracle
    the boundary names it.
    """

    def __init__(self, config: FrameworkTeamConfig, calls: list[tuple[str, dict[str, Any]]], final: str) -> None:
        owner = {tool: w.name for w in config.workers for tool in w.tools}
        missing = sorted({tool for tool, _ in calls if tool not in owner})
        if missing:
            raise ConfigError(f"no worker owns tool(s) {', '.join(missing)}")
        self.config = config
        self.steps = [(owner[tool], tool, args) for tool, args in calls]
        self.final = final
        self.workers = {w.name for w in config.workers}

    # --- the framework's spelling (subclasses) ---------------------------------------------------

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        raise NotImplementedError

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        raise NotImplementedError

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        """The agent's final answer (the lead's to the user, a worker's report)."""
        raise NotImplementedError

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        """The result of the worker's last tool call, or None before it made one."""
        raise NotImplementedError

    def worker_call(self, agent: str, messages: list[dict[str, Any]], tool: str, arguments: dict[str, Any]) -> Answer:
        return None, [function_call(agent, messages, tool, arguments)]

    # --- the policy ------------------------------------------------------------------------------

    def respond(self, agent: str, body: dict[str, Any]) -> Answer:
        """``agent``'s answer to ``body``. The agent is the one the caller names (the client it was
        handed, its route, the boundary's header to the upstream), never guessed from the request."""
        messages = list(body.get("messages") or [])
        if agent not in self.workers:
            k = self.delegations_done(messages)
            if k < len(self.steps):
                worker, tool, args = self.steps[k]
                return self.delegate(messages, worker, INSTRUCTION.format(tool=tool, arguments=json.dumps(args)))
            return self.answer(agent, messages, self.final)
        result = self.tool_result(messages)
        # the latest instruction, from the lead (a user message, or the lead's own message in a shared history)
        instruction = next(
            (
                m
                for m in (
                    _INSTRUCTION.search(text_of(x.get("content")))
                    for x in reversed(messages)
                    if x.get("role") in ("user", "assistant")
                )
                if m
            ),
            None,
        )
        if instruction is None:
            return self.answer(
                agent, messages, "The instruction did not say which tool and values to use, so I did nothing."
            )
        if result is None:
            return self.worker_call(agent, messages, instruction.group(1), json.loads(instruction.group(2)))
        cut = result if len(result) <= 1500 else result[:1500] + " [...]"
        return self.answer(agent, messages, f"{instruction.group(1)} returned: {cut}")

    def stop_early(self, agent: str, body: dict[str, Any]) -> Answer:
        """Premature termination, as this framework spells it: a confident final answer, no more work."""
        messages = list(body.get("messages") or [])
        text = "All done: the task is complete." if agent not in self.workers else "Done; everything is in order."
        return self.answer(agent, messages, text)

    def agents(self) -> list[str]:
        return [self.config.lead.name, *self.workers]

    def oracle(self, name: str) -> TeamOracle:
        """The policy as a team oracle (oracle seeds through the normal record path): each agent's calls
        are answered as that agent, which the model boundary names."""

        def script(agent: str) -> AgentScript:
            return lambda ordinal, body, purpose: self.respond(agent, body)

        return TeamOracle({a: script(a) for a in self.agents()}, name=f"{name}.oracle")


__all__ = [
    "INSTRUCTION",
    "Answer",
    "FrameworkTeamConfig",
    "TeamPolicy",
    "call_id",
    "function_call",
    "need_workers",
    "require_framework",
    "team_config",
    "team_roster",
    "text_of",
    "tool_schemas",
]
