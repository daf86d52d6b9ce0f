"""What the external-framework tests share: rosters from AgentDojo's tool split, the loopback team model,
the external harness for a framework's venv, and the checks every framework must pass.

A framework failforge has no adapter for runs as an external agent: a team script in its own virtual
environment (``scripts/install_external.sh``), started per episode by the ``external`` harness, its
model calls on per-agent routes and its tools over MCP. The team model is a deterministic team policy
(:class:`failforge.harnesses._frameworks.TeamPolicy`, spelled as the framework spells a delegation)
behind a loopback OpenAI-compatible server; it is told the calling agent by the header failforge's
boundary sends upstream. Everything else is real: the framework, AgentDojo, the boundaries, replay,
the evaluator, the filters.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from framework_adapters import NOTES, concrete, judge, slipped

from failforge.environments import environment
from failforge.environments.agentdojo import tool_domains
from failforge.harnesses._frameworks import LEAD_PROMPT, WORKER_PROMPT, Answer, FrameworkTeamConfig, TeamPolicy, function_call, text_of
from failforge.harnesses._team import TeamMember
from failforge.harnesses.external import ExternalAgent
from failforge.injection import NOTE_PREFIX
from failforge.llm import HttpUpstream
from failforge.roster import USER, AgentProfile, Handoff
from failforge.seeds import env_spec, record
from failforge.trajectory import ComponentSpec, Trajectory

ROOT = Path(__file__).resolve().parents[2]
#: The five AgentDojo tasks every framework is shown on (four suites, one to four tool calls each).
TASKS = ("banking/user_task_1", "banking/user_task_3", "slack/user_task_2", "workspace/user_task_0", "travel/user_task_0")
_GUIDED_MODE = __import__("re").compile(r"Error mode (\S+) ")


def venv_python(name: str) -> str:
    root = Path(os.environ.get("FAILFORGE_VENVS") or Path.home() / ".cache" / "failforge" / "venvs")
    return str(root / name / "bin" / "python")


def roster_for(suite: str, *, lead: str = "manager", handoff: str = "ask_{worker}", lead_role: str = "manager") -> list[AgentProfile]:
    """A lead and one worker per tool domain of the suite; the lead hands work over with ``handoff``."""
    domains = tool_domains(suite)
    workers = [AgentProfile(name=f"{d}_worker", role="worker", description=d, tools=list(tools), reports_to=lead, opens_rounds=False)
               for d, tools in domains.items()]
    handoffs = [Handoff(tool=handoff.format(worker=w.name), to=w.name) for w in workers]
    return [AgentProfile(name=lead, role=lead_role, description="hands out subtasks, answers the user", reports_to=USER, handoffs=handoffs), *workers]


def team_config(roster: list[AgentProfile]) -> FrameworkTeamConfig:
    lead, workers = roster[0], roster[1:]
    return FrameworkTeamConfig(
        lead=TeamMember(name=lead.name, role=lead.role, system_prompt=LEAD_PROMPT),
        workers=[TeamMember(name=w.name, role=w.role, tools=list(w.tools), system_prompt=WORKER_PROMPT) for w in workers],
    )


class AgentsAsToolsPolicy(TeamPolicy):
    """A lead that calls each worker as a tool (``ask_<worker>`` with an ``instruction``); the worker's
    report comes back as that tool's result; answers are plain text."""

    handoff = "ask_{worker}"
    argument = "instruction"

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(1 for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or [] if self._is_handoff(c))

    def _is_handoff(self, call: dict[str, Any]) -> bool:
        return any(call["function"]["name"] == self.handoff.format(worker=w) for w in self.workers)

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return None, [function_call(self.config.lead.name, messages, self.handoff.format(worker=worker), {self.argument: instruction})]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return text_of(last.get("content")) if last.get("role") == "tool" else None


class LoopbackTeams:
    """The team model for several tasks behind one loopback server (``agent_policy``): the lead's policy is
    the one whose task its conversation carries; workers act on the instruction they were given. The
    guide gets the R.3 note, a judge call is judged by rule, and under a note the acting agent slips."""

    def __init__(self, policy_class: type[TeamPolicy], rosters: dict[str, list[AgentProfile]]) -> None:
        self.policies: dict[str, TeamPolicy] = {}
        for task, roster in rosters.items():
            spec = env_spec("agentdojo", task)
            calls, final = environment("agentdojo").ground_truth(spec)
            self.policies[spec_instruction(spec)] = policy_class(team_config(roster), calls, final)
        self.any = next(iter(self.policies.values()))

    def _policy(self, agent: str, body: dict[str, Any]) -> TeamPolicy:
        """The policy of the task whose instruction the conversation carries (a lead's), else any whose team has ``agent``."""
        text = json.dumps(body.get("messages") or [])
        mine = {i: p for i, p in self.policies.items() if agent == p.config.lead.name or agent in p.workers}
        return next((p for i, p in mine.items() if json.dumps(i)[1:-1] in text), next(iter(mine.values()), self.any))

    def __call__(self, agent: str | None, body: dict[str, Any]) -> Answer:
        messages = body.get("messages") or []
        system = text_of((messages[0] or {}).get("content")) if messages else ""
        if "realistic mistakes" in system:
            prompt = text_of(messages[1].get("content"))
            mode = _GUIDED_MODE.search(prompt)
            return concrete(NOTES.get(mode.group(1) if mode else "", NOTES["R.3"]), prompt), None
        if system.startswith("You check the labels"):
            return judge(text_of(messages[1].get("content"))), None
        if agent is None:
            raise AssertionError("a team member's call reached the loopback team without naming its agent")
        last = messages[-1] if messages else {}
        policy = self._policy(agent, body)
        if last.get("role") in ("system", "developer") and text_of(last.get("content")).startswith(NOTE_PREFIX):
            return slipped(policy.respond(agent, {**body, "messages": messages[:-1]}))
        return policy.respond(agent, body)


def spec_instruction(spec: ComponentSpec) -> str:
    with environment("agentdojo").open(spec) as episode:
        return episode.instruction()


def external_team(python: str, script: str, framework: str, roster: list[AgentProfile], **fields: Any) -> ExternalAgent:
    return ExternalAgent.for_command([python, str(ROOT / script)], framework=framework, roster=roster, **fields)


def record_seed(harness: ExternalAgent, task: str, base_url: str) -> Trajectory:
    upstream = HttpUpstream(base_url, api_key_env=None, max_attempts=1)
    try:
        return record(env_spec=env_spec("agentdojo", task), harness=harness, model=ComponentSpec(name="loopback", config={"role": "agent"}), upstream=upstream)
    finally:
        upstream.close()


def with_command_env(seed: Trajectory, **env: str) -> Trajectory:
    """``seed`` whose recorded agent command runs with extra environment variables (a changed prompt)."""
    config = {**seed.harness.config, "env": {**seed.harness.config.get("env", {}), **env}}
    return seed.model_copy(update={"harness": seed.harness.model_copy(update={"config": config})})


def with_tool_result(seed: Trajectory, index: int, content: str) -> Trajectory:
    """``seed`` with the observation recorded at tool step ``index`` replaced."""
    steps = list(seed.steps)
    steps[index] = steps[index].model_copy(update={"content": content})
    return seed.model_copy(update={"steps": steps})


__all__ = [
    "TASKS",
    "AgentsAsToolsPolicy",
    "LoopbackTeams",
    "external_team",
    "record_seed",
    "roster_for",
    "team_config",
    "venv_python",
    "with_command_env",
    "with_tool_result",
]
