"""The fidelity audit: replay whole seeds in report-not-raise mode and summarise per environment.

It answers "can I trust replays in this environment?": how many seeds replayed identically, which
kinds of drift occurred and where in the run (early / middle / late), cache misses, infrastructure
errors, and whether the benchmark's evaluator still says success on replay.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, Field

from failforge.errors import CacheMiss
from failforge.replay import ReplayReport, replay
from failforge.trajectory import Trajectory


class EnvironmentAudit(BaseModel):
    environment: str
    seeds: int = 0
    identical: int = 0
    drift_by_type: dict[str, int] = Field(default_factory=dict)
    drift_by_position: dict[str, int] = Field(
        default_factory=dict, description="early / middle / late third of the seed"
    )
    drift_by_step: dict[int, int] = Field(default_factory=dict)
    cache_misses: int = 0
    infrastructure_errors: int = 0
    evaluator_success_on_replay: int = 0
    seconds: float = 0.0


class AuditReport(BaseModel):
    environments: list[EnvironmentAudit]
    seeds: list[dict[str, Any]]


def _position(step: int, total: int) -> str:
    if total <= 0:
        return "early"
    third = step / total
    return "early" if third < 1 / 3 else "middle" if third < 2 / 3 else "late"


def audit(seeds: Iterable[Trajectory], on_seed: Callable[[ReplayReport], None] | None = None) -> AuditReport:
    """Replay every seed to its end, reporting rather than raising, and summarise fidelity per environment
    (identical, drift by type and position, cache misses, infrastructure errors, evaluator agreement)."""
    per_env: dict[str, EnvironmentAudit] = {}
    drift_types: dict[str, Counter[str]] = defaultdict(Counter)
    positions: dict[str, Counter[str]] = defaultdict(Counter)
    steps: dict[str, Counter[int]] = defaultdict(Counter)
    rows: list[dict[str, Any]] = []
    for seed in seeds:
        report = replay(seed, raise_on_drift=False)
        env = per_env.setdefault(seed.environment.name, EnvironmentAudit(environment=seed.environment.name))
        env.seeds += 1
        env.seconds += report.seconds
        env.identical += report.identical
        if report.drift is not None:
            kind = type(report.drift).__name__
            drift_types[env.environment][kind] += 1
            step = report.drift.step or 0
            positions[env.environment][_position(step, len(seed.steps))] += 1
            steps[env.environment][step] += 1
            if isinstance(report.drift, CacheMiss):
                env.cache_misses += 1
        if report.infrastructure:
            env.infrastructure_errors += 1
        if report.outcome is not None and report.outcome.success:
            env.evaluator_success_on_replay += 1
        rows.append(report.to_dict())
        if on_seed:
            on_seed(report)
    for name, env in per_env.items():
        env.drift_by_type = dict(drift_types[name])
        env.drift_by_position = dict(positions[name])
        env.drift_by_step = dict(sorted(steps[name].items()))
        env.seconds = round(env.seconds, 3)
    return AuditReport(environments=sorted(per_env.values(), key=lambda e: e.environment), seeds=rows)
