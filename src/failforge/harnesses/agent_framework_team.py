"""``agent-framework``: Microsoft Agent Framework's Magentic workflow: a ledger-keeping manager and a worker per tool
domain.

Microsoft Agent Framework (MAF, ``agent-framework-core`` with ``agent-framework-orchestrations`` and
``agent-framework-openai``) is AutoGen's successor. Its multi-agent workflows are built by the
orchestration builders; this adapter builds ``MagenticBuilder(...).build()``, a ``Workflow`` whose
manager (``StandardMagenticManager``, MAF's port of Magentic-One's orchestrator) writes a task ledger
(fact sheet, plan), a JSON progress ledger per round naming the next speaker and the instruction for
it, and the final answer; its participants are ``Agent`` workers whose ``FunctionTool`` s call
failforge's tool boundary. MAF is async only (``await workflow.run(task)``); ``streaming`` runs the
workflow with ``stream=True``, which streams the workers' model calls (the manager always calls its
agent without streaming in MAF 1.x).

Identity: every agent has its own ``OpenAIChatCompletionClient`` over its own async per-agent boundary
client (``client.async_client(name, purpose)``), and the manager one agent per call kind. The purpose
(``task_ledger``, ``plan``, ``progress_ledger``, ``final_answer``, ``task_ledger_update``,
``plan_update``) is chosen by which manager method is running (``plan``, ``replan``,
``create_progress_ledger``, ``prepare_final_answer``, each calling the agent in a fixed order), never
read from the request. MAF's prompts are Magentic-One's own wording, so the scripted team is
:class:`~failforge.harnesses.magentic_one_team.MagenticOnePolicy` and the roster Magentic-One's: a
progress ledger is addressed to the agent its ``next_speaker.answer`` names, the final answer to the
user. Unlike AutoGen's Magentic-One, MAF asks for the progress ledger in the prompt only (no
``response_format``) and extracts the JSON from the text.

``orchestration="handoff"`` builds MAF's Handoff workflow instead (``HandoffBuilder``): the lead starts,
hands a subtask to a worker with MAF's own ``handoff_to_<worker>`` tool (the instruction in the message
text, which the worker sees in the shared conversation), the worker calls its tools, reports and hands
back with ``handoff_to_<lead>``; the lead's answer without a handoff ends the run (MAF then waits for the
user, ``IDLE_WITH_PENDING_REQUESTS``; that answer is the final output). Its roster is the base's tool
handoffs (``Spelling(delegation="handoff_to_{worker}", hand_back="handoff_to_{lead}")``); every agent is
built with ``require_per_service_call_history_persistence=True``, which ``HandoffBuilder`` requires.

Retries are off (the OpenAI client's ``max_retries=0``), tool calls sequential
(``allow_multiple_tool_calls=False``, sent as ``parallel_tool_calls``), telemetry off unless the user
configures OpenTelemetry (MAF only emits spans to a configured exporter).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal

import openai
from pydantic import Field

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, run_async
from failforge.harnesses._frameworks import Answer, FrameworkTeamConfig, TeamPolicy, function_call
from failforge.harnesses.magentic_one_team import (
    FINAL_ANSWER,
    PLAN,
    PLAN_UPDATE,
    PROGRESS_LEDGER,
    TASK_LEDGER,
    TASK_LEDGER_UPDATE,
    MagenticOnePolicy,
    magentic_roster,
)
from failforge.plugins import harnesses
from failforge.roster import AgentProfile

NAME = "agent-framework"
#: the purposes of the manager's model calls, in the order each manager method makes them
METHOD_PURPOSES: dict[str, tuple[str, ...]] = {
    "plan": (TASK_LEDGER, PLAN),
    "replan": (TASK_LEDGER_UPDATE, PLAN_UPDATE),
    "create_progress_ledger": (PROGRESS_LEDGER,),  # every retry of a ledger is a progress ledger too
    "prepare_final_answer": (FINAL_ANSWER,),
}
PURPOSES = tuple(dict.fromkeys(p for ps in METHOD_PURPOSES.values() for p in ps))
#: MAF's handoff tool (``agent_framework_orchestrations._handoff.get_handoff_tool_name``)
HANDOFF = "handoff_to_{agent}"


class AgentFrameworkConfig(FrameworkTeamConfig):
    orchestration: Literal["magentic", "handoff"] = Field(
        default="magentic",
        description=(
            "MAF's Magentic workflow (a ledger-keeping manager) or its Handoff workflow (the lead hands off to a"
            " worker, which hands back)"
        ),
    )


class AgentFrameworkPolicy(MagenticOnePolicy):
    """The scripted team as MAF's workflow spells it. Magentic: the manager's prompts are Magentic-One's,
    its instructions reach the named worker as a user message, workers call their tool and report in text.
    Handoff: the lead writes the instruction and calls ``handoff_to_<worker>``; the worker, which sees the
    shared conversation, calls its tool, reports and calls ``handoff_to_<lead>``; the lead's plain text ends the run."""

    def __init__(self, config: FrameworkTeamConfig, calls: list[tuple[str, dict[str, Any]]], final: str) -> None:
        super().__init__(config, calls, final)
        self.handoffs = getattr(config, "orchestration", "magentic") == "handoff"

    def respond(self, agent: str, body: dict[str, Any]) -> Answer:
        return TeamPolicy.respond(self, agent, body) if self.handoffs else super().respond(agent, body)

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        if not self.handoffs:
            return super().delegations_done(messages)
        to_workers = {HANDOFF.format(agent=w) for w in self.workers}
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if c["function"]["name"] in to_workers
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        if not self.handoffs:
            return super().delegate(messages, worker, instruction)
        return instruction, [function_call(self.config.lead.name, messages, HANDOFF.format(agent=worker), {})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        if self.handoffs and agent in self.workers:
            return text, [function_call(agent, messages, HANDOFF.format(agent=self.config.lead.name), {})]
        return (text, None) if self.handoffs else super().answer(agent, messages, text)

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        if not self.handoffs:
            return super().tool_result(messages)
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
            if str(names.get(last.get("tool_call_id"), "")).startswith(HANDOFF.format(agent=""))
            else str(last.get("content") or "")
        )


def boundary_function_tool(tool: BoundaryTool) -> Any:
    """A MAF ``FunctionTool`` with the environment tool's own JSON schema, its call through the tool boundary."""
    from agent_framework import FunctionTool

    async def call(**arguments: Any) -> str:
        return await tool.acall(arguments)

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        func=call,
        input_model=tool.parameters,
        approval_mode="never_require",
    )


@harnesses.register(
    NAME,
    description=(
        "Microsoft Agent Framework: a Magentic workflow of a ledger-keeping manager and tool-using Agent workers"
    ),
    requires=("agent-framework-core", "agent-framework-orchestrations", "agent-framework-openai"),
)
class AgentFrameworkTeam(FrameworkAdapter):
    name = NAME
    Config = AgentFrameworkConfig
    Policy = AgentFrameworkPolicy
    framework = "agent_framework_orchestrations"
    extra = "agent-framework"
    lead_name = "orchestrator"
    lead_role = "orchestrator"
    spelling = Spelling(delegation=PROGRESS_LEDGER)  # not a tool: the roster's purpose handoffs below
    handoff_spelling: ClassVar[Spelling] = Spelling(
        delegation=HANDOFF.format(agent="{worker}"), hand_back=HANDOFF.format(agent="{lead}")
    )
    config: AgentFrameworkConfig

    def spelled(self) -> Spelling:
        return self.handoff_spelling if self.config.orchestration == "handoff" else self.spelling

    def roster(self) -> list[AgentProfile]:
        return super().roster() if self.config.orchestration == "handoff" else magentic_roster(self.config)

    def tool(self, tool: BoundaryTool) -> Any:
        return boundary_function_tool(tool)

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        return run_async(self._run_team(client, model, instruction, tools))

    async def _run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from agent_framework import Agent, AgentResponse, Message
        from agent_framework.openai import OpenAIChatCompletionClient
        from agent_framework_orchestrations import MagenticBuilder, StandardMagenticManager

        cfg = self.config
        sampling = cfg.sampling
        if not hasattr(client, "async_client"):
            raise TypeError(f"{NAME} needs failforge's boundary client (a client per agent and per manager call kind)")
        options: dict[str, Any] = {
            "temperature": sampling.temperature,
            "max_tokens": sampling.max_tokens,
            "allow_multiple_tool_calls": False,
        }
        if sampling.seed is not None:
            options["seed"] = sampling.seed

        def chat_client(agent: str, purpose: str | None = None) -> Any:
            made = OpenAIChatCompletionClient(model=model, async_client=client.async_client(agent, purpose))
            made.function_invocation_configuration["max_iterations"] = cfg.worker_max_steps
            return made

        if cfg.orchestration == "handoff":
            return await self._run_handoff(chat_client, options, instruction, tools)
        lead = cfg.lead.name
        by_purpose = {
            p: Agent(chat_client(lead, p), name=lead, description=cfg.lead.description, default_options=dict(options))
            for p in PURPOSES
        }  # type: ignore[arg-type]

        class Manager(StandardMagenticManager):
            """MAF's standard manager, its agent switched to the one of the call each method is about to make."""

            pending: list[str]

            async def _complete(self, messages: list[Any]) -> Any:
                purpose = self.pending.pop(0) if len(self.pending) > 1 else self.pending[0]
                self._agent = by_purpose[purpose]
                return await super()._complete(messages)

        def purposed(method: str, purposes: tuple[str, ...]) -> Callable[..., Awaitable[Any]]:
            original = getattr(StandardMagenticManager, method)

            async def run(self: Any, *args: Any) -> Any:
                self.pending = list(purposes)
                return await original(self, *args)

            return run

        for method, purposes in METHOD_PURPOSES.items():
            setattr(Manager, method, purposed(method, purposes))

        workers = [
            Agent(
                chat_client(w.name),
                name=w.name,
                description=w.description or w.name,
                instructions=w.system_prompt,
                tools=tools[w.name],
                default_options=dict(options),
            )  # type: ignore[arg-type]
            for w in cfg.workers
        ]
        workflow = MagenticBuilder(
            participants=workers,
            manager_factory=lambda: Manager(
                by_purpose[TASK_LEDGER], max_round_count=cfg.lead_max_steps, max_reset_count=1
            ),
        ).build()
        if cfg.streaming:
            outputs = []
            async for event in workflow.run(instruction, stream=True):
                if event.type == "output":
                    outputs.append(event.data)
        else:
            outputs = (await workflow.run(instruction)).get_outputs()
        texts = []
        for output in outputs:  # the manager's final answer: an AgentResponse, or the conversation's messages
            if isinstance(output, AgentResponse):
                texts.append(output.text)
            elif isinstance(output, Message):
                texts.append(output.text)
            elif isinstance(output, list) and output and isinstance(output[-1], Message):
                texts.append(output[-1].text)
        return texts[-1].strip() if texts else None

    async def _run_handoff(
        self, chat_client: Callable[..., Any], options: dict[str, Any], instruction: str, tools: dict[str, Any]
    ) -> str | None:
        """MAF's Handoff workflow: the lead starts and hands off to workers, each worker hands back to it."""
        from agent_framework import Agent, AgentResponse, AgentResponseUpdate
        from agent_framework_orchestrations import HandoffBuilder

        cfg = self.config
        lead = Agent(
            chat_client(cfg.lead.name),
            name=cfg.lead.name,
            description=cfg.lead.description or cfg.lead.name,
            instructions=cfg.lead.system_prompt,
            default_options=dict(options),
            require_per_service_call_history_persistence=True,
        )  # type: ignore[arg-type]
        workers = [
            Agent(
                chat_client(w.name),
                name=w.name,
                description=w.description or w.name,
                instructions=w.system_prompt,
                tools=tools[w.name],
                default_options=dict(options),
                require_per_service_call_history_persistence=True,
            )  # type: ignore[arg-type]
            for w in cfg.workers
        ]
        builder = HandoffBuilder(participants=[lead, *workers]).with_start_agent(lead).add_handoff(lead, workers)
        for worker in workers:
            builder = builder.add_handoff(worker, [lead])
        workflow = builder.build()
        # every agent's response is an output as it speaks; the run ends on the lead's answer, so that is the last
        if cfg.streaming:  # updates, tagged with the agent's executor: the trailing run of the last one's
            events = [event async for event in workflow.run(instruction, stream=True) if event.type == "output"]
            tail: list[Any] = []
            for event in reversed(events):
                if tail and event.executor_id != tail[0].executor_id:
                    break
                tail.insert(0, event)
            text = "".join(e.data.text for e in tail if isinstance(e.data, (AgentResponse, AgentResponseUpdate)))
            return text.strip() or None
        outputs = (await workflow.run(instruction)).get_outputs()
        said = [
            o
            for o in outputs
            if isinstance(o, AgentResponse) and o.messages and o.messages[-1].author_name in (None, cfg.lead.name)
        ]
        return said[-1].text.strip() if said else None


__all__ = [
    "HANDOFF",
    "METHOD_PURPOSES",
    "NAME",
    "PURPOSES",
    "AgentFrameworkConfig",
    "AgentFrameworkPolicy",
    "AgentFrameworkTeam",
    "boundary_function_tool",
]
