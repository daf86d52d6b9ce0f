"""Replay a seed (or a prefix of it) with fidelity assertions and no live model.

``replay(seed)`` re-runs the seed's harness in a fresh environment under ``Plan.replay``: every model
call is served from the seed after its request hash is checked, every tool runs live and its
observation and state fingerprint are checked, and the evaluator's verdict must be the recorded one.
``replay(seed, until=t)`` replays the steps before ``t`` and ends the run at the model call at ``t``
(the plan's stop: the boundary refuses that call as ``prefix_complete``, no exception steers it).
Any divergence raises the typed drift error at the exact step; in report mode
(``raise_on_drift=False``) it is returned instead, for audits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from failforge.errors import ConfigError, DriftError, InfrastructureError
from failforge.replay._episode import check_outcome, run_from_seed
from failforge.runlog import Plan
from failforge.trajectory import Outcome, Trajectory


@dataclass
class ReplayReport:
    trajectory_id: str
    environment: str
    steps_expected: int
    steps_replayed: int
    drift: DriftError | None
    infrastructure: str | None
    outcome: Outcome | None
    seconds: float
    harness_stats: dict[str, Any] | None = None
    """What the harness reported of the run beyond the steps (an external agent's process start)."""

    @property
    def identical(self) -> bool:
        return self.drift is None and self.infrastructure is None and self.steps_replayed == self.steps_expected

    def to_dict(self) -> dict[str, Any]:
        return {
            "trajectory_id": self.trajectory_id,
            "environment": self.environment,
            "steps_expected": self.steps_expected,
            "steps_replayed": self.steps_replayed,
            "identical": self.identical,
            "drift": self.drift.to_dict() if self.drift else None,
            "infrastructure": self.infrastructure,
            "success": None if self.outcome is None else self.outcome.success,
            "seconds": round(self.seconds, 3),
        }


def replay(
    seed: Trajectory, *, until: int | None = None, strict: bool = True, raise_on_drift: bool = True
) -> ReplayReport:
    """Replay ``seed`` up to (not including) step ``until``; the whole seed by default, then evaluate.

    A seed that cannot even be rebuilt (unknown environment or harness, a bad spec) is a ``ConfigError``;
    with ``raise_on_drift=False`` it is reported in ``infrastructure`` so an audit goes on.
    """
    end = len(seed.steps) if until is None else until
    if until is not None and (
        until < 1 or until > len(seed.steps) or (until < len(seed.steps) and seed.steps[until].kind != "agent")
    ):
        raise ConfigError(
            f"replay of {seed.id}: until={until} must be the index of an agent step (a model call) or the seed's length"
        )
    started = time.perf_counter()
    drift: DriftError | None = None
    infra: str | None = None
    outcome: Outcome | None = None
    replayed = 0
    stats: dict[str, Any] | None = None
    try:
        result = run_from_seed(
            seed, Plan.replay(len(seed.steps), until), strict=strict, evaluate=until is None or until == len(seed.steps)
        )
        replayed = len(result.steps)
        stats = result.extra.get("harness_stats")
        if not result.stopped:
            outcome = result.outcome
            check_outcome(seed, outcome)
    except DriftError as exc:
        if raise_on_drift:
            raise
        drift = exc
    except (InfrastructureError, ConfigError) as exc:
        if raise_on_drift:
            raise
        infra = f"{type(exc).__name__}: {exc}"
    return ReplayReport(
        trajectory_id=seed.id,
        environment=seed.environment.name,
        steps_expected=end,
        steps_replayed=replayed if drift is None else (drift.step or 0),
        drift=drift,
        infrastructure=infra,
        outcome=outcome,
        seconds=time.perf_counter() - started,
        harness_stats=stats,
    )


__all__ = ["ReplayReport", "replay"]
