"""What the exporters share: the summary they return and how failforge gold becomes a record."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, Field

from failforge.attribution import LabelledFailure, RecordProblem
from failforge.errors import ConfigError
from failforge.trajectory import Trajectory

CODES = ("release", "failforge")


class ExportSummary(BaseModel):
    """What an export did. ``skipped`` records were not written (the CLI exits 1 naming them); ``notes``
    are about records that were written (e.g. an agent name the format's reader cannot parse)."""

    written: int = 0
    files: list[str] = Field(default_factory=list)
    skipped: list[RecordProblem] = Field(default_factory=list)
    notes: list[RecordProblem] = Field(default_factory=list)


#: Who writes tool outputs in Who&When's logs: ``{"name": "Computer_terminal", "role": "user"}`` in every
#: Algorithm-Generated log (303 entries), and in the TracerTraj rows built from them. Importers read the
#: name back as a tool observation, never as an agent.
TOOL_OUTPUT_NAME = "Computer_terminal"


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
