"""The session: one run's plan, its run log, both boundaries, and the trajectory it assembles.

Everything that runs goes through a session: an in-process episode (:func:`failforge.replay.run_episode`),
a prefix replay, a branch, a proxy run, an external agent's run, a judge's conversation. It is the
cassette of vcrpy: it holds the record mode (the :class:`~failforge.runlog.Plan`) and the recording
(the seed's steps), and the boundaries it owns only route (the model boundary serves, changes, stops
or forwards each call as the plan says; the tool boundary runs, fingerprints and checks each call).

A run ends in one of three ways, and :meth:`Session.end` tells them apart:

- it **finished** (the harness returned): in replay it must have reached every step of the recording
  it was meant to reproduce, else the seed goes on where the run stopped and that is a drift;
- it **stopped** at the end of a prefix replay (the model call at ``plan.until`` was refused with
  ``prefix_complete``): the expected end, not a failure, and no exception is used to get there;
- it **failed**: the first error either boundary met (a drift, an exhausted recording, a dead endpoint)
  is raised, whatever the harness made of the refusal it was given.
"""

from __future__ import annotations

import datetime as _dt
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from failforge import __version__
from failforge.canonical import readable_diff
from failforge.environments import Fingerprint, ToolBoundary, Toolbox
from failforge.errors import ConfigError, EnvironmentDrift, FailforgeError, PromptDrift, SeedIntegrityError
from failforge.llm import (
    AgentResolver,
    BoundaryClient,
    Injector,
    ModelBoundary,
    Responder,
    boundary_client,
    surface_boundary_error,
)
from failforge.roster import AgentProfile, single_agent_roster
from failforge.runlog import Plan, RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory


def new_run_id(prefix: str = "run") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class Session:
    """One run. ``expected``: the recording it replays (a seed's steps; empty when recording);
    ``seed_id``: that recording's id, named by every error at a replayed step. ``change``: what
    answers the model call at a branch's step t (an injector; None: the live model). ``roster``: the
    agents (None: an open roster whose agents join as they call). ``deadline``: a
    ``time.monotonic()`` instant the run must end by (handed to the tool boundary)."""

    def __init__(
        self,
        plan: Plan,
        *,
        run_id: str | None = None,
        expected: Sequence[Step] = (),
        seed_id: str | None = None,
        upstream: Responder | None = None,
        change: Injector | None = None,
        roster: list[AgentProfile] | None = None,
        strict: bool = True,
        source: str = "model",
        resolver: AgentResolver | None = None,
        drift_error: type[EnvironmentDrift] = EnvironmentDrift,
        deadline: float | None = None,
    ) -> None:
        if plan.until > len(expected) and plan.mode != "record":
            raise ConfigError(
                f"a {plan.mode} plan up to step {plan.until} needs a recording of at least that many steps (it has"
                f" {len(expected)})"
            )
        if plan.mode == "branch" and plan.changed and change is None:
            raise ConfigError("a branch whose step t is changed needs the change (an injector)")
        self.plan = plan
        self.started = time.perf_counter()
        self.created_at = _dt.datetime.now(_dt.UTC).isoformat()
        self.log = RunLog(
            trajectory_id=run_id or new_run_id(),
            expected=list(expected),
            plan=plan,
            seed_id=seed_id,
            drift_error=drift_error,
        )
        self.log.set_roster(list(roster) if roster else single_agent_roster(), open_roster=roster is None)
        self.drift_error = drift_error
        self.deadline = deadline
        self.models = ModelBoundary(
            self.log,
            upstream=upstream if plan.live_allowed else None,
            injector=change,
            strict=strict,
            source=source,
            resolver=resolver,
        )

    # --- what the run is ------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.log.trajectory_id

    @property
    def failure(self) -> FailforgeError | None:
        return self.log.failure

    @property
    def stopped(self) -> bool:
        return self.log.stopped

    @property
    def steps(self) -> list[Step]:
        return self.log.steps

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    # --- the two boundaries ---------------------------------------------------------------------

    def client(self, agent: str | None = None, purpose: str | None = None) -> BoundaryClient:
        """An OpenAI client over the model boundary: unattributed (identity resolved per call) or ``agent``'s."""
        return boundary_client(self.models, agent, purpose)

    def tools(self, toolbox: Toolbox, fingerprint: Callable[[], Fingerprint]) -> ToolBoundary:
        """The tool boundary a harness is handed: ``toolbox`` observed, malformed calls refused and recorded."""
        return ToolBoundary(toolbox, self.log, fingerprint=fingerprint, drift=self.drift_error, deadline=self.deadline)

    # --- the run's life -------------------------------------------------------------------------

    def begin(self, instruction: str, *, task: Task | None = None, expected_task: Task | None = None) -> Step:
        """Step 0, the task. In replay it must be the recording's: the instruction (the environment's
        drift otherwise) and, given ``expected_task``, the whole task record (an edited seed otherwise)."""
        if self.log.replaying(0):
            self._check_task(instruction, task, expected_task)
        return self.log.append(
            Step(index=0, kind="task", agent="user", role="user", content=instruction, phase=self.log.phase_for(0))
        )

    def settle(self, exc: BaseException) -> BaseException | None:
        """What an exception out of the harness means: nothing (the run stopped at its prefix end, or
        failed and :meth:`end` raises the failure), or the typed error to raise in its place."""
        if self.log.failure is not None or self.log.stopped:
            return None
        surfaced = surface_boundary_error(self.models, exc)
        if isinstance(surfaced, FailforgeError):
            self.log.fail(surfaced)
            return None
        return surfaced

    def end(self) -> None:
        """The run is over: raise its failure, or a drift if a replay ended before its recording did."""
        log = self.log
        if log.failure is not None:
            raise log.failure
        if log.stopped:
            return
        if self.plan.mode in ("replay", "branch") and log.next_index < self.plan.until:
            raise log.fail(
                PromptDrift(
                    f"the run ended after step {log.next_index - 1}, but the seed goes on to step"
                    f" {self.plan.until - 1}",
                    trajectory_id=log.seed_id or log.trajectory_id,
                    step=log.next_index,
                    expected=f"{self.plan.until} steps",
                    actual=f"{log.next_index} steps",
                )
            )

    def identical_to(self, seed: Trajectory) -> bool:
        """A finished replay reproduced every comparable field of every step of ``seed``."""
        return self.log.failure is None and [s.comparable() for s in self.log.steps] == [
            s.comparable() for s in seed.steps
        ]

    # --- the trajectory -------------------------------------------------------------------------

    def trajectory(
        self,
        *,
        task: Task,
        outcome: Outcome | None,
        harness: ComponentSpec,
        environment: ComponentSpec,
        model: ComponentSpec,
        oracle: bool = False,
        provenance: dict[str, Any] | None = None,
    ) -> Trajectory:
        """The finished run as a record: a branch names its seed and step, every record its plan."""
        branched = self.plan.mode == "branch"
        return Trajectory(
            id=self.id,
            task=task,
            steps=list(self.log.steps),
            outcome=outcome,
            harness=harness,
            environment=environment,
            model=model,
            agents=self.log.agent_names(),
            roster=list(self.log.roster),
            oracle=oracle,
            parent_id=self.log.seed_id if branched else None,
            branch_step=self.plan.until if branched else None,
            provenance={
                "failforge_version": __version__,
                "created_at": self.created_at,
                "seconds": round(self.seconds, 3),
                "live_model_calls": self.models.live_calls,
                "plan": self.plan.describe(),
                **(provenance or {}),
            },
        )

    def _check_task(self, instruction: str, task: Task | None, expected_task: Task | None) -> None:
        log = self.log
        expected = log.expected_step(0)
        where = log.seed_id or log.trajectory_id
        if expected is None or expected.kind != "task" or expected.content != instruction:
            raise log.fail(
                self.drift_error(
                    "the task instruction differs from the recorded one",
                    trajectory_id=where,
                    step=0,
                    expected=getattr(expected, "content", None),
                    actual=instruction,
                    diff=readable_diff(str(getattr(expected, "content", "")), instruction),
                )
            )
        if expected_task is not None and task is not None and expected_task != task:
            recorded, now = expected_task.model_dump(mode="json"), task.model_dump(mode="json")
            fields = sorted(k for k in recorded if recorded[k] != now.get(k))
            raise log.fail(
                SeedIntegrityError(
                    f"the seed's task record differs from the environment's in {', '.join(fields)} (the record was"
                    " edited, or the benchmark changed)",
                    trajectory_id=where,
                    step=0,
                    expected={k: recorded[k] for k in fields},
                    actual={k: now.get(k) for k in fields},
                    diff=readable_diff({k: recorded[k] for k in fields}, {k: now.get(k) for k in fields}),
                )
            )


__all__ = ["Session", "new_run_id"]
