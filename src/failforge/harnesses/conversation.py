"""A two-party conversation harness: an agent serving a simulated user, both through failforge's model boundary.

tau2-bench's shape: the agent (role ``agent``) follows a written policy and calls the environment's
tools; the customer (role ``user``, the user simulator) is told a scenario, talks to the agent and, in
telecom, calls its own device tools. Each party has its own client (``member_client``), so every call
of either is recorded, replayed and branchable at the model boundary — the decisive step can be the
user's. tau2's rules are kept: the agent opens with tau2's fixed greeting (not a model call), a turn is
either a message or tool calls, the conversation ends when the user writes a stop token
(``###STOP###``, ``###TRANSFER###``, ``###OUT-OF-SCOPE###``) or at ``max_turns``.

The environment's toolbox supplies the conversation's parts (``toolbox.conversation()``: policy, user
scenario, user tool schemas, greeting); tool calls of either party go through the toolbox, which sends
user tools with requestor ``user``. A party calling a tool that is not its own gets an error message.
"""

from __future__ import annotations

from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from failforge.environments import Toolbox
from failforge.errors import ConfigError
from failforge.harnesses._base import Harness
from failforge.harnesses._team import Sampling, ask, member_client
from failforge.plugins import harnesses
from failforge.roster import AgentProfile

AGENT = "agent"
CUSTOMER = "customer"
STOP_TOKENS = ("###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###")

AGENT_INSTRUCTION = (
    "You are a customer service agent that helps the user according to the <policy> provided below.\nIn each turn you"
    " can either:\n- Send a message to the user.\n- Make a tool call.\nYou cannot do both at the same time.\n\nTry to"
    " be helpful and always follow the policy. Always make sure you generate valid JSON only."
)
USER_INSTRUCTION = (
    "You are playing a customer contacting a customer service agent, following the <scenario> below. Write one message"
    " at a time, as the customer would, revealing information only when it is asked for. Use your tools when the agent"
    " asks you to act on your device. When your goal is reached write ###STOP###; if you are transferred to a human"
    " write ###TRANSFER###."
)


class ConversationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=30, ge=1, description="agent/user exchanges before the run stops (tau2: max_steps)")
    max_calls_per_turn: int = Field(
        default=10, ge=1, description="model calls one party may make in one turn (tool loops)"
    )
    agent_instruction: str = AGENT_INSTRUCTION
    user_instruction: str = USER_INSTRUCTION
    user_model: str | None = Field(default=None, description="the customer's model (None: the run's model)")
    sampling: Sampling = Field(default_factory=lambda: Sampling(max_tokens=512))


def _stopped(text: str | None) -> bool:
    return bool(text) and any(token in (text or "") for token in STOP_TOKENS)


class _Party:
    def __init__(
        self,
        name: str,
        client: openai.OpenAI,
        model: str,
        system: str,
        tools: list[dict[str, Any]],
        toolbox: Toolbox,
        sampling: Sampling,
    ) -> None:
        self.name = name
        self.client = client
        self.model = model
        self.tools = tools
        self.own = {t["function"]["name"] for t in tools}
        self.toolbox = toolbox
        self.sampling = sampling
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

    def hear(self, text: str) -> None:
        """The other party's message: ``user`` in this party's own chat history (the other side speaks)."""
        self.messages.append({"role": "user", "content": text})

    def turn(self, max_calls: int) -> str | None:
        """Tool calls until a message; the message (None when the call budget ran out)."""
        for _ in range(max_calls):
            turn = ask(self.client, self.model, self.messages, self.tools or None, self.sampling)
            self.messages.append(turn.entry())
            if not turn.calls:
                return turn.content or ""
            for call in turn.calls:
                if call.name in self.own:
                    result = self.toolbox.call(call.name, call.arguments, call.id)
                else:
                    result = f"Error: {call.name!r} is not one of your tools"
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None


@harnesses.register(
    "failforge.conversation",
    aliases=("conversation",),
    description="an agent and a simulated user (tau2-bench's shape)",
)
class ConversationHarness(Harness):
    name = "failforge.conversation"
    Config = ConversationConfig
    config: ConversationConfig

    def __init__(self, config: ConversationConfig | None = None) -> None:
        self.config = config or ConversationConfig()

    def roster(self) -> list[AgentProfile]:
        """The agent (its plain messages go to the customer) and the customer (role ``user``; its messages go to the
        agent)."""
        return [
            AgentProfile(
                name=AGENT,
                role="agent",
                description="customer service agent under the domain policy",
                reports_to=CUSTOMER,
            ),
            AgentProfile(
                name=CUSTOMER, role="user", description="the simulated user, told the task's scenario", reports_to=AGENT
            ),
        ]

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        """Converse until the customer stops or ``max_turns``; return the agent's last message."""
        conversation = getattr(toolbox, "conversation", None)
        if conversation is None:
            raise ConfigError("harness failforge.conversation needs an environment with a simulated user (e.g. tau2)")
        parts = conversation()
        cfg = self.config
        agent_tools = toolbox.schemas()
        agent = _Party(
            AGENT,
            member_client(client, AGENT),
            model,
            f"<instructions>\n{cfg.agent_instruction}\n</instructions>\n<policy>\n{parts['policy']}\n</policy>",
            agent_tools,
            toolbox,
            cfg.sampling,
        )
        customer = _Party(
            CUSTOMER,
            member_client(client, CUSTOMER),
            cfg.user_model or model,
            f"{cfg.user_instruction}\n\n<scenario>\n{parts['user_scenario']}\n</scenario>",
            list(parts.get("user_tools") or []),
            toolbox,
            cfg.sampling,
        )
        greeting = str(parts.get("greeting") or "Hi! How can I help you today?")
        agent.messages.append({"role": "assistant", "content": greeting})
        customer.hear(greeting)
        last_agent: str | None = greeting
        for _ in range(cfg.max_turns):
            said = customer.turn(cfg.max_calls_per_turn)
            if said is None or _stopped(said):
                return last_agent
            agent.hear(said)
            reply = agent.turn(cfg.max_calls_per_turn)
            if reply is None:
                return last_agent
            last_agent = reply
            customer.hear(reply)
        return last_agent


__all__ = ["ConversationConfig", "ConversationHarness"]
