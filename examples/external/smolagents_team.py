"""A smolagents team as a failforge external agent: the same team as failforge's in-process ``smolagents``
adapter (a ToolCallingAgent manager with a managed ToolCallingAgent per tool domain), run in its own
process, its tools taken from failforge's MCP server.

It exists to compare the two doors onto failforge on one framework (``scripts/bench_external.py``): the
in-process adapter and this command differ only in where the framework runs and how it reaches the
model (a per-agent base URL instead of a boundary client) and the tools (MCP instead of the toolbox).
The roster comes from ``FAILFORGE_ROSTER`` (first agent leads, each other agent a managed worker with
its roster entry's tools); everything else from the variables failforge sets (docs/FRAMEWORKS.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from typing import Any

import openai
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from smolagents import OpenAIModel, Tool, ToolCallingAgent

LEAD = (
    "You lead a team of agents and do not use environment tools yourself. Hand one subtask at a time to the worker"
    " whose tools fit, with every value it needs; read its report before the next step; when the task is done, give the"
    " final answer."
)
WORKER = (
    "You are {name}, a worker in a team, with these tools: {tools}. Carry out the instruction you are given with your"
    " tools, one call at a time, then report what you did and found, with the exact values."
)
TYPES = {"string", "boolean", "integer", "number", "array", "object", "null"}


class McpTools:
    """The run's MCP server on a loop of its own, so smolagents' synchronous tools can call it."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.session: Any = None
        self._context: Any = None
        self.tools = self._run(self._open(url))

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def _open(self, url: str) -> list[Any]:
        self._context = streamable_http_client(url)
        read, write, *_ = await self._context.__aenter__()
        self.session = ClientSession(read, write)
        await self.session.__aenter__()
        await self.session.initialize()
        return list((await self.session.list_tools()).tools)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        result = self._run(self.session.call_tool(name, arguments))
        return "".join(getattr(part, "text", "") for part in result.content)


def inputs_of(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    required = set(schema.get("required") or [])
    out: dict[str, dict[str, Any]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "any")
        entry: dict[str, Any] = {
            "type": kind if kind in TYPES else "any",
            "description": str(prop.get("description") or prop.get("title") or name),
        }
        if name not in required:
            entry["nullable"] = True
        out[name] = entry
    return out


def tool_of(mcp: McpTools, spec: Any) -> Tool:
    class McpTool(Tool):
        name = spec.name
        description = spec.description or spec.name
        inputs = inputs_of(spec.input_schema)
        output_type = "string"
        skip_forward_signature_validation = True

        def forward(self, **kwargs: Any) -> str:
            return mcp.call(spec.name, {k: v for k, v in kwargs.items() if v is not None})

    return McpTool()


def model_for(agent: str) -> OpenAIModel:
    url = json.loads(os.environ["FAILFORGE_AGENT_URLS"])[agent]
    client = openai.OpenAI(base_url=url, api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
    return OpenAIModel(
        os.environ["FAILFORGE_MODEL"], client=client, retry=False, temperature=0.0, max_tokens=256, seed=0
    )


def main() -> None:
    roster = json.loads(os.environ["FAILFORGE_ROSTER"])
    lead, members = roster[0], roster[1:]
    mcp = McpTools(os.environ["FAILFORGE_MCP_URL"])
    by_name = {t.name: t for t in mcp.tools}
    workers = [
        ToolCallingAgent(
            tools=[tool_of(mcp, by_name[t]) for t in m["tools"]],
            model=model_for(m["name"]),
            name=m["name"],
            description=m.get("description") or m["name"],
            instructions=WORKER.format(name=m["name"], tools=", ".join(m["tools"])),
            max_steps=4,
            max_tool_threads=1,
            verbosity_level=-1,
        )
        for m in members
    ]
    manager = ToolCallingAgent(
        tools=[],
        model=model_for(lead["name"]),
        managed_agents=workers,
        name=lead["name"],
        instructions=LEAD,
        max_steps=12,
        max_tool_threads=1,
        verbosity_level=-1,
    )
    answer = manager.run(os.environ["FAILFORGE_TASK"])
    with open(os.environ["FAILFORGE_OUTPUT"], "w", encoding="utf-8") as out:
        out.write("" if answer is None else str(answer))


if __name__ == "__main__":
    main()
