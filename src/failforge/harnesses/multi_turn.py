"""A multi-turn function-calling loop: the user speaks again after each answer.

The plainest extension of :mod:`failforge.harnesses.tool_calling` to a conversation: per turn, call
the model until it answers in words (tool results go back as ``tool`` messages), then ask the toolbox
for the user's next message (``toolbox.next_turn()``, which records it as a user step, checked in replay
like any step) and go on with the whole history; the run ends when the user has nothing more to say.
The tool schemas are read before every model call, because an environment may offer more tools in a
later turn (BFCL's miss_func). A turn that reaches its model-call limit ends the run without an answer,
as BFCL force-terminates an entry. Like every harness it knows nothing of recording or injection.
"""

from __future__ import annotations

from typing import Any

import openai
from pydantic import BaseModel, Field

from failforge.environments import Toolbox
from failforge.errors import ConfigError
from failforge.harnesses._base import Harness
from failforge.harnesses.tool_calling import call_until_answer
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, single_agent_roster

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant that completes the user's requests by calling the available tools. "
    "At each turn, call the tools the request needs, read their results, and when the request is done "
    "reply with a short answer. If a request cannot be done with the tools you have, or lacks a detail "
    "you need, say so and ask instead of guessing."
)


class MultiTurnConfig(BaseModel):
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_model_calls_per_turn: int = Field(default=12, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=256, ge=1)
    seed: int | None = 0


@harnesses.register(
    "failforge.multi_turn", description="failforge's function-calling loop over a multi-turn conversation"
)
class MultiTurnAgent(Harness):
    name = "failforge.multi_turn"
    Config = MultiTurnConfig
    config: MultiTurnConfig

    def __init__(self, config: MultiTurnConfig | None = None) -> None:
        self.config = config or MultiTurnConfig()

    def roster(self) -> list[AgentProfile]:
        """One agent, ``agent``, talking with the user."""
        return single_agent_roster()

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Toolbox) -> str | None:
        """Every turn to its answer; the last turn's answer is returned, None when a turn hit the limit."""
        next_turn = getattr(toolbox, "next_turn", None)
        if not callable(next_turn):
            raise ConfigError(
                "harness failforge.multi_turn needs an environment with user turns (its toolbox has no next_turn); use"
                " failforge.tool_calling"
            )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.config.system_prompt},
            {"role": "user", "content": instruction},
        ]
        while True:
            answer = self._turn(client, model, messages, toolbox)
            if answer is None:
                return None
            question = next_turn()
            if question is None:
                return answer
            messages.append({"role": "user", "content": question})

    def _turn(self, client: openai.OpenAI, model: str, messages: list[dict[str, Any]], toolbox: Toolbox) -> str | None:
        cfg = self.config
        answered, content = call_until_answer(
            client,
            model,
            messages,
            toolbox,
            max_model_calls=cfg.max_model_calls_per_turn,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            seed=cfg.seed,
            reread_tools=True,
        )
        return (content or "") if answered else None
