"""``openai-agents``: the OpenAI Agents SDK, a manager agent with one worker agent per tool domain as its tools.

Agents-as-tools (``worker.as_tool``, the default): the manager calls a worker like a function, the
worker runs its own loop on the instruction and its final output is the result. Handoffs
(``delegation = "handoffs"``): the manager transfers the conversation to a worker
(``transfer_to_<worker>``), which works on the shared history and transfers it back. Every agent has its own
``OpenAIChatCompletionsModel`` over its own async per-agent boundary client
(``client.async_client(name)``): chat completions are forced (the SDK's default is the Responses
API, which the boundary refuses), identity is explicit, and live calls run off the event loop.
Tracing is disabled (``set_tracing_disabled`` and ``RunConfig(tracing_disabled=True)``: its exporter
would send every run to OpenAI), the OpenAI client's retries are off, tool calls are sequential
(``parallel_tool_calls=False``), and environment tools run in a worker thread through failforge's
tool boundary. ``streaming`` runs the manager with ``Runner.run_streamed`` (``stream=True`` with the
usage chunk).

The SDK refuses a response that reuses a tool-call id it has already seen completed, so scripted
ids are unique per conversation, and injected or live responses mint fresh ones.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import openai
from pydantic import Field

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, run_async
from failforge.harnesses._frameworks import Answer, FrameworkTeamConfig, TeamPolicy, function_call
from failforge.plugins import harnesses

NAME = "openai-agents"
HANDOFF = "transfer_to_{agent}"


class OpenAIAgentsConfig(FrameworkTeamConfig):
    delegation: Literal["agents_as_tools", "handoffs"] = Field(
        default="agents_as_tools",
        description=(
            "workers as the manager's tools, or handoffs (the manager transfers the conversation; a worker transfers it"
            " back)"
        ),
    )


class OpenAIAgentsPolicy(TeamPolicy):
    """The scripted team as the Agents SDK spells it in chat completions. Agents as tools: a worker is a
    tool taking ``input``, answers are plain text, tool results are ``tool`` messages. Handoffs: the
    manager writes the instruction and transfers; the worker, which sees the shared history, reports
    and transfers back; the manager's plain text ends the run."""

    def __init__(self, config: FrameworkTeamConfig, calls: list[tuple[str, dict[str, Any]]], final: str) -> None:
        super().__init__(config, calls, final)
        self.handoffs = getattr(config, "delegation", "agents_as_tools") == "handoffs"

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        if self.handoffs:
            return sum(
                1
                for m in messages
                if m.get("role") == "assistant" and any(self._transfer_to_worker(c) for c in m.get("tool_calls") or [])
            )
        return sum(1 for m in messages if m.get("role") == "tool")

    def _transfer_to_worker(self, call: dict[str, Any]) -> bool:
        return any(call["function"]["name"] == HANDOFF.format(agent=w) for w in self.workers)

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        if self.handoffs:
            return instruction, [function_call(self.config.lead.name, messages, HANDOFF.format(agent=worker), {})]
        return None, [function_call(self.config.lead.name, messages, worker, {"input": instruction})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        if self.handoffs and agent in self.workers:
            return text, [function_call(agent, messages, HANDOFF.format(agent=self.config.lead.name), {})]
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        if last.get("role") != "tool":
            return None
        names = {
            c.get("id"): c["function"]["name"]
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        }
        return (
            None
            if str(names.get(last.get("tool_call_id"), "")).startswith("transfer_to_")
            else str(last.get("content") or "")
        )


@harnesses.register(
    NAME,
    description="OpenAI Agents SDK: a manager with worker agents as tools, over chat completions",
    requires=("openai-agents",),
)
class OpenAIAgentsTeam(FrameworkAdapter):
    name = NAME
    Config = OpenAIAgentsConfig
    Policy = OpenAIAgentsPolicy
    framework = "agents"
    extra = "openai-agents"
    spelling = Spelling(delegation="{worker}")  # agents as tools: a worker is a tool named after it
    handoffs_spelling: ClassVar[Spelling] = Spelling(
        delegation=HANDOFF.format(agent="{worker}"), hand_back=HANDOFF.format(agent="{lead}")
    )
    config: OpenAIAgentsConfig

    def spelled(self) -> Spelling:
        return self.handoffs_spelling if self.config.delegation == "handoffs" else self.spelling

    def tool(self, tool: BoundaryTool) -> Any:
        from agents import FunctionTool

        async def invoke(_: Any, arguments: str) -> str:
            return await tool.acall(arguments)  # the SDK's JSON text, verbatim

        return FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=tool.parameters,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        return run_async(self._run_team(client, model, instruction, tools))

    async def _run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled

        set_tracing_disabled(True)
        cfg = self.config
        sampling = cfg.sampling
        settings = ModelSettings(
            temperature=sampling.temperature,
            max_tokens=sampling.max_tokens,
            parallel_tool_calls=False,
            include_usage=cfg.streaming or None,
            extra_body={"seed": sampling.seed} if sampling.seed is not None else None,
        )

        def chat_model(name: str, own_model: str | None) -> Any:
            async_client = client.async_client(name) if hasattr(client, "async_client") else _async_twin(client, name)
            return OpenAIChatCompletionsModel(model=own_model or model, openai_client=async_client)

        run_config = RunConfig(tracing_disabled=True, workflow_name=NAME, nest_handoff_history=False)
        lead = cfg.lead
        workers = [
            Agent(
                name=w.name,
                instructions=w.system_prompt,
                model=chat_model(w.name, w.model),
                model_settings=settings,
                tools=tools[w.name],
            )
            for w in cfg.workers
        ]
        if cfg.delegation == "handoffs":
            manager = Agent(
                name=lead.name,
                instructions=lead.system_prompt,
                model=chat_model(lead.name, lead.model),
                model_settings=settings,
                handoffs=list(workers),
            )
            for worker in workers:
                worker.handoffs = [manager]
        else:
            worker_tools: list[Any] = [
                worker.as_tool(
                    tool_name=worker.name,
                    tool_description=w.description or w.name,
                    max_turns=cfg.worker_max_steps,
                    run_config=run_config,
                )
                for worker, w in zip(workers, cfg.workers, strict=True)
            ]
            manager = Agent(
                name=lead.name,
                instructions=lead.system_prompt,
                model=chat_model(lead.name, lead.model),
                model_settings=settings,
                tools=worker_tools,
            )
        if cfg.streaming:
            streamed = Runner.run_streamed(manager, instruction, max_turns=cfg.lead_max_steps, run_config=run_config)
            async for _ in streamed.stream_events():
                pass
            output = streamed.final_output
        else:
            result = await Runner.run(manager, instruction, max_turns=cfg.lead_max_steps, run_config=run_config)
            output = result.final_output
        return None if output is None else str(output)


def _async_twin(client: openai.OpenAI, agent: str) -> openai.AsyncOpenAI:
    """Outside failforge's boundary (a plain endpoint): an async client to the same place, naming the agent by
    header."""
    from failforge.llm import AGENT_HEADER

    return openai.AsyncOpenAI(
        base_url=str(client.base_url), api_key=client.api_key, max_retries=0, default_headers={AGENT_HEADER: agent}
    )


__all__ = ["HANDOFF", "NAME", "OpenAIAgentsConfig", "OpenAIAgentsPolicy", "OpenAIAgentsTeam"]
