"""A pydantic-ai agent tested against ``failforge serve-scripted bfcl``: your framework, a scripted model.

Everything here is pydantic-ai's own documented API: an OpenAI-compatible model through ``OpenAIProvider``
with a ``base_url`` (docs: "OpenAI-compatible Models"), function tools with ``@agent.tool_plain``, and a
conversation carried over with ``message_history=result.all_messages()``. Nothing is imported from failforge:
the scripted server is just an endpoint. Start it, then run this file in the environment where pydantic-ai is:

    failforge serve-scripted bfcl --task multi_turn_base_3          # prints its base URL
    python examples/scripted/pydantic_ai_bfcl.py http://127.0.0.1:8766/v1 "TURN 1" "TURN 2"

The server plays BFCL's ground truth for the task (one call per reply, then ``Done.``), so the calls your agent
makes (printed as ``call: NAME {ARGS}``) must be the task's: a framework that drops a tool result, sends the
wrong history or mangles arguments shows up here, without a model and without a key. The tools below only
record what they are asked; your own agent would have its real ones.
"""

from __future__ import annotations

import json
import sys

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

calls: list[str] = []


def called(tool: str, **arguments: object) -> str:
    given = {k: v for k, v in arguments.items() if v is not None}
    calls.append(f"{tool} {json.dumps(given, sort_keys=True)}")
    return json.dumps({"ok": True})


def main(base_url: str, turns: list[str]) -> None:
    model = OpenAIChatModel("scripted", provider=OpenAIProvider(base_url=base_url, api_key="none"))
    agent = Agent(model, system_prompt="You work in the user's file system with the tools you have.")

    @agent.tool_plain
    def find(path: str = ".", name: str | None = None) -> str:
        """Find files and folders under path whose name contains name."""
        return called("find", path=path, name=name)

    @agent.tool_plain
    def cd(folder: str) -> str:
        """Change the current directory to folder."""
        return called("cd", folder=folder)

    @agent.tool_plain
    def cp(source: str, destination: str) -> str:
        """Copy source into destination."""
        return called("cp", source=source, destination=destination)

    history = []
    for turn in turns:
        result = agent.run_sync(turn, message_history=history)
        history = result.all_messages()
        print(f"answer: {result.output}")
    for call in calls:
        print(f"call: {call}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
