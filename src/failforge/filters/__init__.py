"""Filters: each judges one property of a branch and returns a verdict with its reason.

Every verdict is kept on the gold record (or the rejection), passed or not, so a user can see why a
candidate was kept or dropped without re-running anything.
"""

from __future__ import annotations

from collections.abc import Callable

from failforge.filters import differs, evaluator_failure, gold_exposure, note_leak, well_formed
from failforge.filters._context import FilterContext
from failforge.trajectory import FilterVerdict

Filter = Callable[[FilterContext], FilterVerdict]

#: In the order they are reported; all run, so every reason is known.
DEFAULT_FILTERS: dict[str, Filter] = {
    evaluator_failure.NAME: evaluator_failure.check,
    note_leak.NAME: note_leak.check,
    gold_exposure.NAME: gold_exposure.check,
    differs.NAME: differs.check,
    well_formed.NAME: well_formed.check,
}


def run_filters(ctx: FilterContext, filters: dict[str, Filter] | None = None) -> list[FilterVerdict]:
    return [check(ctx) for check in (filters or DEFAULT_FILTERS).values()]


__all__ = ["DEFAULT_FILTERS", "Filter", "FilterContext", "run_filters"]
