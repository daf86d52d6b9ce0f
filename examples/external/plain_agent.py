"""A single agent with no framework at all: the OpenAI client for the model, the MCP SDK for the tools.

Run it as failforge's external harness (``--harness external --agent-cmd "python examples/external/plain_agent.py"``):
every variable it reads is set by failforge for the episode (see docs/FRAMEWORKS.md, "The external
harness"). It is the smallest complete agent for that contract: list the run's tools over MCP, call
the model with them, run each tool call over MCP, repeat until the model answers, write the answer.
"""

from __future__ import annotations

import asyncio
import json
import os

import openai
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

#: The system prompt; ``AGENT_SYSTEM`` replaces it (how a test changes a prompt between recording and replay).
SYSTEM = os.environ.get("AGENT_SYSTEM") or (
    "You are a helpful assistant. Use the tools to complete the user's task, one call at a time, then answer briefly."
)


async def main() -> None:
    client = openai.OpenAI(
        base_url=json.loads(os.environ["FAILFORGE_AGENT_URLS"]).get("agent", os.environ["FAILFORGE_BASE_URL"]),
        api_key=os.environ["OPENAI_API_KEY"],
        max_retries=0,
    )
    async with (
        streamable_http_client(os.environ["FAILFORGE_MCP_URL"]) as (read, write, *_),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        tools = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description or "", "parameters": t.input_schema},
            }
            for t in (await mcp.list_tools()).tools
        ]
        messages: list[dict] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": os.environ["FAILFORGE_TASK"]},
        ]
        for _ in range(int(os.environ.get("AGENT_MAX_STEPS", "20"))):
            reply = client.chat.completions.create(
                model=os.environ["FAILFORGE_MODEL"], messages=messages, tools=tools, temperature=0
            )  # type: ignore[arg-type]
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                with open(os.environ["FAILFORGE_OUTPUT"], "w", encoding="utf-8") as out:
                    out.write(message.content or "")
                return
            for call in message.tool_calls:
                result = await mcp.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                text = "".join(getattr(part, "text", "") for part in result.content)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


if __name__ == "__main__":
    asyncio.run(main())
