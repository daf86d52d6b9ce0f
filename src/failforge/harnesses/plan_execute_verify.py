"""``plan-execute-verify``: a planner writes a plan, an executor carries it out, a verifier checks it.

The planner sees the task and the executor's tools and writes a short numbered plan (its message to
the executor). The executor works through the plan with the environment's tools and reports what it
did and found (its message to the verifier). The verifier checks the report against the task: it
either accepts, by answering the user with the final answer (which ends the run), or sends the work
back once with the ``send_back`` tool and feedback; the executor then continues and reports again, and
the verifier must answer. Everything that decides the run is in the config, recorded in the harness
spec; :meth:`PlanExecuteVerify.scripted_oracle` plays the three agents from a fixed call sequence.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from failforge.harnesses._base import Harness
from failforge.harnesses._team import Sampling, TeamMember, ToolUser, ask, function_tool, member_client, tool_list
from failforge.llm import TeamOracle, oracle_tool_call
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, Handoff

NAME = "plan-execute-verify"
SEND_BACK = "send_back"
#: How a scripted planner phrases a step (a deterministic policy can read it back).
PLAN_STEP = "{n}. Call {tool} with arguments {arguments}."
REPORT_RESULT = "Completed the plan. Result: {result}"

PLANNER_PROMPT = (
    "You are the planner of a three-agent team. The executor will carry out your plan with these tools: {tools}. "
    "Write a short numbered plan, one tool call per step with the exact values to use, and a last step that "
    "reports the result. Do not carry it out yourself."
)
EXECUTOR_PROMPT = (
    "You are the executor of a three-agent team. Carry out the planner's plan with your tools, one call at a "
    "time, then reply with a short report for the verifier: what you did and the result, with exact values."
)
VERIFIER_PROMPT = (
    "You are the verifier of a three-agent team. Check the executor's report against the user's task. If the "
    "work is complete and correct, reply to the user with the final answer, stating the result. Otherwise call "
    "send_back with precise feedback (you may send the work back only once)."
)
MAX_VERIFIER_TURNS = 3


class PlanExecuteVerifyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    planner: TeamMember = Field(
        default_factory=lambda: TeamMember(
            name="planner", role="planner", system_prompt=PLANNER_PROMPT.format(tools="(none)")
        )
    )
    executor: TeamMember = Field(
        default_factory=lambda: TeamMember(name="executor", role="executor", system_prompt=EXECUTOR_PROMPT)
    )
    verifier: TeamMember = Field(
        default_factory=lambda: TeamMember(name="verifier", role="verifier", system_prompt=VERIFIER_PROMPT)
    )
    executor_max_calls: int = Field(default=12, ge=1, description="model calls the executor may make per pass")
    max_send_backs: int = Field(default=1, ge=0)
    sampling: Sampling = Field(default_factory=Sampling)


def send_back_schema() -> dict[str, Any]:
    return function_tool(
        SEND_BACK,
        "Send the work back to the executor with feedback; returns its revised report.",
        {"feedback": {"type": "string", "description": "what is wrong or missing, precisely"}},
        ["feedback"],
    )


@harnesses.register(
    NAME, description="a planner, an executor with the tools, and a verifier that accepts or sends back once"
)
class PlanExecuteVerify(Harness):
    name = NAME
    Config = PlanExecuteVerifyConfig
    config: PlanExecuteVerifyConfig
    splits_tools = True

    def __init__(self, config: PlanExecuteVerifyConfig | None = None) -> None:
        self.config = config or PlanExecuteVerifyConfig()

    def roster(self) -> list[AgentProfile]:
        p, e, v = self.config.planner, self.config.executor, self.config.verifier
        return [
            AgentProfile(name=p.name, role=p.role, description=p.description or "writes the plan", reports_to=e.name),
            AgentProfile(
                name=e.name,
                role=e.role,
                description=e.description or "carries out the plan",
                tools=list(e.tools),
                reports_to=v.name,
            ),
            AgentProfile(
                name=v.name,
                role=v.role,
                description=v.description or "accepts or sends back",
                reports_to="user",
                handoffs=[Handoff(tool=SEND_BACK, to=e.name)],
            ),
        ]

    @classmethod
    def for_environment(
        cls, domains: dict[str, list[str]], *, budget: int = 12, max_tokens: int | None = 256, **overrides: Any
    ) -> PlanExecuteVerify:
        """The executor gets every tool of the environment; the planner is told what they are."""
        tools = [tool for group in domains.values() for tool in group]
        data: dict[str, Any] = {
            "planner": TeamMember(
                name="planner",
                role="planner",
                description="writes the plan",
                system_prompt=PLANNER_PROMPT.format(tools=tool_list(tools)),
            ),
            "executor": TeamMember(
                name="executor",
                role="executor",
                description="carries out the plan",
                tools=tools,
                system_prompt=EXECUTOR_PROMPT,
            ),
            "verifier": TeamMember(
                name="verifier", role="verifier", description="accepts or sends back", system_prompt=VERIFIER_PROMPT
            ),
            "executor_max_calls": max(4, budget),
            "sampling": Sampling(max_tokens=max_tokens),
        }
        data.update(overrides)
        return cls(PlanExecuteVerifyConfig.model_validate(data))

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        cfg = self.config
        planner, verifier = cfg.planner, cfg.verifier
        plan_messages = [
            {"role": "system", "content": planner.system_prompt},
            {"role": "user", "content": f"Task: {instruction}"},
        ]
        plan = (
            ask(member_client(client, planner.name), planner.model or model, plan_messages, None, cfg.sampling).content
            or ""
        )
        executor = ToolUser(
            member=cfg.executor,
            client=member_client(client, cfg.executor.name),
            model=model,
            toolbox=toolbox,
            sampling=cfg.sampling,
        )
        report = executor.work(f"Task: {instruction}\n\nPlan from the planner:\n{plan}", cfg.executor_max_calls)
        checking = member_client(client, verifier.name)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": verifier.system_prompt},
            {
                "role": "user",
                "content": (
                    f"Task: {instruction}\n\nPlan:\n{plan}\n\nExecutor's"
                    f" report:\n{_report(report, cfg.executor_max_calls)}"
                ),
            },
        ]
        sent_back = 0
        for _ in range(MAX_VERIFIER_TURNS):
            tools = [send_back_schema()] if sent_back < cfg.max_send_backs else None
            turn = ask(checking, verifier.model or model, messages, tools, cfg.sampling)
            messages.append(turn.entry())
            if not turn.calls:
                return turn.content
            for call in turn.calls:
                args = call.parsed()
                if call.name != SEND_BACK or tools is None or args is None:
                    result = (
                        f"Error: only {SEND_BACK}(feedback) is available, and only {cfg.max_send_backs} time(s);"
                        " otherwise answer the user"
                    )
                else:
                    sent_back += 1
                    revised = executor.work(
                        f"The verifier sent your work back: {args.get('feedback', '')}", cfg.executor_max_calls
                    )
                    result = f"Revised report from {cfg.executor.name}:\n{_report(revised, cfg.executor_max_calls)}"
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        return None

    def scripted_oracle(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> TeamOracle:
        """The team played from a known call sequence: the plan lists the calls, the executor makes them and
        reports ``final`` as the result, the verifier accepts by answering ``final``."""
        cfg = self.config
        steps = [
            PLAN_STEP.format(n=n, tool=tool, arguments=json.dumps(args))
            for n, (tool, args) in enumerate(calls, start=1)
        ]
        plan = "Plan:\n" + "\n".join([*steps, f"{len(steps) + 1}. Report the result."])
        executor_name = cfg.executor.name

        def planner(
            ordinal: int, body: dict[str, Any], purpose: str | None
        ) -> tuple[str | None, list[dict[str, Any]] | None]:
            return plan, None

        def executor(
            ordinal: int, body: dict[str, Any], purpose: str | None
        ) -> tuple[str | None, list[dict[str, Any]] | None]:
            if ordinal < len(calls):
                tool, args = calls[ordinal]
                return None, [oracle_tool_call(executor_name, ordinal, tool, args)]
            return REPORT_RESULT.format(result=final), None

        def verifier(
            ordinal: int, body: dict[str, Any], purpose: str | None
        ) -> tuple[str | None, list[dict[str, Any]] | None]:
            return final, None

        return TeamOracle(
            {cfg.planner.name: planner, executor_name: executor, cfg.verifier.name: verifier}, name=f"{NAME}.oracle"
        )


def _report(report: str | None, limit: int) -> str:
    return report if report is not None else f"(the executor stopped after {limit} model calls without a report)"


__all__ = ["NAME", "PLAN_STEP", "REPORT_RESULT", "SEND_BACK", "PlanExecuteVerify", "PlanExecuteVerifyConfig"]
