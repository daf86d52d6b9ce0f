"""``magentic-one``: AutoGen AgentChat's MagenticOneGroupChat: a ledger-keeping orchestrator and a worker per tool
domain.

The team is Magentic-One's own loop (``autogen_agentchat.teams.MagenticOneGroupChat``, the framework the
Who&When Hand-Crafted logs and a Who&When Pro trace come from): the orchestrator writes a **task ledger**
(a fact sheet, then a plan), then each round a **progress ledger** — a JSON object saying whether the
request is satisfied, who speaks next and the instruction for them — and finally the **final answer**.
Its workers are AssistantAgents whose tools are a workbench calling failforge's tool boundary (each
reflects on its tool result, so its report is a model call of its own).

Identity: every agent has its own client (``client.async_client(name)``), and the orchestrator one per
call kind, so each of its calls carries a **purpose** at the model boundary (``task_ledger``, ``plan``,
``progress_ledger``, ``final_answer``; ``task_ledger_update`` and ``plan_update`` when it re-plans after
stalling). The purpose is chosen where Magentic-One builds the prompt of that call (the orchestrator's
``_get_*_prompt`` hooks, each called right before its model call), never read from the request.

Addressing: a progress ledger is addressed to the agent its ``next_speaker.answer`` names (it is the
delegation: the instruction broadcast to the team is its ``instruction_or_question``), the final answer
to the user, the fact sheet and plan to the orchestrator itself; workers report to the orchestrator.
So a coordination mistake at the orchestrator (C.1, C.2) is a step of the progress ledger, and the
ledger's JSON is what replay serves back verbatim (Magentic-One parses it again, and would retry on a
broken one). The progress ledger is requested as structured output (``response_format`` with the
``LedgerEntry`` JSON schema), as Magentic-One does for a model that supports it.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, run_async
from failforge.harnesses._frameworks import INSTRUCTION, Answer, TeamPolicy, text_of
from failforge.harnesses.autogen_team import boundary_workbench
from failforge.plugins import harnesses
from failforge.roster import USER, AgentProfile, Handoff

NAME = "magentic-one"
TASK_LEDGER = "task_ledger"
PLAN = "plan"
PROGRESS_LEDGER = "progress_ledger"
FINAL_ANSWER = "final_answer"
TASK_LEDGER_UPDATE = "task_ledger_update"
PLAN_UPDATE = "plan_update"
#: every purpose an orchestrator call carries, by the Magentic-One prompt hook that precedes it
PURPOSES = {
    "_get_task_ledger_facts_prompt": TASK_LEDGER,
    "_get_task_ledger_plan_prompt": PLAN,
    "_get_progress_ledger_prompt": PROGRESS_LEDGER,
    "_get_final_answer_prompt": FINAL_ANSWER,
    "_get_task_ledger_facts_update_prompt": TASK_LEDGER_UPDATE,
    "_get_task_ledger_plan_update_prompt": PLAN_UPDATE,
}
#: the dotted path of the next speaker in a progress ledger (Magentic-One's ``LedgerEntry``)
NEXT_SPEAKER = "next_speaker.answer"
_MODEL_INFO = {
    "vision": False,
    "function_calling": True,
    "json_output": True,
    "family": "unknown",
    "structured_output": True,
    "multiple_system_messages": True,
}

# How the scripted orchestrator tells Magentic-One's prompts apart (the model's side reads its prompt; the
# purpose at the boundary comes from the framework side, above).
_PROMPT_KINDS = (
    ("Below I will present you a request.", TASK_LEDGER),
    ("Fantastic. To address this request", PLAN),
    ("Recall we are working on the following request:", PROGRESS_LEDGER),
    ("We have completed the task.", FINAL_ANSWER),
    ("As a reminder, we are working to solve the following task:", TASK_LEDGER_UPDATE),
    ("Please briefly explain what went wrong on this last run", PLAN_UPDATE),
)


def prompt_kind(messages: list[dict[str, Any]]) -> str | None:
    """Which orchestrator prompt the latest user message is (None: not one of Magentic-One's)."""
    last = next((text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    return next((kind for marker, kind in _PROMPT_KINDS if marker in last), None)


def ledger(*, satisfied: bool, speaker: str, instruction: str, reason: str) -> str:
    """A progress ledger as Magentic-One's ``LedgerEntry`` schema spells it (valid JSON, every key), on one
    line and short, so a reader that cuts a step at a few hundred characters (the conformance judge's
    prompt) still sees the instruction it hands on."""
    return dump_ledger(
        {
            "is_request_satisfied": {"reason": reason, "answer": satisfied},
            "is_in_loop": {"reason": "No call repeated.", "answer": False},
            "is_progress_being_made": {"reason": "Each report had its result.", "answer": True},
            "next_speaker": {"reason": "Owns the next tool." if not satisfied else "Nobody.", "answer": speaker},
            "instruction_or_question": {
                "reason": "Next call of the plan." if not satisfied else "Done.",
                "answer": instruction,
            },
        }
    )


def dump_ledger(entry: dict[str, Any]) -> str:
    """The scripted team's spelling of a ledger object (one line)."""
    return json.dumps(entry)


def magentic_roster(cfg: Any) -> list[AgentProfile]:
    """A Magentic team's roster (AutoGen's MagenticOneGroupChat and Agent Framework's Magentic workflow): the
    orchestrator, whose progress ledger addresses the next speaker and whose final answer the user, then the workers."""
    lead = AgentProfile(
        name=cfg.lead.name,
        role=cfg.lead.role,
        description=cfg.lead.description,
        reports_to=USER,
        opens_rounds=True,
        handoffs=[Handoff(purpose=PROGRESS_LEDGER, to_argument=NEXT_SPEAKER), Handoff(purpose=FINAL_ANSWER, to=USER)],
    )
    workers = [
        AgentProfile(
            name=w.name,
            role=w.role,
            description=w.description,
            tools=list(w.tools),
            reports_to=cfg.lead.name,
            opens_rounds=False,
        )
        for w in cfg.workers
    ]
    return [lead, *workers]


class MagenticOnePolicy(TeamPolicy):
    """The scripted team as Magentic-One spells it: the orchestrator answers its fact-sheet and plan
    prompts, then each progress ledger names the worker owning the next ground-truth call with the
    instruction for it (or says the request is satisfied), and answers the final-answer prompt with the
    task's answer; workers call their tool and report in text (AutoGen's AssistantAgent)."""

    def respond(self, agent: str, body: dict[str, Any]) -> Answer:
        if agent in self.workers:
            return super().respond(agent, body)
        messages = list(body.get("messages") or [])
        kind = prompt_kind(messages)
        if kind in (TASK_LEDGER, TASK_LEDGER_UPDATE):
            return self.facts(), None
        if kind in (PLAN, PLAN_UPDATE):
            return self.plan(), None
        if kind == FINAL_ANSWER:
            return self.final, None
        k = self.delegations_done(messages)
        if k < len(self.steps):
            worker, tool, args = self.steps[k]
            return self.delegate(messages, worker, INSTRUCTION.format(tool=tool, arguments=json.dumps(args)))
        return (
            ledger(satisfied=True, speaker=self.config.lead.name, instruction="", reason="Every call was made."),
            None,
        )

    def facts(self) -> str:
        return (
            "1. GIVEN OR VERIFIED FACTS\n    - The request itself.\n2. FACTS TO LOOK UP\n    - What the team's tools"
            " return.\n3. FACTS TO DERIVE\n    - None.\n4. EDUCATED GUESSES\n    - None."
        )

    def plan(self) -> str:
        return "\n".join(f"- {worker}: use {tool}." for worker, tool, _ in self.steps) or "- Answer directly."

    def stop_early(self, agent: str, body: dict[str, Any]) -> Answer:
        """Premature termination as Magentic-One spells it: a progress ledger saying the request is satisfied."""
        if agent in self.workers or prompt_kind(list(body.get("messages") or [])) != PROGRESS_LEDGER:
            return super().stop_early(agent, body)
        return (
            ledger(
                satisfied=True, speaker=self.config.lead.name, instruction="", reason="All done: the task is complete."
            ),
            None,
        )

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        """The orchestrator's instructions so far: its own messages that are an instruction (the task ledger is not)."""
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            and text_of(m.get("content")).startswith("Call ")
            and text_of(m.get("content")).endswith(" and report what it returns.")
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return ledger(satisfied=False, speaker=worker, instruction=instruction, reason="Calls remain."), None

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return str(last.get("content") or "") if last.get("role") == "tool" else None


@harnesses.register(
    NAME,
    description="AutoGen AgentChat's MagenticOneGroupChat: a ledger-keeping orchestrator and tool-using workers",
    requires=("autogen-agentchat", "autogen-ext"),
)
class MagenticOneTeam(FrameworkAdapter):
    name = NAME
    Policy = MagenticOnePolicy
    framework = "autogen_agentchat"
    extra = "autogen"
    lead_name = "orchestrator"
    lead_role = "orchestrator"
    spelling = Spelling(delegation=PROGRESS_LEDGER)  # not a tool: the roster's purpose handoffs below

    def roster(self) -> list[AgentProfile]:
        return magentic_roster(self.config)

    def worker_tools(self, tools: list[BoundaryTool]) -> Any:
        return boundary_workbench(tools)

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        return run_async(self._run_team(client, model, instruction, tools))

    async def _run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        from autogen_agentchat.agents import AssistantAgent
        from autogen_agentchat.messages import TextMessage
        from autogen_agentchat.teams import MagenticOneGroupChat
        from autogen_agentchat.teams._group_chat._magentic_one._magentic_one_orchestrator import MagenticOneOrchestrator
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        cfg = self.config
        sampling = cfg.sampling
        if not hasattr(client, "async_client"):
            raise TypeError(
                f"{NAME} needs failforge's boundary client (a client per agent and per orchestrator call kind)"
            )

        def model_client(agent: str, purpose: str | None = None) -> Any:
            http = client.async_client(agent, purpose)._client  # the identity rides on the transport
            options: dict[str, Any] = {
                "model_info": _MODEL_INFO,
                "http_client": http,
            }  # http_client goes through to AsyncOpenAI
            return OpenAIChatCompletionClient(
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

        lead = cfg.lead.name
        by_purpose = {purpose: model_client(lead, purpose) for purpose in PURPOSES.values()}

        class Orchestrator(MagenticOneOrchestrator):
            """Magentic-One's orchestrator, its model client switched to the client of the call its prompt hook
            precedes."""

        def hooked(hook: str, purpose: str) -> Any:
            original = getattr(MagenticOneOrchestrator, hook)

            def build(self: Any, *args: Any) -> str:
                self._model_client = by_purpose[purpose]
                return str(original(self, *args))

            return build

        for hook, purpose in PURPOSES.items():
            setattr(Orchestrator, hook, hooked(hook, purpose))

        class Team(MagenticOneGroupChat):
            def _create_group_chat_manager_factory(self, *args: Any, **kwargs: Any) -> Any:
                build = super()._create_group_chat_manager_factory(*args, **kwargs)

                def factory() -> Any:
                    made = build()
                    made.__class__ = Orchestrator
                    return made

                return factory

        workers = [
            AssistantAgent(
                w.name,
                model_client=model_client(w.name),
                workbench=tools[w.name],
                description=w.description or w.name,
                system_message=w.system_prompt,
                reflect_on_tool_use=True,
                model_client_stream=cfg.streaming,
                max_tool_iterations=cfg.worker_max_steps,
            )
            for w in cfg.workers
        ]
        team = Team(list[Any](workers), model_client=by_purpose[TASK_LEDGER], max_turns=cfg.lead_max_steps)
        result = await team.run(task=instruction)
        for made in [*by_purpose.values(), *(w._model_client for w in workers)]:
            await made.close()
        final = next(
            (
                m
                for m in reversed(result.messages)
                if isinstance(m, TextMessage) and m.source not in {w.name for w in cfg.workers}
            ),
            None,
        )
        return None if final is None else str(final.content).strip()


__all__ = [
    "FINAL_ANSWER",
    "NAME",
    "PLAN",
    "PROGRESS_LEDGER",
    "PURPOSES",
    "TASK_LEDGER",
    "MagenticOnePolicy",
    "MagenticOneTeam",
    "dump_ledger",
    "ledger",
    "prompt_kind",
]
