"""What a job hands back to the driver: gold, a rejection with its reasons, or a failure with its error.

A leaf module (it imports only the schema), so every gold kind, the engine, the executors and the driver build
and read results the same way and nothing here imports any of them. A bad candidate is never an exception: it is
a rejection with reasons. Drift (the seed does not replay) and infrastructure trouble (a dead endpoint, a crashed
browser) are failures with their error and kind, never counted as rejections; anything else is an ``error`` (a bug
of ours), kept with its traceback so it can be found without re-running the attempt.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from failforge.errors import DriftError, InfrastructureError
from failforge.trajectory import FilterVerdict, Trajectory

Stage = Literal["plan", "guide", "replay", "continuation", "filters", "decisiveness", "output"]
ErrorKind = Literal["drift", "infrastructure", "error", "interrupted"]


class Rejection(BaseModel):
    attempt_id: str
    seed_id: str
    step: int
    mode: str
    sample: int
    status: Literal["rejected", "failed"]
    stage: Stage
    """Where the attempt stopped; ``output``: its record could not be written (a screenshot it names is nowhere)."""
    reasons: list[str]
    verdicts: list[FilterVerdict] = Field(default_factory=list)
    note: str | None = None
    error: dict[str, Any] | None = None
    error_kind: ErrorKind | None = Field(
        default=None,
        description=(
            "for failed attempts: drift (the seed does not replay), infrastructure (retried on the next run), "
            "error (a bug: `error.traceback` says where), interrupted"
        ),
    )
    trajectory: Trajectory | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)


@dataclass
class AttemptResult:
    status: Literal["gold", "rejected", "failed"]
    record: Trajectory | Rejection

    @property
    def attempt_id(self) -> str:
        if isinstance(self.record, Rejection):
            return self.record.attempt_id
        return str(self.record.provenance["attempt_id"])


def error_kind(exc: BaseException) -> Literal["drift", "infrastructure", "error"]:
    """Drift is the seed's (deterministic, never retried by default); infrastructure is the world's
    (a dead endpoint, a crashed browser: retried on the next run); anything else is a bug of ours."""
    if isinstance(exc, DriftError):
        return "drift"
    if isinstance(exc, InfrastructureError):
        return "infrastructure"
    return "error"


def error_info(exc: BaseException) -> dict[str, Any]:
    """The error as data: a drift's own fields; type and message otherwise, and for a bug (kind ``error``) the
    traceback too, so a failed attempt says where it broke."""
    if isinstance(exc, DriftError):
        return exc.to_dict()
    info: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if error_kind(exc) == "error":
        info["traceback"] = "".join(traceback.format_exception(exc))[-8000:]
    return info


def failed(
    base: dict[str, Any], stage: Stage, exc: BaseException, note: str | None = None, **extra: Any
) -> AttemptResult:
    """A failed attempt: the error, its kind and where it happened."""
    return AttemptResult(
        "failed",
        Rejection(
            **base,
            status="failed",
            stage=stage,
            reasons=[f"{type(exc).__name__}: {exc}"],
            note=note,
            error=error_info(exc),
            error_kind=error_kind(exc),
            **extra,
        ),
    )


def rejected(
    base: dict[str, Any],
    stage: Stage,
    reasons: list[str],
    *,
    verdicts: list[FilterVerdict] | None = None,
    note: str | None = None,
    trajectory: Trajectory | None = None,
) -> AttemptResult:
    """A rejected candidate: its reasons, every verdict it got, and its run when there was one."""
    return AttemptResult(
        "rejected",
        Rejection(
            **base,
            status="rejected",
            stage=stage,
            reasons=reasons,
            verdicts=verdicts or [],
            note=note,
            trajectory=trajectory,
        ),
    )


def rejected_by(
    base: dict[str, Any],
    verdicts: list[FilterVerdict],
    *,
    note: str | None = None,
    trajectory: Trajectory | None = None,
    stage: Stage = "filters",
) -> AttemptResult:
    """A candidate some filters rejected: one reason per failed verdict, every verdict kept."""
    return rejected(
        base,
        stage,
        [f"{v.name}: {v.reason}" for v in verdicts if not v.passed],
        verdicts=verdicts,
        note=note,
        trajectory=trajectory,
    )


__all__ = [
    "AttemptResult",
    "ErrorKind",
    "Rejection",
    "Stage",
    "error_info",
    "error_kind",
    "failed",
    "rejected",
    "rejected_by",
]
