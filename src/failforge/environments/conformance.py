"""The self-check every environment runs in its tests: does replay in it mean anything?

An environment plugin is only useful to failforge if (a) its oracle produces a run its own evaluator
accepts, (b) that run replays identically with no live model, (c) its pristine state is the same every
time it is opened, and (d) replay notices when the world differs from the recording, with the
environment's own typed drift error at the exact step. :func:`check_environment` tries all four for
real on one task and says which failed and why; :func:`assert_conformant` turns that into a test.

It sits in the environments package but imports the layers above lazily (seeds, fidelity), because it
exercises the whole path a user relies on, not the environment alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from failforge.trajectory import Step, Trajectory


class ConformanceCheck(BaseModel):
    name: str
    passed: bool
    detail: str


class ConformanceReport(BaseModel):
    environment: str
    task_id: str
    checks: list[ConformanceCheck] = Field(default_factory=list)
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


def check_environment(env: str, task_id: str, options: BaseModel | Mapping[str, Any] | None = None) -> ConformanceReport:
    """Record the oracle seed of ``task_id`` and put replay in ``env`` through four checks."""
    from failforge.environments import environment
    from failforge.errors import DriftError, FailforgeError
    from failforge.replay import replay
    from failforge.seeds import env_spec, oracle_seed

    plugin = environment(env)
    report = ConformanceReport(environment=env, task_id=task_id)
    add = report.checks.append

    try:
        spec = env_spec(env, task_id, options)
        with plugin.open(spec) as first, plugin.open(spec) as second:
            a, b = first.fingerprint(), second.fingerprint()
        add(ConformanceCheck(name="pristine state is reproducible", passed=a == b, detail=f"two fresh episodes fingerprint {a.digest[:12]} and {b.digest[:12]}"))
    except FailforgeError as exc:
        add(ConformanceCheck(name="pristine state is reproducible", passed=False, detail=f"{type(exc).__name__}: {exc}"))

    try:
        seed = oracle_seed(env, task_id, options)
    except FailforgeError as exc:
        add(ConformanceCheck(name="oracle seed records", passed=False, detail=f"{type(exc).__name__}: {exc}"))
        return report
    report.seed = seed
    ok = bool(seed.outcome and seed.outcome.success)
    add(ConformanceCheck(name="oracle seed passes the evaluator", passed=ok, detail=f"{len(seed.steps)} steps, outcome {seed.outcome.success if seed.outcome else None}"))

    result = replay(seed, raise_on_drift=False)
    add(ConformanceCheck(name="seed replays identically", passed=result.identical, detail=str(result.drift or result.infrastructure or f"{result.steps_replayed}/{result.steps_expected} steps")))

    tool = _first_tool_step(seed)
    if tool is None:
        add(ConformanceCheck(name="tampered observation is caught", passed=False, detail="the oracle seed has no tool step to tamper with"))
        return report
    for name, update in (
        ("tampered observation is caught", {"content": (tool.content or "") + " [tampered]"}),
        ("tampered state fingerprint is caught", {"state_fingerprint": "0" * 64}),
    ):
        try:
            replay(_tampered(seed, tool.index, update))
        except plugin.drift_error as exc:
            at = exc.step
            add(ConformanceCheck(name=name, passed=at == tool.index, detail=f"{type(exc).__name__} at step {at} (tampered step {tool.index})"))
        except DriftError as exc:
            add(ConformanceCheck(name=name, passed=False, detail=f"raised {type(exc).__name__}, not this environment's {plugin.drift_error.__name__}"))
        else:
            add(ConformanceCheck(name=name, passed=False, detail=f"replay did not notice the tampered step {tool.index}"))
    return report


def assert_conformant(env: str, task_id: str, options: BaseModel | Mapping[str, Any] | None = None) -> ConformanceReport:
    """:func:`check_environment`, failing with every reason when any check fails (for a plugin's tests)."""
    report = check_environment(env, task_id, options)
    if not report.passed:
        raise AssertionError(f"environment {env!r} is not conformant on {task_id}: {report.summary()}")
    return report


__all__ = ["ConformanceCheck", "ConformanceReport", "assert_conformant", "check_environment"]
