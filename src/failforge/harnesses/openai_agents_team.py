"""``openai-agents``: the OpenAI Agents SDK, a manager agent with one worker agent per tool domain as its tools.

Agents-as-tools (``worker.as_tool``): the manager calls a worker like a function, the worker runs
its own loop on the instruction and its final output is the result. Every agent has its own
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

import asyncio
from typing import Any

import openai

from failforge.harnesses._frameworks import Answer, FrameworkTeamConfig, TeamPolicy, function_call, need_workers, team_config, team_roster, tool_schemas
from failforge.llm import TeamOracle
from failforge.plugins import harnesses
from failforge.roster import AgentProfile

NAME = "openai-agents"


class OpenAIAgentsPolicy(TeamPolicy):
    """The scripted team as the Agents SDK spells it in chat completions: a worker is a tool taking
    ``input``, answers are plain text, tool results are ``tool`` messages."""

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(1 for m in messages if m.get("role") == "tool")

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return None, [function_call(self.config.lead.name, messages, worker, {"input": instruction})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return str(last.get("content") or "") if last.get("role") == "tool" else None


@harnesses.register(NAME, description="OpenAI Agents SDK: a manager with worker agents as tools, over chat completions", requires=("openai-agents",))
class OpenAIAgentsTeam:
    name = NAME
    Config = FrameworkTeamConfig

    def __init__(self, config: FrameworkTeamConfig | None = None) -> None:
        self.config = config or FrameworkTeamConfig()

    def roster(self) -> list[AgentProfile]:
        return team_roster(self.config)

    @classmethod
    def for_environment(cls, domains: dict[str, list[str]], *, budget: int = 12, max_tokens: int | None = 256, **overrides: Any) -> OpenAIAgentsTeam:
        return cls(team_config(domains, lead_name="manager", lead_role="manager", budget=budget, max_tokens=max_tokens, overrides=overrides))

    def scripted_policy(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> OpenAIAgentsPolicy:
        return OpenAIAgentsPolicy(self.config, calls, final)

    def scripted_oracle(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> TeamOracle:
        return self.scripted_policy(calls, final).oracle(NAME)

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        return asyncio.run(self._run(client, model, instruction, toolbox))

    async def _run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        from agents import Agent, FunctionTool, ModelSettings, OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled

        set_tracing_disabled(True)
        cfg = self.config
        need_workers(NAME, cfg)
        sampling = cfg.sampling
        settings = ModelSettings(
            temperature=sampling.temperature, max_tokens=sampling.max_tokens, parallel_tool_calls=False, include_usage=cfg.streaming or None,
            extra_body={"seed": sampling.seed} if sampling.seed is not None else None,
        )

        def chat_model(name: str, own_model: str | None) -> Any:
            async_client = client.async_client(name) if hasattr(client, "async_client") else _async_twin(client, name)
            return OpenAIChatCompletionsModel(model=own_model or model, openai_client=async_client)

        def bridge(schema: dict[str, Any]) -> Any:
            function = schema["function"]

            async def invoke(_: Any, arguments: str, tool: str = function["name"]) -> str:
                return str(await asyncio.to_thread(toolbox.call, tool, arguments, None))

            return FunctionTool(
                name=function["name"], description=str(function.get("description") or function["name"]),
                params_json_schema=function.get("parameters") or {"type": "object", "properties": {}}, on_invoke_tool=invoke, strict_json_schema=False,
            )

        run_config = RunConfig(tracing_disabled=True, workflow_name=NAME)
        worker_tools: list[Any] = []
        for w in cfg.workers:
            worker = Agent(name=w.name, instructions=w.system_prompt, model=chat_model(w.name, w.model), model_settings=settings,
                           tools=[bridge(s) for s in tool_schemas(toolbox, w.tools, w.name)])
            worker_tools.append(worker.as_tool(tool_name=w.name, tool_description=w.description or w.name, max_turns=cfg.worker_max_steps, run_config=run_config))
        lead = cfg.lead
        manager = Agent(name=lead.name, instructions=lead.system_prompt, model=chat_model(lead.name, lead.model), model_settings=settings, tools=worker_tools)
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
    """Outside failforge's boundary (a plain endpoint): an async client to the same place, naming the agent by header."""
    from failforge.llm import AGENT_HEADER

    return openai.AsyncOpenAI(base_url=str(client.base_url), api_key=client.api_key, max_retries=0, default_headers={AGENT_HEADER: agent})


__all__ = ["NAME", "OpenAIAgentsPolicy", "OpenAIAgentsTeam"]
