"""``autogen``: an AutoGen AgentChat SelectorGroupChat: a manager and one worker per tool domain, one shared client.

The team: a ``manager`` AssistantAgent that hands one subtask at a time to a worker with its
``assign(worker, instruction)`` tool (the call's summary, ``worker: instruction``, is what the group
sees) and finally answers (ending with ``TERMINATE``), and a worker AssistantAgent per tool domain
whose tools are a workbench calling failforge's tool boundary (it reflects on each tool result, so
its report is a model call of its own). Between turns the group chat's selector asks the model who
speaks next.

Every agent, the selector included, shares **one** ``OpenAIChatCompletionClient``, as AutoGen users
commonly set it up: nothing at the HTTP level tells the agents apart. Identity comes from AutoGen's
own message context instead (:meth:`AutoGenTeam.agent_resolver`, the boundary's in-process identity
source): ``MessageHandlerContext.agent_id()`` names the agent whose handler is running
(``banking_worker_<team uuid>``; the uuid, minted anew on every run, is stripped), and the selector's
calls, made by the group chat manager, are attributed to the ``selector`` with purpose
``speaker_selection``. The client's retries are off, tool calls are sequential
(``parallel_tool_calls=False``), and ``streaming`` streams every agent's and the selector's calls.
"""

from __future__ import annotations

import re
from typing import Any

import openai

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, run_async
from failforge.harnesses._frameworks import Answer, TeamPolicy, function_call
from failforge.llm import AgentIdentity
from failforge.plugins import harnesses
from failforge.roster import AgentProfile

NAME = "autogen"
SELECTOR = "selector"
SELECTION = "speaker_selection"
DONE = "TERMINATE"
ASSIGN = "assign"
_TEAM_SUFFIX = re.compile(r"_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
    "multiple_system_messages": True,
}


def agent_of_handler(agent_type: str) -> AgentIdentity:
    """The failforge identity of an AutoGen handler's agent type (the team's uuid suffix stripped)."""
    base = _TEAM_SUFFIX.sub("", agent_type)
    if base.endswith("GroupChatManager"):
        return AgentIdentity(SELECTOR, SELECTION, "resolver")
    return AgentIdentity(base, None, "resolver")


def boundary_workbench(tools: list[BoundaryTool]) -> Any:
    """An AutoGen workbench whose tools are a worker's environment tools, every call through failforge's
    tool boundary (shared by the AutoGen adapters: SelectorGroupChat, Magentic-One)."""
    from autogen_core.tools import StaticWorkbench, TextResultContent, ToolResult

    by_name = {t.name: t for t in tools}

    class BoundaryWorkbench(StaticWorkbench):
        async def list_tools(self) -> list[Any]:
            return [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]

        async def call_tool(
            self, name: str, arguments: Any = None, cancellation_token: Any = None, call_id: str | None = None
        ) -> Any:
            tool = by_name.get(name)
            if tool is None:  # AssistantAgent only calls listed tools; as StaticWorkbench answers otherwise
                return ToolResult(
                    name=name, result=[TextResultContent(content=f"Tool {name} not found.")], is_error=True
                )
            text = await tool.acall(dict(arguments or {}), call_id)
            return ToolResult(name=name, result=[TextResultContent(content=text)], is_error=text.startswith("Error:"))

    return BoundaryWorkbench(tools=[])


class AutoGenPolicy(TeamPolicy):
    """The scripted team as this group chat spells it: the manager names the worker in its message, the
    selector picks the worker named (else the manager), workers call tools and report in text."""

    def respond(self, agent: str, body: dict[str, Any]) -> Answer:
        if agent == SELECTOR:
            return self.select(body), None
        return super().respond(agent, body)

    def agents(self) -> list[str]:
        return [self.config.lead.name, SELECTOR, *self.workers]

    def select(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
        history = prompt.split("Read the following conversation.", 1)[-1].split("Read the above conversation.", 1)[0]
        last = [line for line in history.strip().splitlines() if line.strip()]
        lead = self.config.lead.name
        for line in reversed(last):
            speaker, _, said = line.partition(":")
            speaker = speaker.strip()
            if speaker == lead:
                named = said.strip().split(":", 1)[0].strip()
                return named if named in self.workers else lead
            if speaker in self.workers or speaker == "user":
                return lead
        return lead

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant" and any(c["function"]["name"] == ASSIGN for c in m.get("tool_calls") or [])
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return None, [
            function_call(self.config.lead.name, messages, ASSIGN, {"worker": worker, "instruction": instruction})
        ]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return (f"{text} {DONE}" if agent == self.config.lead.name else text), None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return str(last.get("content") or "") if last.get("role") == "tool" else None


@harnesses.register(
    NAME,
    description="AutoGen AgentChat: a SelectorGroupChat of a manager and tool-using workers sharing one model client",
    requires=("autogen-agentchat", "autogen-ext"),
)
class AutoGenTeam(FrameworkAdapter):
    name = NAME
    Policy = AutoGenPolicy
    framework = "autogen_agentchat"
    extra = "autogen"
    spelling = Spelling(
        delegation=ASSIGN, addressed_by="worker"
    )  # assign(worker, instruction); answers are text ending in TERMINATE

    def members(self) -> list[AgentProfile]:
        return [
            AgentProfile(
                name=SELECTOR,
                role="selector",
                description="the group chat's speaker selection",
                reports_to=self.config.lead.name,
                opens_rounds=False,
            )
        ]

    def agent_resolver(self) -> AgentIdentity | None:
        """Which agent's handler is running now, from AutoGen's message context (None outside a handler)."""
        try:
            from autogen_core import MessageHandlerContext

            agent_id = MessageHandlerContext.agent_id()
        except Exception:  # outside a message handler (or AutoGen missing): no identity from here
            return None
        return agent_of_handler(str(agent_id.type))

    def worker_tools(self, tools: list[BoundaryTool]) -> Any:
        return boundary_workbench(tools)

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        return run_async(self._run_team(client, model, instruction, tools))

    async def _run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
        from autogen_agentchat.teams import SelectorGroupChat
        from autogen_core.tools import FunctionTool
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        cfg = self.config
        sampling = cfg.sampling
        if not hasattr(client, "async_client"):
            raise TypeError(
                f"{NAME} shares one client among its agents and needs failforge's boundary client to tell them apart"
            )
        shared_http = client.async_client()._client  # unattributed: the boundary asks agent_resolver
        options: dict[str, Any] = {
            "model_info": _MODEL_INFO,
            "http_client": shared_http,
        }  # http_client goes through to AsyncOpenAI
        shared = OpenAIChatCompletionClient(
            model=model,
            base_url=str(client.base_url),
            api_key="failforge",
            max_retries=0,
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            seed=sampling.seed,
            parallel_tool_calls=False,
            **options,
        )
        workers = [
            AssistantAgent(
                w.name,
                model_client=shared,
                workbench=tools[w.name],
                description=w.description or w.name,
                system_message=w.system_prompt,
                reflect_on_tool_use=True,
                model_client_stream=cfg.streaming,
                max_tool_iterations=cfg.worker_max_steps,
            )
            for w in cfg.workers
        ]
        lead = cfg.lead
        workers_by_name = {w.name for w in cfg.workers}

        def assign(worker: str, instruction: str) -> str:
            """Give one subtask to a worker of the team (it speaks next)."""
            return (
                f"{worker}: {instruction}"
                if worker in workers_by_name
                else f"Error: there is no worker named {worker!r}"
            )

        manager = AssistantAgent(
            lead.name,
            model_client=shared,
            tools=[FunctionTool(assign, description="Give one subtask to a worker of the team.", name=ASSIGN)],
            description=lead.description,
            system_message=lead.system_prompt,
            model_client_stream=cfg.streaming,
            reflect_on_tool_use=False,
        )
        team = SelectorGroupChat(
            [manager, *workers],
            model_client=shared,
            termination_condition=TextMentionTermination(DONE, sources=[lead.name])
            | MaxMessageTermination(4 * cfg.lead_max_steps),
            allow_repeated_speaker=False,
            model_client_streaming=cfg.streaming,
            max_selector_attempts=1,
        )
        result = await team.run(task=instruction)
        await shared.close()
        final = next((m for m in reversed(result.messages) if getattr(m, "source", None) == lead.name), None)
        text = getattr(final, "content", None)
        return None if not isinstance(text, str) else text.replace(DONE, "").strip()


__all__ = ["NAME", "SELECTION", "SELECTOR", "AutoGenPolicy", "AutoGenTeam", "agent_of_handler", "boundary_workbench"]
