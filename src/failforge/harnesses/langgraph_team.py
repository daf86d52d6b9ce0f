"""``langgraph``: a LangGraph supervisor (langgraph-supervisor) with one ReAct worker per tool domain, on
langchain-openai.

The supervisor hands the conversation to a worker with its ``transfer_to_<worker>`` tool and gets it
back when the worker is done (``output_mode="last_message"``: the worker's report). Every agent has
its own ``ChatOpenAI`` over its own per-agent boundary client (sync and async), so identity is
explicit. Chat completions are forced (``use_responses_api=False``), retries are off
(``max_retries=0``), tool calls are one at a time (``parallel_tool_calls=False`` for the supervisor
and every worker), and every environment tool is a ``StructuredTool`` calling failforge's tool
boundary. ``streaming`` runs the graph with ``stream_mode="messages"``, which makes langchain send
every request with ``stream=True``; the boundary serves those as event streams. ``asynchronous``
runs ``ainvoke``/``astream``: every model call then goes through the async clients, off the loop.

The supervisor's handoff-back messages carry uuid4 tool-call ids minted anew on every run; the
request hash renames tool-call ids by first appearance, so they never reach it.
"""

from __future__ import annotations

from typing import Any

import openai

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, run_async
from failforge.harnesses._frameworks import Answer, TeamPolicy, function_call
from failforge.harnesses._team import member_client
from failforge.plugins import harnesses

NAME = "langgraph"
HANDOFF = "transfer_to_{worker}"


class LangGraphPolicy(TeamPolicy):
    """The scripted team as a LangGraph supervisor spells it: the supervisor writes the instruction and
    transfers; the worker, which sees the shared history, acts on the latest instruction."""

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            and any(str(c["function"]["name"]).startswith("transfer_to_") for c in m.get("tool_calls") or [])
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return instruction, [function_call(self.config.lead.name, messages, HANDOFF.format(worker=worker), {})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
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
        name = str(names.get(last.get("tool_call_id"), ""))
        return None if name.startswith("transfer_") else str(last.get("content") or "")


@harnesses.register(
    NAME,
    description="LangGraph: a langgraph-supervisor supervisor with a ReAct worker per tool domain, on langchain-openai",
    requires=("langgraph", "langchain-openai", "langgraph-supervisor"),
)
class LangGraphTeam(FrameworkAdapter):
    name = NAME
    Policy = LangGraphPolicy
    framework = "langgraph_supervisor"
    extra = "langgraph"
    lead_name = "supervisor"
    lead_role = "supervisor"
    spelling = Spelling(delegation=HANDOFF)  # the supervisor hands the conversation back itself: no worker tool for it

    def tool(self, tool: BoundaryTool) -> Any:
        from langchain_core.tools import StructuredTool

        def call(**kwargs: Any) -> str:
            return tool.call(kwargs)

        return StructuredTool.from_function(
            func=call, name=tool.name, description=tool.description, args_schema=tool.parameters
        )

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from langchain_openai import ChatOpenAI
        from langgraph.prebuilt import create_react_agent
        from langgraph_supervisor import create_supervisor

        cfg = self.config
        sampling = cfg.sampling

        def chat(name: str, own_model: str | None) -> Any:
            sync = member_client(client, name)
            async_client = client.async_client(name) if hasattr(client, "async_client") else None
            extra: dict[str, Any] = (
                {"root_async_client": async_client, "async_client": async_client.chat.completions}
                if async_client is not None
                else {}
            )
            return ChatOpenAI(
                model=own_model or model,
                root_client=sync,
                client=sync.chat.completions,
                max_retries=0,
                use_responses_api=False,
                temperature=sampling.temperature,
                seed=sampling.seed,
                stream_usage=True,
                **{"api_key": "failforge", "max_tokens": sampling.max_tokens, **extra},
            )

        workers: list[Any] = []
        for w in cfg.workers:
            bound = chat(w.name, w.model).bind_tools(tools[w.name], parallel_tool_calls=False)
            workers.append(create_react_agent(bound, tools[w.name], name=w.name, prompt=w.system_prompt))
        lead = cfg.lead
        graph: Any = create_supervisor(
            workers,
            model=chat(lead.name, lead.model),
            prompt=lead.system_prompt,
            supervisor_name=lead.name,
            parallel_tool_calls=False,
            output_mode="last_message",
        ).compile()
        inputs = {"messages": [{"role": "user", "content": instruction}]}
        limit: Any = {"recursion_limit": 4 * (cfg.lead_max_steps + cfg.worker_max_steps * len(cfg.workers)) + 10}
        state = (
            run_async(_arun(graph, inputs, limit, cfg.streaming))
            if cfg.asynchronous
            else _run(graph, inputs, limit, cfg.streaming)
        )
        messages = (state or {}).get("messages") or []
        final = messages[-1] if messages else None
        content = getattr(final, "content", None)
        return None if content is None else str(content)


def _run(graph: Any, inputs: Any, limit: Any, streaming: bool) -> Any:
    if not streaming:
        return graph.invoke(inputs, limit)
    state = None
    for mode, chunk in graph.stream(inputs, limit, stream_mode=["messages", "values"]):
        if mode == "values":
            state = chunk
    return state


async def _arun(graph: Any, inputs: Any, limit: Any, streaming: bool) -> Any:
    """The async entry points: every model call goes through the async per-agent clients."""
    if not streaming:
        return await graph.ainvoke(inputs, limit)
    state = None
    async for mode, chunk in graph.astream(inputs, limit, stream_mode=["messages", "values"]):
        if mode == "values":
            state = chunk
    return state


__all__ = ["HANDOFF", "NAME", "LangGraphPolicy", "LangGraphTeam"]
