"""One run behind the proxy: a run log, a model boundary and the tool steps an outside process reports.

A proxy run is the out-of-process twin of :func:`failforge.episode.run_episode`: the agent loop runs in
another process (any framework, any language) and talks to the model only through the proxy, so
the proxy's :class:`~failforge.llm.ModelBoundary` records, replays or branches every model call
exactly as the in-process boundary does. The environment is in the other process too, so it
reports each tool call, its observation and a description of the state after it; the proxy
fingerprints that state and, in replay, checks the step against the seed like any tool boundary.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import threading
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge import __version__
from failforge.canonical import canonical_hash
from failforge.environments._base import assert_tool_step
from failforge.errors import ConfigError, EnvironmentDrift, FailforgeError, PromptDrift
from failforge.llm import ModelBoundary, Reply, Responder, canonical_request, chat_response
from failforge.llm._boundary import refusal_reply
from failforge.llm._identity import AgentIdentity, RequestLike, valid_name
from failforge.roster import AgentProfile
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory

Mode = Literal["record", "replay", "branch"]


class InjectedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Injection(BaseModel):
    """The response served at the branch step instead of the recorded one (the mistake)."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    tool_calls: list[InjectedCall] = Field(default_factory=list)


class RunRequest(BaseModel):
    """The body of ``POST /runs``: what run to open and in which mode."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = "record"
    run_id: str | None = Field(default=None, description="a name for the run (default: a fresh id)")
    framework: str = Field(default="external", description="recorded in the trajectory's harness spec")
    model: str = "external-model"
    task: str | None = Field(default=None, description="the instruction (step 0); in replay it must equal the seed's")
    benchmark: str = "external"
    task_id: str = "task"
    roster: list[AgentProfile] = Field(default_factory=list, description="the agents; empty: an open roster (agents join as they call)")
    seed_id: str | None = Field(default=None, description="replay/branch: a seed the proxy was started with")
    seed: dict[str, Any] | None = Field(default=None, description="replay/branch: the seed itself")
    branch_at: int | None = Field(default=None, ge=1, description="branch: the step served by the injection (or live)")
    injection: Injection | None = None


class ToolReport(BaseModel):
    """The body of ``POST /runs/{id}/tools``: one tool call the outside process ran, and what it saw."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    tool_call_id: str | None = None
    observation: str
    error: str | None = None
    state: dict[str, Any] = Field(default_factory=dict, description="the environment's state after the call, by part; fingerprinted here")


class FinishRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    final_output: str | None = None
    outcome: Outcome | None = None


def fresh_call_id() -> str:
    """Injected and live responses need tool-call ids no earlier step used (the Agents SDK refuses a reused one)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def injector_for(injection: Injection) -> Any:
    def inject(body: dict[str, Any]) -> dict[str, Any]:
        calls = [{"id": fresh_call_id(), "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in injection.tool_calls]
        return chat_response(str(body.get("model", "injected")), injection.content, calls or None, response_id=f"chatcmpl-{uuid.uuid4().hex[:12]}", created=0)

    return inject


class ProxyRun:
    """A run the proxy serves; every method is safe to call from the server's request threads."""

    def __init__(self, request: RunRequest, *, seed: Trajectory | None, upstream: Responder | None) -> None:
        self.request = request
        self.mode: Mode = request.mode
        self.id = valid_name(request.run_id) if request.run_id else f"run-{uuid.uuid4().hex[:12]}"
        self.seed = seed
        self._lock = threading.Lock()
        self.finished = False
        if self.mode != "record" and seed is None:
            raise ConfigError(f"a {self.mode} run needs a seed (seed_id of a seed the proxy was started with, or the seed itself)")
        if self.mode == "branch" and request.branch_at is None:
            raise ConfigError("a branch run needs branch_at: the step where the recording stops being served")
        if self.mode != "record" and upstream is None and self.mode == "branch" and request.injection is None:
            raise ConfigError("a branch run without an injection continues live, and this proxy has no upstream (--upstream)")
        if seed is not None:
            until = len(seed.steps) if self.mode == "replay" else int(request.branch_at or 0)
            if until > len(seed.steps):
                raise ConfigError(f"branch_at {until} is past the end of seed {seed.id!r} ({len(seed.steps)} steps)")
            if self.mode == "branch" and seed.steps[until].kind != "agent":
                raise ConfigError(f"branch_at {until}: step {until} of seed {seed.id!r} is a {seed.steps[until].kind} step, not a model call")
            self.log = RunLog(trajectory_id=self.id, expected=list(seed.steps), replay_until=until, record_phase="live")
            self.log.set_roster(list(seed.roster), open_roster=not seed.roster)
            instruction = str(seed.steps[0].content or "")
            if request.task is not None and request.task != instruction:
                raise ConfigError(f"the task differs from seed {seed.id!r}'s instruction")
            self.task = seed.task
        else:
            self.log = RunLog(trajectory_id=self.id)
            self.log.set_roster(list(request.roster) or [AgentProfile(name="agent")], open_roster=not request.roster)
            if request.task is None:
                raise ConfigError("a record run needs the task: the instruction the agents are given")
            instruction = request.task
            self.task = Task(benchmark=request.benchmark, task_id=request.task_id, instruction=instruction)
        self.log.append(Step(index=0, kind="task", agent="user", role="user", content=instruction, phase=self.log.phase_for(0)))
        injector = injector_for(request.injection) if self.mode == "branch" and request.injection is not None else None
        self.boundary = ModelBoundary(self.log, upstream=None if self.mode == "replay" else upstream, injector=injector, source="model")

    # --- model calls ----------------------------------------------------------------------------

    def answer(self, request: RequestLike, raw: bytes) -> Reply:
        """A model call. A call the run cannot place (an agent outside the roster, a bad body, another
        API) is refused without touching the run; a drift or an exhausted recording fails the run."""
        self._open()
        before = self.boundary.failure
        reply = self.boundary.answer(request, raw, explicit=None)
        failure = self.boundary.failure
        if before is None and isinstance(failure, ConfigError):
            self.boundary.failure = None
        elif before is None and isinstance(failure, PromptDrift):
            reply = refusal_reply(failure, note=self.nearest(raw))
        return reply

    def nearest(self, raw: bytes, limit: int = 3) -> str:
        """The recorded requests closest to a request that matched none (by canonical text), for a miss."""
        try:
            body = json.loads(raw)
        except ValueError:
            return ""
        text = json.dumps(canonical_request(body), sort_keys=True)
        scored = []
        for step in self.log.expected:
            if step.kind == "agent" and step.model_call is not None:
                recorded = json.dumps(canonical_request(step.model_call.request), sort_keys=True)
                scored.append((difflib.SequenceMatcher(None, text, recorded, autojunk=False).quick_ratio(), step.index, step.agent))
        best = sorted(scored, key=lambda x: (-x[0], x[1]))[:limit]
        return "nearest recorded requests: " + ", ".join(f"step {i} of {agent!r} ({score:.0%} similar)" for score, i, agent in best) if best else ""

    # --- tool calls -----------------------------------------------------------------------------

    def tool(self, report: ToolReport) -> Step:
        with self._lock:
            self._open()
            if self.boundary.failure is not None:
                raise self.boundary.failure
            log = self.log
            index = log.next_index
            parts = {k: canonical_hash(v) for k, v in sorted(report.state.items())}
            step = Step(
                index=index, kind="tool", agent="environment", role="tool", content=report.observation, tool_call_id=report.tool_call_id,
                tool_name=report.name, tool_arguments=report.arguments, state_fingerprint=canonical_hash(parts), state_parts=parts,
                error=report.error, phase=log.phase_for(index),
            )
            if log.replaying(index):
                try:
                    assert_tool_step(log, step, EnvironmentDrift)
                except FailforgeError as exc:
                    self.boundary.failure = self.boundary.failure or exc
                    raise
            return log.append(step)

    # --- the end --------------------------------------------------------------------------------

    def finish(self, request: FinishRequest) -> dict[str, Any]:
        """Close the run: its trajectory, and whether it reproduced the seed (replay) or why it failed."""
        with self._lock:
            self._open()
            self.finished = True
            failure = self.boundary.failure
            log = self.log
            if failure is None and log.next_index < log.replay_until:
                failure = PromptDrift(
                    f"the run ended after step {log.next_index - 1}, but the seed goes on to step {log.replay_until - 1}",
                    trajectory_id=self.id, step=log.next_index, expected=f"{log.replay_until} steps", actual=f"{log.next_index} steps",
                )
            trajectory = self.trajectory(request)
            identical = None
            if self.mode == "replay" and self.seed is not None:
                identical = failure is None and [s.comparable() for s in trajectory.steps] == [s.comparable() for s in self.seed.steps]
            return {
                "trajectory": trajectory.model_dump(mode="json"),
                "failure": None if failure is None else {"type": type(failure).__name__, "message": str(failure)},
                "identical": identical,
            }

    def trajectory(self, request: FinishRequest) -> Trajectory:
        seed = self.seed
        framework = self.request.framework if seed is None else str(seed.harness.config.get("framework", self.request.framework))
        return Trajectory(
            id=self.id,
            task=self.task,
            steps=list(self.log.steps),
            outcome=request.outcome,
            harness=seed.harness if seed is not None else ComponentSpec(name="proxy", config={"framework": framework}),
            environment=seed.environment if seed is not None else ComponentSpec(name=self.request.benchmark, config={"task_id": self.request.task_id}),
            model=seed.model if seed is not None else ComponentSpec(name=self.request.model, config={"role": "agent"}),
            agents=self.log.agent_names(),
            roster=list(self.log.roster),
            parent_id=seed.id if seed is not None and self.mode == "branch" else None,
            branch_step=self.request.branch_at if self.mode == "branch" else None,
            provenance={
                "failforge_version": __version__,
                "recorded_at": _dt.datetime.now(_dt.UTC).isoformat(),
                "via": "failforge proxy",
                "mode": self.mode,
                "upstream": getattr(self.boundary.upstream, "name", None),
            },
        )

    def status(self) -> dict[str, Any]:
        failure = self.boundary.failure
        return {
            "run_id": self.id, "mode": self.mode, "steps": self.log.next_index, "replay_until": self.log.replay_until,
            "agents": self.log.agent_names(), "finished": self.finished,
            "failure": None if failure is None else {"type": type(failure).__name__, "message": str(failure)},
        }

    def _open(self) -> None:
        if self.finished:
            raise ConfigError(f"run {self.id!r} is finished; open a new run (POST /runs)")


__all__ = ["AgentIdentity", "FinishRequest", "Injection", "ProxyRun", "RunRequest", "ToolReport", "fresh_call_id"]
