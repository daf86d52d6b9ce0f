"""Filters: each judges one property of a branch and returns a verdict with its reason.

A filter is a function ``(FilterContext) -> FilterVerdict`` registered in
:data:`failforge.plugins.filters` (``@filters.register("name", order=..., default=True)``). Every
verdict is kept on the gold record (or the rejection), passed or not, so a user can see why a
candidate was kept or dropped without re-running anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from failforge.filters._context import FilterContext
from failforge.plugins import filters as registry
from failforge.trajectory import FilterVerdict

Filter = Callable[[FilterContext], FilterVerdict]


def default_filters() -> list[str]:
    """The filters a campaign runs unless told otherwise, in the order they are reported."""
    return [i.name for i in sorted(registry, key=lambda i: (i.meta.get("order", 1000), i.name)) if i.meta.get("default")]


def run_filters(ctx: FilterContext, names: Sequence[str] | None = None) -> list[FilterVerdict]:
    """Run the named filters (all of them, so every reason is known), in the given order."""
    return [registry.get(name)(ctx) for name in (default_filters() if names is None else names)]


__all__ = ["Filter", "FilterContext", "default_filters", "run_filters"]
