"""What the external-framework tests share: rosters from AgentDojo's tool split, the loopback team model,
the external harness for a framework's venv, and the checks every framework must pass.

A framework failforge has no adapter for runs as an external agent: a team script in its own virtual
environment (``scripts/install_external.sh``), started per episode by the ``external`` harness, its
model calls on per-agent routes and its tools over MCP. The team model is the public scripted team
(:class:`failforge.testing.scripted.TeamModel` over a team policy spelled as the framework spells a delegation)
behind a loopback OpenAI-compatible server; it is told the calling agent by the header failforge's
boundary sends upstream. Everything else is real: the framework, AgentDojo, the boundaries, replay,
the evaluator, the filters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from failforge.harnesses.external import ExternalAgent
from failforge.llm import HttpUpstream
from failforge.roster import AgentProfile
from failforge.seeds import env_spec, record
from failforge.testing.scripted import (
    AgentsAsToolsPolicy,
    TeamModel,
    roster_for,
    team_config,
)  # noqa: F401 - the tests' shared names
from failforge.trajectory import ComponentSpec, Trajectory

ROOT = Path(__file__).resolve().parents[2]
#: The five AgentDojo tasks every framework is shown on (four suites, one to four tool calls each).
TASKS = (
    "banking/user_task_1",
    "banking/user_task_3",
    "slack/user_task_2",
    "workspace/user_task_0",
    "travel/user_task_0",
)


def venv_python(name: str) -> str:
    root = Path(os.environ.get("FAILFORGE_VENVS") or Path.home() / ".cache" / "failforge" / "venvs")
    return str(root / name / "bin" / "python")


#: The scripted team model of several tasks (the public piece ``failforge serve-scripted team`` serves).
LoopbackTeams = TeamModel


def external_team(python: str, script: str, framework: str, roster: list[AgentProfile], **fields: Any) -> ExternalAgent:
    return ExternalAgent.for_command([python, str(ROOT / script)], framework=framework, roster=roster, **fields)


def record_seed(harness: ExternalAgent, task: str, base_url: str) -> Trajectory:
    upstream = HttpUpstream(base_url, api_key_env=None, max_attempts=1)
    try:
        return record(
            env_spec=env_spec("agentdojo", task),
            harness=harness,
            model=ComponentSpec(name="loopback", config={"role": "agent"}),
            upstream=upstream,
        )
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
