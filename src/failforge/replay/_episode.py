"""Run one harness in one environment through a session: the single code path for record, replay, audit and branch.

Whether a step is recorded, replayed, changed or live is decided by the session's plan, never by the
harness, so the agent loop that produced a seed is the same loop that replays it.
:func:`run_from_seed` rebuilds a seed's harness and environment from what the seed recorded and runs
them under a plan; recording a new seed, replaying one (whole or a prefix), auditing and branching all
go through it (or, for a run with no seed yet, through :func:`run_episode` directly).

Replay checks every field the seed recorded, not only what the agent loop asks for: the task record,
every replayed step's comparable fields (text, tool calls, observations, fingerprints, images), and,
for a whole replay, the evaluator's whole outcome (:func:`check_outcome`: verdict, score, details). A seed
edited by hand (an amount changed in the instruction only, a rewritten answer, an outcome flipped to
failed or a score changed) therefore fails its replay at the edited step instead of replaying
"identical" and leaking the edit into every branch.

Several agents: the harness's roster (:func:`failforge.harnesses.harness_roster`) is the session's
before the first step, so every step is addressed and placed in its round; one model boundary serves
all the agents. Before a seed is replayed its agents are checked against the harness rebuilt from its
spec (:func:`check_seed_roster`): a step naming an agent the harness does not have, an unknown role,
or a roster that differs from the harness's is a :class:`RosterError` naming the seed, the step and
the agent, raised before anything runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from failforge.canonical import readable_diff
from failforge.environments import environment
from failforge.errors import ConfigError, RosterError, SeedIntegrityError
from failforge.harnesses import Harness, harness_from_spec, harness_roster
from failforge.llm import Injector, ModelBoundary, Responder
from failforge.replay._session import Session
from failforge.roster import ROLES, AgentProfile, UnknownRole
from failforge.runlog import Plan
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory


@dataclass
class EpisodeResult:
    """A finished (or, for a prefix replay, stopped) run and the session that ran it."""

    session: Session
    final_output: str | None
    outcome: Outcome | None
    task: Task
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> list[Step]:
        return list(self.session.steps)

    @property
    def boundary(self) -> ModelBoundary:
        return self.session.models

    @property
    def roster(self) -> list[AgentProfile]:
        return list(self.session.log.roster)

    @property
    def seconds(self) -> float:
        return self.session.seconds

    @property
    def stopped(self) -> bool:
        """A prefix replay reached its end (the run was not evaluated)."""
        return self.session.stopped


def run_episode(
    *,
    env_spec: ComponentSpec,
    harness: Harness,
    model: str,
    plan: Plan,
    upstream: Responder | None = None,
    change: Injector | None = None,
    expected: list[Step] | None = None,
    seed_id: str | None = None,
    run_id: str | None = None,
    strict: bool = True,
    source: str = "model",
    evaluate: bool = True,
    expected_task: Task | None = None,
    deadline: float | None = None,
) -> EpisodeResult:
    """Run ``harness`` in a fresh environment under ``plan``; raise the typed error at the first divergence.

    ``expected``: in replay and branch, the recording (the seed's steps); ``expected_task``: the task
    record it carries, which must equal the environment's. A prefix replay ends when the harness makes
    the model call at ``plan.until``; the result then has ``stopped`` set and no outcome.
    """
    plugin = environment(env_spec.name)
    profiles = harness_roster(harness)
    session = Session(
        plan,
        run_id=run_id,
        expected=expected or (),
        seed_id=seed_id,
        upstream=upstream,
        change=change,
        roster=profiles,
        strict=strict,
        source=source,
        resolver=harness.agent_resolver,
        drift_error=plugin.drift_error,
        deadline=deadline,
    )
    with plugin.open(env_spec) as episode:
        instruction = episode.instruction()
        task = episode.task_record()
        session.begin(instruction, task=task, expected_task=expected_task)
        client = session.client()
        final: str | None = None
        try:
            final = harness.run(
                client, model, instruction, session.tools(episode.toolbox(session.log), episode.fingerprint)
            )
        except Exception as exc:
            raised = session.settle(exc)
            if raised is exc:
                raise
            if raised is not None:
                raise raised from exc
        finally:
            client.close()
        session.end()  # the failure (a harness may swallow the boundary's refusal and stop), or a run that ended early
        outcome = episode.evaluate(final, session.steps) if evaluate and not session.stopped else None
        stats = harness.stats
        return EpisodeResult(
            session=session,
            final_output=final,
            outcome=outcome,
            task=task,
            extra={"harness_stats": dict(stats)} if stats else {},
        )


def run_from_seed(
    seed: Trajectory,
    plan: Plan,
    *,
    upstream: Responder | None = None,
    change: Injector | None = None,
    run_id: str | None = None,
    strict: bool = True,
    evaluate: bool = True,
    deadline: float | None = None,
) -> EpisodeResult:
    """Rebuild the seed's harness and environment from what it recorded and run them under ``plan``."""
    check_runnable(seed)
    harness = harness_from_spec(seed.harness)
    check_seed_roster(seed, harness)
    return run_episode(
        env_spec=seed.environment,
        harness=harness,
        model=seed.model.name,
        plan=plan,
        upstream=upstream,
        change=change,
        expected=list(seed.steps),
        seed_id=seed.id,
        run_id=run_id or seed.id,
        strict=strict,
        evaluate=evaluate,
        expected_task=seed.task,
        deadline=deadline,
    )


#: The harness name of a run recorded through the proxy's run API (its tools ran in the framework's process).
PROXY_HARNESS = "proxy"


def check_runnable(seed: Trajectory) -> None:
    """A seed failforge can run itself; a proxy-recorded run cannot be (its tools live in another process)."""
    if seed.harness.name == PROXY_HARNESS:
        raise ConfigError(
            f"seed {seed.id!r} was recorded through failforge proxy's run API: its tools ran in the framework's own"
            " process, so failforge cannot run it; replay or branch it through the proxy (POST /runs with seed_id), or"
            " record the framework with --harness external so failforge serves its tools over MCP"
        )


def check_seed_roster(seed: Trajectory, harness: Harness) -> None:
    """The seed's agents must be the harness's: every agent step's author in its roster, every role
    known, the recorded roster equal to the one the harness declares. Errors name seed, step and agent."""
    where: dict[str, Any] = {"trajectory_id": seed.id}
    try:
        profiles = harness_roster(harness)
    except UnknownRole as exc:
        raise RosterError(
            f"harness {seed.harness.name!r} gives agent {exc.agent!r} the unknown role {exc.role!r} (known:"
            f" {', '.join(ROLES)})",
            step=seed.first_step_of(exc.agent),
            expected=sorted(ROLES),
            actual=exc.role,
            **where,
        ) from None
    except ConfigError as exc:
        raise RosterError(f"harness {seed.harness.name!r} declares an invalid roster: {exc}", step=0, **where) from None
    if profiles is None:
        return  # an open roster: agents identify themselves at the model boundary
    names = [p.name for p in profiles]
    for step in seed.steps:
        if step.kind == "agent" and step.agent not in names:
            raise RosterError(
                f"step {step.index} names agent {step.agent!r}, which harness {seed.harness.name!r} does not have (its"
                f" agents: {', '.join(names)})",
                step=step.index,
                expected=names,
                actual=step.agent,
                **where,
            )
    recorded = {p.name: p for p in seed.roster}
    for profile in profiles:
        if recorded.get(profile.name) != profile:
            was = recorded.get(profile.name)
            raise RosterError(
                f"the seed's roster entry for agent {profile.name!r} differs from what harness {seed.harness.name!r}"
                " declares (the record was edited, or the harness changed)",
                step=seed.first_step_of(profile.name),
                expected=profile.model_dump(),
                actual=None if was is None else was.model_dump(),
                diff=readable_diff(profile.model_dump(), None if was is None else was.model_dump()),
                **where,
            )
    extra = [p.name for p in seed.roster if p.name not in names]
    if extra:
        raise RosterError(
            f"the seed's roster has agent {extra[0]!r}, which harness {seed.harness.name!r} does not have (its agents:"
            f" {', '.join(names)})",
            step=seed.first_step_of(extra[0]),
            expected=names,
            actual=extra[0],
            **where,
        )


#: Outcome details that measure a run instead of judging it (HumanEval's wall-clock ``seconds``): they
#: differ between two runs of the same seed, so replay does not compare them.
MEASURED_DETAILS = frozenset({"seconds"})


def _comparable_outcome(outcome: Outcome) -> dict[str, Any]:
    data = json.loads(json.dumps(outcome.model_dump(mode="json")))  # what a record reads back as
    data["details"] = {k: v for k, v in (data.get("details") or {}).items() if k not in MEASURED_DETAILS}
    return data


def check_outcome(seed: Trajectory, outcome: Outcome | None) -> None:
    """A whole replay must reach the outcome the seed recorded, every field of it (success, score,
    evaluator, details but measurements): a seed whose recorded verdict, score or details differ from
    what its evaluator says on replay was edited, and is not replayed "identically"."""
    if seed.outcome is None or outcome is None:
        return
    last = len(seed.steps) - 1
    if seed.outcome.success != outcome.success:
        raise SeedIntegrityError(
            f"the evaluator says success={outcome.success} on replay, but the seed records"
            f" success={seed.outcome.success}",
            trajectory_id=seed.id,
            step=last,
            expected=seed.outcome.success,
            actual=outcome.success,
        )
    recorded, now = _comparable_outcome(seed.outcome), _comparable_outcome(outcome)
    if recorded == now:
        return

    def value(data: dict[str, Any], name: str) -> Any:
        return data["details"].get(name.split(".", 1)[1]) if name.startswith("details.") else data.get(name)

    fields = [k for k in ("score", "evaluator") if recorded.get(k) != now.get(k)]
    fields += [
        f"details.{k}"
        for k in sorted(set(recorded["details"]) | set(now["details"]))
        if recorded["details"].get(k) != now["details"].get(k)
    ]
    was, got = {f: value(recorded, f) for f in fields}, {f: value(now, f) for f in fields}
    first = fields[0]
    raise SeedIntegrityError(
        f"the seed's outcome differs in {', '.join(fields)} from what its evaluator says on replay ({first}: recorded"
        f" {json.dumps(was[first])[:80]}, replay {json.dumps(got[first])[:80]}): the record was edited after it was"
        " made",
        trajectory_id=seed.id,
        step=last,
        expected=was,
        actual=got,
        diff=readable_diff(was, got),
    )


__all__ = [
    "PROXY_HARNESS",
    "EpisodeResult",
    "check_outcome",
    "check_runnable",
    "check_seed_roster",
    "run_episode",
    "run_from_seed",
]
