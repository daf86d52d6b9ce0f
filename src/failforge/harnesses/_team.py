"""What the built-in multi-agent harnesses share: member configs, per-agent clients, a tool-using member.

Each member of a team talks to the model through its own client (``client.for_agent(name)`` on
failforge's boundary client, the explicit identity; elsewhere the ``X-Failforge-Agent`` header), so
every call is attributed to the agent that made it whatever the run mode. Members only see their own
tools: a call to any other tool is answered with an error message and never reaches the environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from failforge.errors import ConfigError
from failforge.llm import AGENT_HEADER, PURPOSE_HEADER


class TeamMember(BaseModel):
    """One agent of a team, exactly as it runs: recorded in the harness spec."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    role: str
    system_prompt: str
    description: str = ""
    tools: list[str] = Field(default_factory=list, description="the environment tools this agent is given")
    model: str | None = Field(default=None, description="this agent's model name (None: the run's model)")


class Sampling(BaseModel):
    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=256, ge=1)
    seed: int | None = 0

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.seed is not None:
            out["seed"] = self.seed
        return out


def member_client(client: openai.OpenAI, agent: str, purpose: str | None = None) -> openai.OpenAI:
    """A client whose calls belong to ``agent``: explicit on failforge's boundary, by header elsewhere."""
    for_agent = getattr(client, "for_agent", None)
    if for_agent is not None:
        return for_agent(agent, purpose)  # type: ignore[no-any-return]
    headers = {AGENT_HEADER: agent, **({PURPOSE_HEADER: purpose} if purpose else {})}
    return client.with_options(default_headers=headers)


def select_tools(schemas: list[dict[str, Any]], names: list[str], agent: str) -> list[dict[str, Any]]:
    by_name = {s["function"]["name"]: s for s in schemas}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ConfigError(
            f"agent {agent!r} is given tool(s) {', '.join(missing)} that this environment does not have (it has:"
            f" {', '.join(by_name)})"
        )
    return [by_name[n] for n in names]


def function_tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


@dataclass
class Call:
    id: str
    name: str
    arguments: str

    def parsed(self) -> dict[str, Any] | None:
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class Turn:
    content: str | None
    calls: list[Call]

    def entry(self) -> dict[str, Any]:
        """The assistant message to append to the member's history."""
        entry: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.calls:
            entry["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.calls
            ]
        return entry


def ask(
    client: openai.OpenAI,
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    sampling: Sampling,
) -> Turn:
    kwargs: dict[str, Any] = sampling.extra()
    if tools:
        kwargs["tools"] = tools
    completion = client.chat.completions.create(model=model, messages=messages, **kwargs)  # type: ignore[arg-type]
    message = completion.choices[0].message
    calls = [
        Call(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
        for c in message.tool_calls or []
        if c.type == "function"
    ]
    return Turn(content=message.content, calls=calls)


@dataclass
class ToolUser:
    """A member that works with its own tools until it answers in text; its history persists across tasks."""

    member: TeamMember
    client: openai.OpenAI
    model: str
    toolbox: Any
    sampling: Sampling
    messages: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tools = select_tools(self.toolbox.schemas(), self.member.tools, self.member.name)
        self.messages = [{"role": "system", "content": self.member.system_prompt}]

    def work(self, message: str, max_calls: int) -> str | None:
        """Take ``message`` (an instruction, a plan, feedback) and work until a text answer, or None at the limit."""
        self.messages.append({"role": "user", "content": message})
        own = set(self.member.tools)
        for _ in range(max_calls):
            turn = ask(self.client, self.member.model or self.model, self.messages, self.tools, self.sampling)
            self.messages.append(turn.entry())
            if not turn.calls:
                return turn.content or ""
            for call in turn.calls:
                if call.name in own:
                    result = self.toolbox.call(call.name, call.arguments, call.id)
                else:
                    result = f"Error: {call.name!r} is not one of your tools ({', '.join(self.member.tools) or 'none'})"
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None


def tool_list(tools: list[str]) -> str:
    return ", ".join(tools) if tools else "none"


__all__ = [
    "Call",
    "Sampling",
    "TeamMember",
    "ToolUser",
    "Turn",
    "ask",
    "function_tool",
    "member_client",
    "select_tools",
    "tool_list",
]
