"""What the exporters share: the summary they return and how failforge gold becomes a record."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, Field

from failforge.attribution._record import LabelledFailure, RecordProblem
from failforge.errors import ConfigError
from failforge.trajectory import Trajectory

CODES = ("release", "failforge")


class ExportSummary(BaseModel):
    written: int = 0
    files: list[str] = Field(default_factory=list)
    skipped: list[RecordProblem] = Field(default_factory=list)


def as_records(items: Iterable[Trajectory | LabelledFailure]) -> list[LabelledFailure]:
    """failforge gold trajectories become labelled-failure records; records pass through."""
    from failforge.attribution.importers.failforge_gold import from_trajectory

    return [from_trajectory(i) if isinstance(i, Trajectory) else i for i in items]


def check_codes(codes: str) -> None:
    if codes not in CODES:
        raise ConfigError(f"codes must be one of {', '.join(CODES)}, not {codes!r}")


def safe_name(text: str) -> str:
    """A file- and reader-safe identifier: no slashes, no spaces."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "record"


def unique_names(records: Sequence[LabelledFailure], make: Callable[[LabelledFailure], str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for record in records:
        base = make(record)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(base if n == 0 else f"{base}-{n + 1}")
    return out
