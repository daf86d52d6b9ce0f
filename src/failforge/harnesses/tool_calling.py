"""The built-in function-calling agent: the plainest loop over the chat-completions API.

System prompt, task, tool schemas; each model call either calls tools (results go back as ``tool``
messages) or answers, which ends the run; a step limit stops runaway loops. It knows nothing of
recording, replay or injection: those happen at the client it is given and at the toolbox.
"""

from __future__ import annotations

from typing import Any

import openai
from pydantic import BaseModel, Field

from failforge.environments import Toolbox
from failforge.harnesses._base import Harness
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, single_agent_roster

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that completes the user's task by calling the available tools. "
    "Call one tool at a time, read its result, and when the task is done reply with a short final answer "
    "that states the result."
)


class ToolCallingAgentConfig(BaseModel):
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_model_calls: int = Field(default=12, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=256, ge=1)
    seed: int | None = 0


@harnesses.register("failforge.tool_calling", aliases=("builtin",), description="failforge's own function-calling loop")
class ToolCallingAgent(Harness):
    name = "failforge.tool_calling"
    Config = ToolCallingAgentConfig
    config: ToolCallingAgentConfig

    def __init__(self, config: ToolCallingAgentConfig | None = None) -> None:
        self.config = config or ToolCallingAgentConfig()

    def roster(self) -> list[AgentProfile]:
        """One agent, ``agent``, doing the whole task."""
        return single_agent_roster()

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Toolbox) -> str | None:
        """Run to a final answer (returned) or to the step limit (None)."""
        cfg = self.config
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": cfg.system_prompt},
            {"role": "user", "content": instruction},
        ]
        answered, content = call_until_answer(
            client,
            model,
            messages,
            toolbox,
            max_model_calls=cfg.max_model_calls,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            seed=cfg.seed,
        )
        return content if answered else None


def call_until_answer(
    client: openai.OpenAI,
    model: str,
    messages: list[dict[str, Any]],
    toolbox: Toolbox,
    *,
    max_model_calls: int,
    temperature: float,
    max_tokens: int | None,
    seed: int | None,
    reread_tools: bool = False,
) -> tuple[bool, str | None]:
    """Call the model on ``messages`` (extended in place) until it answers without tool calls: (True, its text),
    or (False, None) after ``max_model_calls``. Each tool call goes through ``toolbox`` and its result back as a
    ``tool`` message. ``reread_tools``: ask the toolbox for its schemas before every call (an environment that
    offers more tools later, BFCL's miss_func); otherwise once, so a request is the same as it always was."""
    extra: dict[str, Any] = {}
    if max_tokens is not None:
        extra["max_tokens"] = max_tokens
    if seed is not None:
        extra["seed"] = seed
    tools = None if reread_tools else toolbox.schemas()
    for _ in range(max_model_calls):
        if reread_tools or tools is None:
            tools = toolbox.schemas()
        completion = client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            tools=tools,  # type: ignore[arg-type]
            temperature=temperature,
            **extra,  # type: ignore[arg-type]
        )
        message = completion.choices[0].message
        calls = [
            c for c in message.tool_calls or [] if c.type == "function"
        ]  # custom (non-function) tools are never offered
        entry: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            entry["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        messages.append(entry)
        if not calls:
            return True, message.content
        for call in calls:
            result = toolbox.call(call.function.name, call.function.arguments or "", call.id)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return False, None
