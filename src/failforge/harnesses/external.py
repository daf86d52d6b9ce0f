"""``external``: the user's own agent command, in its own process, as a harness like any other.

Per episode failforge starts the command (``command``: an argv) with everything it needs in its
environment (the contract, documented in ``docs/FRAMEWORKS.md``):

=========================  ===============================================================================
``FAILFORGE_RUN_ID``       this run's id on the gateway
``FAILFORGE_TASK``         the task instruction (step 0)
``FAILFORGE_MODEL``        the model name to put in requests
``FAILFORGE_AGENT_URL``    per-agent base URL template, ``http://127.0.0.1:P/runs/ID/agents/{agent}/v1``
``FAILFORGE_AGENT_URLS``   JSON object: agent name -> its base URL (the roster's agents)
``FAILFORGE_BASE_URL``     base URL for calls that name their agent by the ``X-Failforge-Agent`` header
                           (or a run with a single agent); also ``OPENAI_BASE_URL``
``FAILFORGE_MCP_URL``      the run's tools: an MCP server, streamable HTTP
``FAILFORGE_ROSTER``       JSON list of the agents (name, role, description, tools, reports_to, handoffs)
``FAILFORGE_OUTPUT``       a file to write the final answer to (what the evaluator reads)
=========================  ===============================================================================

``OPENAI_API_KEY`` is set to a placeholder (the command never needs a key: failforge holds the
upstream's), and the usual telemetry switches are set off. The model routes and the MCP server are
the run's own boundaries, served by the process's gateway (:func:`failforge.gateway.shared_gateway`), so
every model call is recorded, replayed, changed at a branch point or forwarded live, and every tool
call runs in failforge's environment, fingerprinted and checked, exactly as for an in-process harness.
Tool calls are executed on the run's own thread, which waits for the command meanwhile.

The command runs in a process group of its own under the run's deadline (``timeout``, capped by the
attempt's), and the whole group is stopped when the run ends, however it ends. A command that is
missing, exits non-zero, outlives the deadline or never calls the model fails the run as an
infrastructure error whose one-line reason carries the command's last stderr line; a drift (or the end
of a prefix replay) is the run's own outcome and wins over the command's exit status.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field, field_validator

from failforge.errors import AttemptDeadlineExceeded, ConfigError, InfrastructureError
from failforge.harnesses._base import Harness
from failforge.harnesses._process import last_line, spawn, stop_group
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, check_roster
from failforge.secrets import scrubbed_environ

NAME = "external"
#: Environment variables that switch the common frameworks' telemetry and tracing off.
TELEMETRY_OFF = {
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "CREWAI_DISABLE_TRACKING": "true",
    "AGNO_TELEMETRY": "false",
    "ANONYMIZED_TELEMETRY": "false",
    "DO_NOT_TRACK": "1",
    "LOGFIRE_SEND_TO_LOGFIRE": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "HF_HUB_OFFLINE": "1",
}


class ExternalAgentConfig(BaseModel):
    """The agent command and what it is (recorded in the trajectory's harness spec)."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(min_length=1, description="the agent's argv, run once per episode")
    framework: str = Field(
        default="external", description="the agent framework's distribution name (e.g. pydantic-ai-slim)"
    )
    framework_version: str | None = Field(
        default=None, description="its version, as the command's interpreter reports it"
    )
    roster: list[AgentProfile] = Field(
        default_factory=list, description="the agents; empty: an open roster (agents join as they call)"
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="extra environment variables for the command (never secrets: they are recorded)",
    )
    cwd: str | None = Field(default=None, description="working directory of the command")
    timeout: float = Field(
        default=600.0, gt=0, description="seconds one episode may take (the attempt's deadline caps it)"
    )

    @field_validator("roster")
    @classmethod
    def _valid_roster(cls, value: list[AgentProfile]) -> list[AgentProfile]:
        check_roster(value)
        return value


@harnesses.register(
    NAME, description="the user's agent command in its own process: models on per-agent routes, tools over MCP"
)
class ExternalAgent(Harness):
    name = NAME
    Config = ExternalAgentConfig
    config: ExternalAgentConfig

    def __init__(self, config: ExternalAgentConfig | None = None) -> None:
        if config is None:
            raise ConfigError("the external harness needs the agent command: --agent-cmd, or harness.config.command")
        self.config = config
        self.stats = {}
        """What the last run of the command cost outside failforge: ``process_start`` (seconds from spawning it
        to its first model call: interpreter, imports, building the team), ``process_exit`` (from the last
        answer it was given to its group being gone: its own shutdown) and ``exit_status``. The runner
        copies it into the run's provenance (``harness_stats``)."""

    @property
    def label(self) -> str:
        """How seed ids name this harness: ``external.<framework>``."""
        return f"{NAME}.{self.config.framework}"

    def roster(self) -> list[AgentProfile] | None:
        return list(self.config.roster) or None

    @classmethod
    def for_command(
        cls,
        command: str | list[str],
        *,
        framework: str | None = None,
        roster: list[AgentProfile] | None = None,
        **fields: Any,
    ) -> ExternalAgent:
        """The harness for ``command`` (a shell-quoted string or an argv), its framework's version read
        from the command's interpreter when the command is a Python and the version is not given."""
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        name, _, pinned = (framework or "external").partition("==")
        version = pinned or fields.pop("framework_version", None) or framework_version(argv, name)
        return cls(
            ExternalAgentConfig(
                command=argv, framework=name, framework_version=version, roster=list(roster or []), **fields
            )
        )

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        from failforge.gateway import OwnerThread, ServedRun, shared_gateway

        boundary = getattr(client, "boundary", None)
        if boundary is None:
            raise ConfigError("the external harness runs only under failforge's model boundary (a BoundaryClient)")
        gateway = shared_gateway()
        owner = OwnerThread()
        served = ServedRun(f"agent-{os.urandom(8).hex()}", boundary, toolbox, owner=owner)
        urls = gateway.add(served)
        try:
            with tempfile.TemporaryDirectory(prefix="failforge-agent-") as scratch:
                return self._run(
                    served, owner, urls, model, instruction, getattr(toolbox, "deadline", None), Path(scratch)
                )
        finally:
            gateway.remove(served.id)
            owner.close()

    def _run(
        self, served: Any, owner: Any, urls: Any, model: str, instruction: str, deadline: float | None, scratch: Path
    ) -> str | None:
        cfg = self.config
        output, stdout, stderr = scratch / "final_output.txt", scratch / "stdout.log", scratch / "stderr.log"
        # failforge's own environment without the upstream's key (its variable, and any variable holding it)
        contract = agent_environment(urls, served.id, instruction, model, cfg.roster, output)
        env = {**scrubbed_environ(), **TELEMETRY_OFF, **cfg.env, **contract}
        started = time.monotonic()
        end = started + cfg.timeout if deadline is None else min(started + cfg.timeout, deadline)
        process = spawn(cfg.command, env=env, cwd=cfg.cwd, stdout=stdout, stderr=stderr)
        threading.Thread(target=_wake_on_exit, args=(process, owner), daemon=True, name="failforge-agent-wait").start()
        log = served.log
        timed_out = False
        try:
            while process.poll() is None:
                if log.failure is not None or log.stopped:
                    break  # the run's outcome is known: the agent's remaining work cannot change it
                left = end - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                owner.pump(min(left, 0.25))
        finally:
            stop_group(process)
        ended = time.monotonic()
        self.stats = {
            "process_start": None if served.first_call is None else round(served.first_call - started, 4),
            "process_exit": None if served.last_activity is None else round(ended - served.last_activity, 4),
            "exit_status": process.returncode,
        }
        if log.failure is not None or log.stopped:
            return None
        command = " ".join(shlex.quote(a) for a in cfg.command)
        why = last_line(stderr)
        tail = f": {why}" if why else " (it wrote nothing to stderr)"
        if timed_out:
            raise AttemptDeadlineExceeded(
                f"agent command {command!r} did not finish within {end - started:.0f} s and was stopped{tail}"
            )
        if process.returncode != 0:
            raise InfrastructureError(f"agent command {command!r} exited with status {process.returncode}{tail}")
        if served.model_calls == 0:
            raise InfrastructureError(
                f"agent command {command!r} exited without calling the model at {urls.agent_template}{tail}"
            )
        return output.read_text(encoding="utf-8") if output.exists() else None


def _wake_on_exit(process: subprocess.Popen[bytes], owner: Any) -> None:
    process.wait()
    owner.wake()


def agent_environment(
    urls: Any, run_id: str, instruction: str, model: str, roster: list[AgentProfile], output: Path
) -> dict[str, str]:
    """The variables the agent command reads (see the module docstring)."""
    return {
        "FAILFORGE_RUN_ID": run_id,
        "FAILFORGE_TASK": instruction,
        "FAILFORGE_MODEL": model,
        "FAILFORGE_BASE_URL": urls.model,
        "FAILFORGE_AGENT_URL": urls.agent_template,
        "FAILFORGE_AGENT_URLS": json.dumps({p.name: urls.agent(p.name) for p in roster}),
        "FAILFORGE_MCP_URL": urls.mcp,
        "FAILFORGE_ROSTER": json.dumps([p.model_dump(mode="json") for p in roster]),
        "FAILFORGE_OUTPUT": str(output),
        "OPENAI_BASE_URL": urls.model,
        "OPENAI_API_KEY": "failforge-boundary",
    }


def framework_version(command: list[str], distribution: str) -> str | None:
    """``distribution``'s version as the command's own interpreter sees it (when the command is a Python), else None."""
    if distribution in ("", "external") or not Path(command[0]).name.startswith("python"):
        return None
    probe = (
        "import importlib.metadata as m, sys\ntry:\n    print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError:\n"
        "    pass"
    )
    try:
        done = subprocess.run([command[0], "-c", probe, distribution], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


__all__ = ["NAME", "TELEMETRY_OFF", "ExternalAgent", "ExternalAgentConfig", "agent_environment", "framework_version"]
