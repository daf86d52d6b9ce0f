"""``orchestrator-workers``: an orchestrator that delegates one subtask at a time to named workers.

In the spirit of Magentic-One. The orchestrator first writes a short plan (a model call with purpose
``plan``: its own note, not a message to anyone), then works round by round: each turn it either
delegates one subtask with the ``delegate`` tool (a worker's name and a precise instruction) or
answers the user, which ends the run. Its conversation is its progress ledger: the plan, every
delegation and every worker's report. Each worker is a tool-calling agent with its own subset of the
environment's tools and its own prompt; it works on the instruction until it answers in text, and
that answer is its report to the orchestrator. Workers keep their own history across delegations.

Everything that decides the run (agents, roles, system prompts, tool split, round limit, sampling) is
in the config, recorded in the trajectory's harness spec. Build a config for an environment with
:meth:`OrchestratorWorkers.for_environment` (one worker per tool domain); play the team from a fixed
tool-call sequence with :meth:`OrchestratorWorkers.scripted_oracle` (oracle seeds).
"""

from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from failforge.errors import ConfigError
from failforge.harnesses._base import Harness
from failforge.harnesses._team import Sampling, TeamMember, ToolUser, ask, function_tool, member_client, tool_list
from failforge.llm import TeamOracle, oracle_tool_call
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, Handoff

NAME = "orchestrator-workers"
DELEGATE = "delegate"
PLAN_PURPOSE = "plan"
#: How a scripted orchestrator phrases a delegation (a deterministic policy can read it back).
INSTRUCTION = "Call {tool} with arguments {arguments} and report what it returns."

ORCHESTRATOR_PROMPT = (
    "You are the orchestrator of a team of agents working on a user's task. You do not use tools yourself. "
    "Your team:\n{team}\n"
    "Delegate one subtask at a time with the delegate tool: name the worker whose tools fit and give it a "
    "precise instruction with every value it needs. Read each report before the next step. When the task "
    "is done, reply to the user with the final answer, stating the result, and do not call a tool."
)
PLAN_REQUEST = (
    "Before delegating, write a short numbered plan: which worker does what, in order. Do not call tools yet."
)
START_REQUEST = "Now carry out the plan, one delegation at a time."
WORKER_PROMPT = (
    "You are {name}, a worker in a team led by an orchestrator. You handle {domain} with these tools: {tools}. "
    "Carry out the orchestrator's instruction with your tools, one call at a time, then reply with a short "
    "report of what you did and what you found, including the exact values."
)


class OrchestratorWorkersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    orchestrator: TeamMember = Field(
        default_factory=lambda: TeamMember(
            name="orchestrator", role="orchestrator", system_prompt=ORCHESTRATOR_PROMPT.format(team="(no workers)")
        )
    )
    workers: list[TeamMember] = Field(default_factory=list)
    plan: bool = Field(
        default=True, description="the orchestrator writes a plan first (a model call with purpose 'plan')"
    )
    max_rounds: int = Field(default=12, ge=1, description="orchestrator turns (delegations plus the final answer)")
    worker_max_calls: int = Field(default=4, ge=1, description="model calls a worker may make on one delegation")
    sampling: Sampling = Field(default_factory=Sampling)


def delegate_schema(workers: list[str]) -> dict[str, Any]:
    return function_tool(
        DELEGATE,
        "Give one subtask to a worker of your team; returns the worker's report.",
        {
            "worker": {"type": "string", "enum": workers, "description": "the worker to delegate to"},
            "instruction": {"type": "string", "description": "what the worker must do, with every value it needs"},
        },
        ["worker", "instruction"],
    )


@harnesses.register(
    NAME, description="an orchestrator delegating one subtask at a time to tool-using workers (Magentic-One style)"
)
class OrchestratorWorkers(Harness):
    name = NAME
    Config = OrchestratorWorkersConfig
    config: OrchestratorWorkersConfig
    splits_tools = True

    def __init__(self, config: OrchestratorWorkersConfig | None = None) -> None:
        self.config = config or OrchestratorWorkersConfig()

    # --- who is in the team ---------------------------------------------------------------------

    def roster(self) -> list[AgentProfile]:
        cfg = self.config
        lead = AgentProfile(
            name=cfg.orchestrator.name,
            role=cfg.orchestrator.role,
            description=cfg.orchestrator.description or "plans, delegates, answers the user",
            tools=[],
            reports_to="user",
            handoffs=[Handoff(tool=DELEGATE, to_argument="worker")],
            opens_rounds=True,
        )
        workers = [
            AgentProfile(
                name=w.name,
                role=w.role,
                description=w.description,
                tools=list(w.tools),
                reports_to=cfg.orchestrator.name,
                opens_rounds=False,
            )
            for w in cfg.workers
        ]
        return [lead, *workers]

    @classmethod
    def for_environment(
        cls, domains: dict[str, list[str]], *, budget: int = 12, max_tokens: int | None = 256, **overrides: Any
    ) -> OrchestratorWorkers:
        """One worker per tool domain (``email`` -> ``email_worker``), the orchestrator told who does what."""
        workers = [
            TeamMember(
                name=f"{domain}_worker",
                role="worker",
                description=f"{domain} ({tool_list(tools)})",
                tools=list(tools),
                system_prompt=WORKER_PROMPT.format(name=f"{domain}_worker", domain=domain, tools=tool_list(tools)),
            )
            for domain, tools in domains.items()
        ]
        team = "\n".join(f"- {w.name}: {w.description}" for w in workers)
        orchestrator = TeamMember(
            name="orchestrator",
            role="orchestrator",
            description="plans, delegates, answers the user",
            system_prompt=ORCHESTRATOR_PROMPT.format(team=team),
        )
        data: dict[str, Any] = {
            "orchestrator": orchestrator,
            "workers": workers,
            "max_rounds": max(4, budget),
            "sampling": Sampling(max_tokens=max_tokens),
        }
        data.update(overrides)
        return cls(OrchestratorWorkersConfig.model_validate(data))

    # --- the run --------------------------------------------------------------------------------

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        cfg = self.config
        if not cfg.workers:
            raise ConfigError(
                f"{NAME} has no workers; build its config for an environment (failforge.seeds.harness_for) or list them"
                " in harness.config.workers"
            )
        lead = cfg.orchestrator
        lead_model = lead.model or model
        workers = {
            w.name: ToolUser(
                member=w, client=member_client(client, w.name), model=model, toolbox=toolbox, sampling=cfg.sampling
            )
            for w in cfg.workers
        }
        turns = member_client(client, lead.name)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": lead.system_prompt},
            {"role": "user", "content": f"Task: {instruction}"},
        ]
        if cfg.plan:
            messages.append({"role": "user", "content": PLAN_REQUEST})
            plan = ask(member_client(client, lead.name, PLAN_PURPOSE), lead_model, messages, None, cfg.sampling)
            messages.append(plan.entry())
            messages.append({"role": "user", "content": START_REQUEST})
        tools = [delegate_schema(list(workers))]
        for _ in range(cfg.max_rounds):
            turn = ask(turns, lead_model, messages, tools, cfg.sampling)
            messages.append(turn.entry())
            if not turn.calls:
                return turn.content
            for call in turn.calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": self._delegate(call.name, call.parsed(), workers),
                    }
                )
        return None

    def _delegate(self, tool: str, args: dict[str, Any] | None, workers: dict[str, ToolUser]) -> str:
        if tool != DELEGATE:
            return f"Error: {tool!r} is not a tool of yours; delegate work with {DELEGATE}(worker, instruction)"
        if args is None or not isinstance(args.get("instruction"), str) or not args["instruction"].strip():
            return f"Error: {DELEGATE} needs a JSON object with 'worker' and a non-empty 'instruction'"
        worker = workers.get(str(args.get("worker", "")))
        if worker is None:
            return f"Error: there is no worker named {args.get('worker')!r}; your workers are {', '.join(workers)}"
        report = worker.work(f"Instruction from the orchestrator: {args['instruction']}", self.config.worker_max_calls)
        if report is None:
            return f"{worker.member.name} stopped after {self.config.worker_max_calls} model calls without a report."
        return f"Report from {worker.member.name}: {report}"

    # --- oracle seeds ---------------------------------------------------------------------------

    def scripted_oracle(
        self, calls: list[tuple[str, dict[str, Any]]], final: str, *, report_limit: int = 1500
    ) -> TeamOracle:
        """The team played from a known call sequence: the orchestrator plans, delegates each call to the
        worker that owns its tool, and answers ``final``; each worker makes its call and reports the result."""
        cfg = self.config
        owner = {tool: w.name for w in cfg.workers for tool in w.tools}
        missing = sorted({tool for tool, _ in calls if tool not in owner})
        if missing:
            raise ConfigError(
                f"no worker of {NAME} owns tool(s) {', '.join(missing)}; workers:"
                f" {', '.join(f'{w.name} ({tool_list(w.tools)})' for w in cfg.workers)}"
            )
        steps = [(owner[tool], tool, args) for tool, args in calls]
        lead = cfg.orchestrator.name
        plan = (
            "Plan:\n"
            + ("\n".join(f"{i}. {w}: {tool}" for i, (w, tool, _) in enumerate(steps, start=1)) or "1. Answer directly.")
            + f"\n{len(steps) + 1}. Answer the user."
        )
        offset = 1 if cfg.plan else 0

        def orchestrator(
            ordinal: int, body: dict[str, Any], purpose: str | None
        ) -> tuple[str | None, list[dict[str, Any]] | None]:
            if purpose == PLAN_PURPOSE:
                return plan, None
            k = ordinal - offset
            if k < len(steps):
                worker, tool, args = steps[k]
                text = INSTRUCTION.format(tool=tool, arguments=json.dumps(args))
                return None, [oracle_tool_call(lead, ordinal, DELEGATE, {"worker": worker, "instruction": text})]
            return final, None

        def worker_script(name: str) -> Any:
            own = [(tool, args) for w, tool, args in steps if w == name]

            def script(
                ordinal: int, body: dict[str, Any], purpose: str | None
            ) -> tuple[str | None, list[dict[str, Any]] | None]:
                tool, args = own[min(ordinal // 2, len(own) - 1)]
                if ordinal % 2 == 0:
                    return None, [oracle_tool_call(name, ordinal, tool, args)]
                return report_of(tool, body, report_limit), None

            return script

        scripts = {
            lead: orchestrator,
            **{w.name: worker_script(w.name) for w in cfg.workers if any(s[0] == w.name for s in steps)},
        }
        return TeamOracle(scripts, name=f"{NAME}.oracle")


def report_of(tool: str, body: dict[str, Any], limit: int) -> str:
    """A scripted worker's report: the tool it called and what the tool returned (cut at ``limit``)."""
    messages = body.get("messages") or []
    result = next(
        (str(m.get("content") or "") for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "tool"), ""
    )
    if len(result) > limit:
        result = result[:limit] + " [...]"
    return f"{tool} returned: {result}"


__all__ = [
    "DELEGATE",
    "INSTRUCTION",
    "NAME",
    "OrchestratorWorkers",
    "OrchestratorWorkersConfig",
    "PLAN_PURPOSE",
    "report_of",
]
