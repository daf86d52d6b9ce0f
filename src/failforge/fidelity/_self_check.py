"""The self-check every environment runs in its tests: does replay in it mean anything?

An environment plugin is only useful to failforge if (a) its oracle produces a run its own evaluator
accepts, (b) that run replays identically with no live model, (c) its pristine state is the same every
time it is opened, (d) replay notices when the world differs from the recording, with the
environment's own typed drift error at the exact step, and (e) its evaluator tells a finished task
from an unfinished one: gold is "a run the evaluator says failed", so an evaluator that accepts
anything would make every record a lie. :func:`self_check` tries all five for real on one
task and says which failed and why; :func:`assert_self_check` turns that into a test.

The negative check (e) runs the oracle's own responses again, live, through the seed's harness, each
time spoiled in one way: the final answer replaced (:data:`ALTERED_ANSWER`), or one of the tool calls
that changed the state left out, the last first (the last write dropped; then the one before it, up to
:data:`MAX_DROPPED_WRITES`). The check passes as soon as one spoiled run fails the evaluator, and fails
when the evaluator accepts them all: an evaluator that checks the answer is caught by the first, one
that checks the state by a dropped write, one that checks nothing by neither.

It lives with fidelity, above the runner and the seeds it exercises: it checks the whole path a user relies
on, not the environment alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, Field

from failforge.environments import Environment, environment
from failforge.errors import DriftError, FailforgeError
from failforge.harnesses import harness_from_spec
from failforge.llm import OracleResponder
from failforge.replay import Plan, replay, run_episode
from failforge.seeds import env_spec, oracle_seed
from failforge.trajectory import Step, Trajectory

#: The final answer of the "altered answer" run: no task's answer, and says so.
ALTERED_ANSWER = "I could not complete the task, so this answer is deliberately not the task's answer."
#: State-changing tool calls dropped one at a time (the last first) before the evaluator is called blind.
MAX_DROPPED_WRITES = 4


class SelfCheck(BaseModel):
    name: str
    passed: bool
    detail: str


class SelfCheckReport(BaseModel):
    environment: str
    task_id: str
    checks: list[SelfCheck] = Field(default_factory=list)
    seed: Trajectory | None = None

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def summary(self) -> str:
        return "; ".join(f"{c.name}: {'ok' if c.passed else 'FAILED'} ({c.detail})" for c in self.checks)


def _tampered(seed: Trajectory, index: int, update: dict[str, Any]) -> Trajectory:
    steps = list(seed.steps)
    steps[index] = steps[index].model_copy(update=update)
    return seed.model_copy(update={"steps": steps})


def _first_tool_step(seed: Trajectory) -> Step | None:
    return next((s for s in seed.steps if s.kind == "tool"), None)


def self_check(env: str, task_id: str, options: BaseModel | Mapping[str, Any] | None = None) -> SelfCheckReport:
    """Record the oracle seed of ``task_id`` and put replay in ``env`` and its evaluator through five checks."""

    plugin = environment(env)
    report = SelfCheckReport(environment=env, task_id=task_id)
    add = report.checks.append

    try:
        spec = env_spec(env, task_id, options)
        with plugin.open(spec) as first, plugin.open(spec) as second:
            a, b = first.fingerprint(), second.fingerprint()
        add(
            SelfCheck(
                name="pristine state is reproducible",
                passed=a == b,
                detail=f"two fresh episodes fingerprint {a.digest[:12]} and {b.digest[:12]}",
            )
        )
    except FailforgeError as exc:
        add(SelfCheck(name="pristine state is reproducible", passed=False, detail=f"{type(exc).__name__}: {exc}"))

    try:
        seed = oracle_seed(env, task_id, options)
    except FailforgeError as exc:
        add(SelfCheck(name="oracle seed records", passed=False, detail=f"{type(exc).__name__}: {exc}"))
        return report
    report.seed = seed
    ok = bool(seed.outcome and seed.outcome.success)
    add(
        SelfCheck(
            name="oracle seed passes the evaluator",
            passed=ok,
            detail=f"{len(seed.steps)} steps, outcome {seed.outcome.success if seed.outcome else None}",
        )
    )

    result = replay(seed, raise_on_drift=False)
    add(
        SelfCheck(
            name="seed replays identically",
            passed=result.identical,
            detail=str(
                result.drift or result.infrastructure or f"{result.steps_replayed}/{result.steps_expected} steps"
            ),
        )
    )

    tool = _first_tool_step(seed)
    if tool is None:
        add(
            SelfCheck(
                name="tampered observation is caught",
                passed=False,
                detail="the oracle seed has no tool step to tamper with",
            )
        )
        return report
    for name, update in (
        ("tampered observation is caught", {"content": (tool.content or "") + " [tampered]"}),
        ("tampered state fingerprint is caught", {"state_fingerprint": "0" * 64}),
    ):
        try:
            replay(_tampered(seed, tool.index, update))
        except plugin.drift_error as exc:
            at = exc.step
            add(
                SelfCheck(
                    name=name,
                    passed=at == tool.index,
                    detail=f"{type(exc).__name__} at step {at} (tampered step {tool.index})",
                )
            )
        except DriftError as exc:
            add(
                SelfCheck(
                    name=name,
                    passed=False,
                    detail=f"raised {type(exc).__name__}, not this environment's {plugin.drift_error.__name__}",
                )
            )
        else:
            add(SelfCheck(name=name, passed=False, detail=f"replay did not notice the tampered step {tool.index}"))
    add(_negative_check(plugin, seed))
    return report


def _responses(seed: Trajectory) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """The seed's model responses in call order, as (content, tool calls in the chat-completions shape)."""
    return [
        (
            s.content,
            [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in s.tool_calls
            ],
        )
        for s in seed.steps
        if s.kind == "agent"
    ]


def _writes(seed: Trajectory, pristine: str | None) -> list[Step]:
    """The seed's tool steps after which the state differed from the state before them, last first."""
    writes, before = [], pristine
    for step in seed.steps:
        if step.kind == "tool":
            if step.state_fingerprint != before:
                writes.append(step)
            before = step.state_fingerprint
    return writes[::-1]


def _without_call(
    responses: list[tuple[str | None, list[dict[str, Any]]]], call_id: str | None
) -> list[tuple[str | None, list[dict[str, Any]]]]:
    """The responses with the tool call ``call_id`` left out; a response left with no call is dropped
    whole (kept, its text would end the run there as a premature final answer)."""
    kept = []
    for content, calls in responses:
        left = [c for c in calls if c["id"] != call_id]
        if calls and not left:
            continue
        kept.append((content, left))
    return kept


def _spoiled_runs(
    seed: Trajectory, pristine: str | None
) -> Iterator[tuple[str, list[tuple[str | None, list[dict[str, Any]]]]]]:
    """(what was spoiled, the responses to play) for each spoiled run, in the order they are tried."""
    responses = _responses(seed)
    if responses and not responses[-1][1]:
        yield "final answer altered", [*responses[:-1], (ALTERED_ANSWER, [])]
    for number, step in enumerate(_writes(seed, pristine)[:MAX_DROPPED_WRITES]):
        which = "last write" if number == 0 else f"write {number + 1} from the end"
        yield f"{which} dropped (step {step.index}, {step.tool_name})", _without_call(responses, step.tool_call_id)


def _play(responses: list[tuple[str | None, list[dict[str, Any]]]]) -> Any:
    """A responder that answers the k-th model call with the k-th response, whatever the observations were."""

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        if ordinal < len(responses):
            content, calls = responses[ordinal]
            return content, calls or None
        return ALTERED_ANSWER, None

    return OracleResponder(script, name="conformance.spoiled_oracle")


NEGATIVE = "a spoiled run fails the evaluator"


def _negative_check(plugin: Environment, seed: Trajectory) -> SelfCheck:
    """Run the oracle again with its answer altered, or one write dropped, until the evaluator says failed."""

    try:
        with plugin.open(seed.environment) as fresh:
            pristine: str | None = fresh.fingerprint().digest
    except FailforgeError as exc:
        return SelfCheck(
            name=NEGATIVE, passed=False, detail=f"could not open a fresh episode: {type(exc).__name__}: {exc}"
        )
    accepted: list[str] = []
    for what, responses in _spoiled_runs(seed, pristine):
        try:
            result = run_episode(
                env_spec=seed.environment,
                harness=harness_from_spec(seed.harness),
                model=seed.model.name,
                plan=Plan.record(),
                upstream=_play(responses),
                run_id=f"{seed.id}-spoiled-{len(accepted)}",
                source="oracle",
            )
        except FailforgeError as exc:
            accepted.append(f"{what}: the run did not finish ({type(exc).__name__}: {exc})")
            continue
        if result.outcome is not None and not result.outcome.success:
            tried = (
                f" (the evaluator accepted {len(accepted)} spoiled run(s) before: {'; '.join(accepted)})"
                if accepted
                else ""
            )
            return SelfCheck(
                name=NEGATIVE, passed=True, detail=f"{what}: {result.outcome.evaluator} says failed{tried}"
            )
        accepted.append(f"{what}: success" if result.outcome is not None else f"{what}: no outcome")
    if not accepted:
        return SelfCheck(
            name=NEGATIVE,
            passed=False,
            detail="the oracle seed has neither a final answer nor a tool call that changed the state to spoil",
        )
    return SelfCheck(
        name=NEGATIVE, passed=False, detail="the evaluator accepted every spoiled run: " + "; ".join(accepted)
    )


def assert_self_check(env: str, task_id: str, options: BaseModel | Mapping[str, Any] | None = None) -> SelfCheckReport:
    """:func:`self_check`, failing with every reason when any check fails (for a plugin's tests)."""
    report = self_check(env, task_id, options)
    if not report.passed:
        raise AssertionError(f"environment {env!r} fails its self-check on {task_id}: {report.summary()}")
    return report


__all__ = ["ALTERED_ANSWER", "MAX_DROPPED_WRITES", "SelfCheck", "SelfCheckReport", "assert_self_check", "self_check"]
