"""``smolagents``: a smolagents ToolCallingAgent manager with one managed ToolCallingAgent per tool domain.

The manager sees each worker as a tool named after it (smolagents' managed agents); a worker's
``final_answer`` is its report. Every agent gets its own ``OpenAIModel`` over its own per-agent
boundary client (``client.for_agent(name)``), so identity is explicit; every environment tool is a
smolagents ``Tool`` whose ``forward`` calls failforge's tool boundary. Tool calls run one at a time
(``max_tool_threads=1``), smolagents' own retries are off (``retry=False``) so a boundary refusal
surfaces, and ``streaming`` switches every model call to ``stream=True`` (``stream_outputs``).

smolagents writes earlier tool calls back into the prompt as text (``Calling tools: [...]``), ids
included; those ids are the ones the model returned (recorded, or fresh at a branch), so the text
replays byte-identically, but a framework-minted id would not be canonicalised there.
"""

from __future__ import annotations

from typing import Any

import openai

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling
from failforge.harnesses._frameworks import Answer, TeamPolicy, function_call, text_of
from failforge.harnesses._team import member_client
from failforge.plugins import harnesses

NAME = "smolagents"
FINAL = "final_answer"
_TYPES = {"string", "boolean", "integer", "number", "array", "object", "null"}


def smolagents_inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """smolagents' ``inputs`` from a JSON-schema function (it insists on a type and a description per input)."""
    params = schema.get("parameters") or {}
    required = set(params.get("required") or [])
    inputs: dict[str, dict[str, Any]] = {}
    for name, prop in (params.get("properties") or {}).items():
        kind = prop.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "any")
        if kind not in _TYPES:
            kind = "any"
        entry: dict[str, Any] = {"type": kind, "description": str(prop.get("description") or prop.get("title") or name)}
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


class SmolagentsPolicy(TeamPolicy):
    """The scripted team as smolagents spells it: delegations are calls to the worker's tool, answers are
    ``final_answer`` calls, tool results come back as ``Observation:`` user messages."""

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(1 for m in messages if m.get("role") == "assistant")

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return None, [function_call(self.config.lead.name, messages, worker, {"task": instruction})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return None, [function_call(agent, messages, FINAL, {"answer": text})]

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        text = text_of(last.get("content"))
        if last.get("role") in ("user", "tool") and text.startswith("Observation:"):
            return text[len("Observation:") :].strip()
        return None


@harnesses.register(
    NAME,
    description="smolagents: a ToolCallingAgent manager with a managed ToolCallingAgent per tool domain",
    requires=("smolagents",),
)
class SmolagentsTeam(FrameworkAdapter):
    name = NAME
    Policy = SmolagentsPolicy
    framework = "smolagents"
    extra = "smolagents"
    spelling = Spelling(delegation="{worker}", final_answer=FINAL)  # managed agents are tools named after them

    def tool(self, tool: BoundaryTool) -> Any:
        from smolagents import Tool

        class SmolagentsBoundaryTool(Tool):
            name = tool.name
            description = tool.description
            inputs = smolagents_inputs({"parameters": tool.parameters})
            output_type = "string"
            skip_forward_signature_validation = True

            def forward(self, **kwargs: Any) -> str:
                return tool.call(
                    {k: v for k, v in kwargs.items() if v is not None}
                )  # smolagents passes absent nullable inputs as None

        return SmolagentsBoundaryTool()

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from smolagents import OpenAIModel, ToolCallingAgent

        cfg = self.config
        sampling = cfg.sampling.extra()

        def model_for(name: str, own_model: str | None) -> Any:
            return OpenAIModel(own_model or model, client=member_client(client, name), retry=False, **sampling)

        workers = [
            ToolCallingAgent(
                tools=tools[w.name],
                model=model_for(w.name, w.model),
                name=w.name,
                description=w.description or w.name,
                instructions=w.system_prompt,
                max_steps=cfg.worker_max_steps,
                max_tool_threads=1,
                stream_outputs=cfg.streaming,
                verbosity_level=-1,
            )
            for w in cfg.workers
        ]
        lead = cfg.lead
        manager = ToolCallingAgent(
            tools=[],
            model=model_for(lead.name, lead.model),
            managed_agents=workers,
            name=lead.name,
            instructions=lead.system_prompt,
            max_steps=cfg.lead_max_steps,
            max_tool_threads=1,
            stream_outputs=cfg.streaming,
            verbosity_level=-1,
        )
        result = manager.run(instruction)
        return None if result is None else str(result)


__all__ = ["NAME", "SmolagentsPolicy", "SmolagentsTeam", "smolagents_inputs"]
