"""One run behind the proxy's run API: a session whose tools run in the framework's own process.

A proxy run is a :class:`failforge.replay.Session` like any other (the same plan, run log, model
boundary and trajectory assembly as an in-process episode); what differs is only where its tools run:
in the outside process, which reports each call, its observation and a description of the state after
it (``POST /runs/{id}/tools``). The report goes through the same tool boundary function as an
environment's own call (:func:`failforge.environments._base.observe_tool_call`): the reported state is
fingerprinted per part and, in replay, the step is checked against the seed's.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from failforge.environments import ToolResult, fingerprint_of, observe_tool_call
from failforge.errors import ConfigError, DriftError, EnvironmentDrift, FailforgeError
from failforge.gateway import ServedRun
from failforge.llm import Responder, chat_response, valid_name
from failforge.proxy._models import Failure, FinishRequest, Injection, RunRequest, RunResult, RunStatus, ToolReport
from failforge.replay import PROXY_HARNESS, Plan, Session
from failforge.roster import AgentProfile
from failforge.trajectory import ComponentSpec, Step, Task, Trajectory


def fresh_call_id() -> str:
    """Injected and live responses need tool-call ids no earlier step used (the Agents SDK refuses a reused one)."""
    return f"call_{uuid.uuid4().hex[:24]}"


def injector_for(injection: Injection) -> Any:
    def inject(body: dict[str, Any]) -> dict[str, Any]:
        import json

        calls = [
            {
                "id": fresh_call_id(),
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in injection.tool_calls
        ]
        return chat_response(
            str(body.get("model", "injected")),
            injection.content,
            calls or None,
            response_id=f"chatcmpl-{uuid.uuid4().hex[:12]}",
            created=0,
        )

    return inject


def failure_of(exc: FailforgeError | None) -> Failure | None:
    if exc is None:
        return None
    if isinstance(exc, DriftError):
        return Failure(
            type=type(exc).__name__,
            message=str(exc),
            step=exc.step,
            agent=exc.agent,
            trajectory_id=exc.trajectory_id,
            nearest=exc.nearest,
        )
    return Failure(type=type(exc).__name__, message=str(exc))


def plan_for(request: RunRequest, seed: Trajectory | None) -> Plan:
    if request.mode == "record":
        return Plan.record()
    assert seed is not None
    if request.mode == "replay":
        return Plan.replay(len(seed.steps))
    t = int(request.branch_at or 0)
    if t >= len(seed.steps):
        raise ConfigError(f"branch_at {t} is past the end of seed {seed.id!r} ({len(seed.steps)} steps)")
    if seed.steps[t].kind != "agent":
        raise ConfigError(
            f"branch_at {t}: step {t} of seed {seed.id!r} is a {seed.steps[t].kind} step, not a model call"
        )
    return Plan.branch(t, changed=request.injection is not None)


class ProxyRun:
    """A run the proxy serves; every method is safe to call from the server's worker threads."""

    def __init__(self, request: RunRequest, *, seed: Trajectory | None, upstream: Responder | None) -> None:
        self.request = request
        self.seed = seed
        self.id = valid_name(request.run_id) if request.run_id else f"run-{uuid.uuid4().hex[:12]}"
        if request.mode != "record" and seed is None:
            raise ConfigError(
                f"a {request.mode} run needs a seed (seed_id of a seed the proxy was started with or a run it finished,"
                " or the seed itself)"
            )
        if request.mode == "branch" and request.branch_at is None:
            raise ConfigError("a branch run needs branch_at: the step where the recording stops being served")
        if request.mode == "branch" and request.injection is None and upstream is None:
            raise ConfigError(
                "a branch run without an injection continues live, and this proxy has no upstream (--upstream)"
            )
        if request.mode == "record" and request.task is None:
            raise ConfigError("a record run needs the task: the instruction the agents are given")
        plan = plan_for(request, seed)
        if seed is not None:
            instruction = str(seed.steps[0].content or "")
            if request.task is not None and request.task != instruction:
                raise ConfigError(f"the task differs from seed {seed.id!r}'s instruction")
            roster: list[AgentProfile] | None = list(seed.roster) or None
            self.task = seed.task
        else:
            instruction = str(request.task)
            roster = list(request.roster) or None
            self.task = Task(benchmark=request.benchmark, task_id=request.task_id, instruction=instruction)
        change = injector_for(request.injection) if request.mode == "branch" and request.injection is not None else None
        self.session = Session(
            plan,
            run_id=self.id,
            expected=seed.steps if seed else (),
            seed_id=seed.id if seed else None,
            upstream=upstream,
            change=change,
            roster=roster,
        )
        self.session.begin(instruction)
        self.served = ServedRun(self.id, self.session.models, None)
        self.finished = False
        self._lock = threading.Lock()

    @property
    def mode(self) -> str:
        return self.request.mode

    # --- tool calls -----------------------------------------------------------------------------

    def tool(self, report: ToolReport) -> Step:
        """A tool call the outside process ran: recorded through the tool boundary, checked in replay."""
        with self._lock:
            self._open()
            return observe_tool_call(
                self.session.log,
                name=report.name,
                arguments=report.arguments,
                call_id=report.tool_call_id,
                run=lambda: ToolResult(content=report.observation, error=report.error),
                fingerprint=lambda: fingerprint_of(report.state),
                drift=EnvironmentDrift,
            )

    # --- the end --------------------------------------------------------------------------------

    def finish(self, request: FinishRequest) -> RunResult:
        """Close the run: its trajectory, whether it reproduced the seed (replay), and its failure."""
        with self._lock:
            self._open()
            self.finished = True
            session = self.session
            try:
                session.end()
            except FailforgeError:
                pass  # kept as the session's failure, reported below
            trajectory = self.trajectory(request)
            identical = (
                session.identical_to(self.seed) if self.request.mode == "replay" and self.seed is not None else None
            )
            failure = failure_of(session.failure)
            return RunResult(
                run_id=self.id,
                status="failed" if failure is not None else "finished",
                trajectory=trajectory.model_dump(mode="json"),
                identical=identical,
                failure=failure,
            )

    def trajectory(self, request: FinishRequest) -> Trajectory:
        seed = self.seed
        framework = (
            self.request.framework
            if seed is None
            else str(seed.harness.config.get("framework", self.request.framework))
        )
        return self.session.trajectory(
            task=self.task,
            outcome=request.outcome,
            harness=(
                seed.harness if seed is not None else ComponentSpec(name=PROXY_HARNESS, config={"framework": framework})
            ),
            environment=(
                seed.environment
                if seed is not None
                else ComponentSpec(name=self.request.benchmark, config={"task_id": self.request.task_id})
            ),
            model=seed.model if seed is not None else ComponentSpec(name=self.request.model, config={"role": "agent"}),
            provenance={
                "via": "failforge proxy",
                "mode": self.request.mode,
                "upstream": getattr(self.session.models.upstream, "name", None),
            },
        )

    def status(self) -> RunStatus:
        log = self.session.log
        return RunStatus(
            run_id=self.id,
            mode=self.request.mode,
            steps=log.next_index,
            replay_until=log.replay_until,
            agents=log.agent_names(),
            failure=failure_of(log.failure),
        )

    def _open(self) -> None:
        if self.finished:
            raise ConfigError(f"run {self.id!r} is finished; open a new run (POST /runs)")


__all__ = ["PROXY_HARNESS", "ProxyRun", "failure_of", "fresh_call_id", "injector_for"]
