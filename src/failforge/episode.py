"""Run one episode through both boundaries: the single code path for record, replay, audit and branch.

Whether a step is recorded, replayed, injected or live is decided by the RunLog and the boundaries,
never by the harness, so the agent loop that produced a seed is the same loop that replays it.
:func:`run_from_seed` rebuilds a seed's harness and environment from what the seed recorded and runs
them; recording a new seed, replaying one, auditing and branching all go through it (or, for a run
with no seed yet, through :func:`run_episode` directly).

Replay checks every field the seed recorded, not only what the agent loop asks for: the task record,
every replayed step's comparable fields (text, tool calls, observations, fingerprints, images), and,
for a whole replay, the evaluator's verdict. A seed edited by hand (an amount changed in the
instruction only, a rewritten answer, an outcome flipped to failed) therefore fails its replay at the
edited step instead of replaying "identical" and leaking the edit into every branch.

Several agents: the harness's roster (:func:`failforge.harnesses.harness_roster`) is given to the run
log before the first step, so every step is addressed and placed in its round; one model boundary
serves all the agents. Before a seed is replayed its agents are checked against the harness rebuilt
from its spec (:func:`check_seed_roster`): a step naming an agent the harness does not have, an
unknown role, or a roster that differs from the harness's is a :class:`RosterError` naming the seed,
the step and the agent, raised before anything runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from failforge.canonical import readable_diff
from failforge.environments import environment
from failforge.errors import ConfigError, FailforgeError, PromptDrift, RosterError, SeedIntegrityError
from failforge.harnesses import Harness, harness_from_spec, harness_roster
from failforge.llm import ModelBoundary, Responder, boundary_client, surface_boundary_error
from failforge.llm._boundary import Injector
from failforge.roster import ROLES, AgentProfile, UnknownRole, single_agent_roster
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory


@dataclass
class EpisodeResult:
    steps: list[Step]
    final_output: str | None
    outcome: Outcome | None
    boundary: ModelBoundary
    seconds: float
    task: Task
    roster: list[AgentProfile] = field(default_factory=single_agent_roster)
    extra: dict[str, Any] = field(default_factory=dict)


def run_episode(
    *,
    env_spec: ComponentSpec,
    harness: Harness,
    model: str,
    log: RunLog,
    upstream: Responder | None,
    injector: Injector | None = None,
    strict: bool = True,
    source: str = "model",
    evaluate: bool = True,
    expected_task: Task | None = None,
) -> EpisodeResult:
    """Run the harness in a fresh environment; raise the typed drift error at the first divergence.

    ``expected_task``: in replay, the task record the seed carries; it must equal the environment's.
    """
    started = time.perf_counter()
    plugin = environment(env_spec.name)
    log.drift_error = plugin.drift_error
    profiles = harness_roster(harness)
    log.set_roster(profiles or single_agent_roster(), open_roster=profiles is None)
    with plugin.open(env_spec) as episode:
        instruction = episode.instruction()
        task = episode.task_record()
        if log.replaying(0):
            _check_task(log, task, expected_task, plugin.drift_error)
        log.append(Step(index=0, kind="task", agent="user", role="user", content=instruction, phase=log.phase_for(0)))
        boundary = ModelBoundary(log, upstream=upstream, injector=injector, strict=strict, source=source, resolver=getattr(harness, "agent_resolver", None))
        client = boundary_client(boundary)
        try:
            final = harness.run(client, model, instruction, episode.toolbox(log))
        except FailforgeError:
            raise
        except Exception as exc:
            surfaced = surface_boundary_error(boundary, exc)
            if surfaced is exc:
                raise
            raise surfaced from exc
        finally:
            client.close()
        if boundary.failure is not None:
            # A foreign loop may swallow the SDK error and stop; the typed failure still wins.
            raise boundary.failure
        if log.next_index < log.replay_until:
            raise PromptDrift(
                f"the harness ended the run after step {log.next_index - 1}, but the seed goes on to step {log.replay_until - 1}",
                trajectory_id=log.trajectory_id,
                step=log.next_index,
                expected=f"{log.replay_until} steps",
                actual=f"{log.next_index} steps",
            )
        outcome = episode.evaluate(final, log.steps) if evaluate else None
        return EpisodeResult(
            steps=list(log.steps),
            final_output=final,
            outcome=outcome,
            boundary=boundary,
            seconds=time.perf_counter() - started,
            task=task,
            roster=list(log.roster),
        )


def run_from_seed(
    seed: Trajectory,
    *,
    log: RunLog,
    upstream: Responder | None,
    injector: Injector | None = None,
    strict: bool = True,
    evaluate: bool = True,
) -> EpisodeResult:
    """Rebuild the seed's harness and environment from what it recorded and run them against ``log``."""
    harness = harness_from_spec(seed.harness)
    check_seed_roster(seed, harness)
    return run_episode(
        env_spec=seed.environment,
        harness=harness,
        model=seed.model.name,
        log=log,
        upstream=upstream,
        injector=injector,
        strict=strict,
        evaluate=evaluate,
        expected_task=seed.task,
    )


def check_seed_roster(seed: Trajectory, harness: Harness) -> None:
    """The seed's agents must be the harness's: every agent step's author in its roster, every role
    known, the recorded roster equal to the one the harness declares. Errors name seed, step and agent."""
    where = {"trajectory_id": seed.id}
    try:
        profiles = harness_roster(harness)
    except UnknownRole as exc:
        raise RosterError(
            f"harness {seed.harness.name!r} gives agent {exc.agent!r} the unknown role {exc.role!r} (known: {', '.join(ROLES)})",
            step=seed.first_step_of(exc.agent), expected=sorted(ROLES), actual=exc.role, **where,
        ) from None
    except ConfigError as exc:
        raise RosterError(f"harness {seed.harness.name!r} declares an invalid roster: {exc}", step=0, **where) from None
    if profiles is None:
        return  # an open roster: agents identify themselves at the model boundary
    names = [p.name for p in profiles]
    for step in seed.steps:
        if step.kind == "agent" and step.agent not in names:
            raise RosterError(
                f"step {step.index} names agent {step.agent!r}, which harness {seed.harness.name!r} does not have (its agents: {', '.join(names)})",
                step=step.index, expected=names, actual=step.agent, **where,
            )
    recorded = {p.name: p for p in seed.roster}
    for profile in profiles:
        if recorded.get(profile.name) != profile:
            was = recorded.get(profile.name)
            raise RosterError(
                f"the seed's roster entry for agent {profile.name!r} differs from what harness {seed.harness.name!r} declares (the record was edited, or the harness changed)",
                step=seed.first_step_of(profile.name),
                expected=profile.model_dump(),
                actual=None if was is None else was.model_dump(),
                diff=readable_diff(profile.model_dump(), None if was is None else was.model_dump()),
                **where,
            )
    extra = [p.name for p in seed.roster if p.name not in names]
    if extra:
        raise RosterError(
            f"the seed's roster has agent {extra[0]!r}, which harness {seed.harness.name!r} does not have (its agents: {', '.join(names)})",
            step=seed.first_step_of(extra[0]), expected=names, actual=extra[0], **where,
        )


def check_outcome(seed: Trajectory, outcome: Outcome | None) -> None:
    """A whole replay must reach the verdict the seed recorded; a flipped outcome means the record was edited."""
    if seed.outcome is None or outcome is None or seed.outcome.success == outcome.success:
        return
    raise SeedIntegrityError(
        f"the evaluator says success={outcome.success} on replay, but the seed records success={seed.outcome.success}",
        trajectory_id=seed.id,
        step=len(seed.steps) - 1,
        expected=seed.outcome.success,
        actual=outcome.success,
    )


def _check_task(log: RunLog, task: Task, expected_task: Task | None, drift: type[FailforgeError]) -> None:
    expected = log.expected_step(0)
    if expected is None or expected.kind != "task" or expected.content != task.instruction:
        raise drift(  # type: ignore[call-arg]
            "the task instruction differs from the recorded one",
            trajectory_id=log.trajectory_id,
            step=0,
            expected=getattr(expected, "content", None),
            actual=task.instruction,
            diff=readable_diff(str(getattr(expected, "content", "")), task.instruction),
        )
    if expected_task is not None and expected_task != task:
        recorded, now = expected_task.model_dump(mode="json"), task.model_dump(mode="json")
        fields = sorted(k for k in recorded if recorded[k] != now.get(k))
        raise SeedIntegrityError(
            f"the seed's task record differs from the environment's in {', '.join(fields)} (the record was edited, or the benchmark changed)",
            trajectory_id=log.trajectory_id,
            step=0,
            expected={k: recorded[k] for k in fields},
            actual={k: now.get(k) for k in fields},
            diff=readable_diff({k: recorded[k] for k in fields}, {k: now.get(k) for k in fields}),
        )


__all__ = ["EpisodeResult", "check_outcome", "check_seed_roster", "run_episode", "run_from_seed"]
