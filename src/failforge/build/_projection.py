"""From what the cells have done so far to what reaching the targets will take: attempts, tokens, dollars, hours.

The model is deliberately plain, so a user can check it by hand: a cell's yield (kept / settled attempts) and its
spend per settled attempt (original arms included, spread over the attempts they served) stay what the attempts so
far measured; the gold a cell still owes is its quota less what it kept; the attempts that takes are that gold over
the yield, at most what the cell still has planned. Wall time is the cell's measured wall seconds per attempt (its
own executor and concurrency). Mode targets are projected the same way over every cell that plans the mode.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from failforge.build._recipe import Price, Recipe
from failforge.build._stats import CellStats


class CellProjection(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    cell: str
    attempts: int
    kept: int
    yield_: float | None = Field(
        default=None, alias="yield", description="kept / settled attempts; None before any settled"
    )
    quota: int | None
    pending: int
    per_attempt: dict[str, float] = Field(description="calls, tokens, dollars, wall seconds per settled attempt")
    per_kept: dict[str, float] | None = Field(description="the same per kept record; None before any kept")
    more_attempts: int | None = Field(description="attempts still to run; None: not projectable (nothing kept yet)")
    more: dict[str, float] | None = Field(description="tokens, dollars, wall seconds those attempts take")
    reaches_quota: bool | None = Field(description="False: even every planned attempt is projected to fall short")
    note: str = ""


class Projection(BaseModel):
    """Per cell and in total, plus per mode where the recipe sets mode targets; ``budget`` says what stops first."""

    cells: list[CellProjection]
    modes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    so_far: dict[str, float]
    to_targets: dict[str, float | None] = Field(
        description="the build's totals when its targets are met (so far plus the projected rest); None: unknown"
    )
    budget: dict[str, Any] = Field(default_factory=dict)


def _spend(stats: CellStats, prices: dict[str, Price]) -> dict[str, float]:
    tokens = sum(s.tokens for s in stats.spend.values())
    calls = sum(s.calls for s in stats.spend.values())
    dollars = sum(
        prices.get(role, Price()).dollars(s.prompt_tokens, s.completion_tokens) for role, s in stats.spend.items()
    )
    return {"calls": float(calls), "tokens": float(tokens), "dollars": dollars}


def project_cell(stats: CellStats, quota: int | None, prices: dict[str, Price], wall_seconds: float) -> CellProjection:
    """One cell: ``prices`` by role (agent, guide), ``wall_seconds`` the cell's measured wall time so far."""
    spend = _spend(stats, prices)
    n = stats.attempts
    per_attempt = {key: (value / n if n else 0.0) for key, value in spend.items()}
    per_attempt["seconds"] = wall_seconds / n if n else 0.0
    per_kept = (
        {**{key: value / stats.kept for key, value in spend.items()}, "seconds": wall_seconds / stats.kept}
        if stats.kept
        else None
    )
    yield_ = stats.kept / n if n else None
    more: int | None
    reaches: bool | None = None
    note = ""
    if quota is None:
        more, note = stats.pending, "no target covers this cell: it runs its whole plan"
    elif stats.kept >= quota:
        more, reaches = 0, True
    elif not n:
        more, note = None, "no attempt settled yet: run a pilot first"
    elif not yield_:
        # the build gives such a cell its whole plan while it is short of its quota: that is what it will spend
        more, reaches = stats.pending, False
        note = (
            f"nothing kept in {n} attempts: projected to run its whole plan ({stats.pending} more) and keep none"
            " (a larger pilot may find its yield)"
        )
    else:
        need = math.ceil((quota - stats.kept) / yield_)
        more, reaches = min(need, stats.pending), need <= stats.pending
        if not reaches:
            note = (
                f"the plan is too small: {stats.pending} planned attempts are projected to keep"
                f" {int(stats.pending * yield_)} of the {quota - stats.kept} still wanted (plan more steps, modes or"
                " samples, or add seeds)"
            )
    return CellProjection(
        cell=stats.cell,
        attempts=n,
        kept=stats.kept,
        **{"yield": yield_},
        quota=quota,
        pending=stats.pending,
        per_attempt=per_attempt,
        per_kept=per_kept,
        more_attempts=more,
        more=(
            {
                "tokens": more * per_attempt["tokens"],
                "dollars": more * per_attempt["dollars"],
                "seconds": more * per_attempt["seconds"],
            }
            if more is not None
            else None
        ),
        reaches_quota=reaches,
        note=note,
    )


def project(
    recipe: Recipe,
    stats: dict[str, CellStats],
    quotas: dict[str, int | None],
    prices: dict[str, dict[str, Price]],
    wall: dict[str, float],
) -> Projection:
    """The whole build: every cell, the mode targets, the totals so far and at the targets, and the budget."""
    cells = [project_cell(stats[c.name], quotas[c.name], prices[c.name], wall.get(c.name, 0.0)) for c in recipe.cells]
    so_far = {"attempts": 0.0, "kept": 0.0, "tokens": 0.0, "dollars": 0.0, "seconds": 0.0}
    for cell in cells:
        spend = _spend(stats[cell.cell], prices[cell.cell])
        so_far["attempts"] += cell.attempts
        so_far["kept"] += cell.kept
        so_far["tokens"] += spend["tokens"]
        so_far["dollars"] += spend["dollars"]
        so_far["seconds"] += wall.get(cell.cell, 0.0)
    known = all(c.more_attempts is not None for c in cells)
    to_targets: dict[str, float | None] = {
        "attempts": so_far["attempts"] + sum(c.more_attempts or 0 for c in cells) if known else None,
        "kept": (
            so_far["kept"]
            + sum(
                min(c.quota - c.kept, int((c.more_attempts or 0) * (c.yield_ or 0)))
                if c.quota is not None and c.kept < c.quota
                else int((c.more_attempts or 0) * (c.yield_ or 0))
                if c.quota is None
                else 0
                for c in cells
            )
            if known
            else None
        ),
    }
    for key in ("tokens", "dollars", "seconds"):
        to_targets[key] = so_far[key] + sum((c.more or {}).get(key, 0.0) for c in cells) if known else None
    return Projection(
        cells=cells,
        modes=_modes(recipe, stats),
        so_far=so_far,
        to_targets=to_targets,
        budget=_budget(recipe, so_far, to_targets),
    )


def _modes(recipe: Recipe, stats: dict[str, CellStats]) -> dict[str, dict[str, Any]]:
    """Per mode with a target: kept so far, its yield over every cell that planned it, the attempts still needed."""
    out: dict[str, dict[str, Any]] = {}
    if recipe.targets.per_mode is None:
        return out
    # a mode named in a table is projected even before any cell attempted it (a mode no run has reached yet is
    # short by its whole target, not left out of what the build says it is short of)
    named = recipe.targets.per_mode if isinstance(recipe.targets.per_mode, dict) else {}
    totals: dict[str, dict[str, int]] = {mode: {"attempts": 0, "kept": 0} for mode in named}
    for cell in stats.values():
        for mode, row in cell.by_mode.items():
            total = totals.setdefault(mode, {"attempts": 0, "kept": 0})
            total["attempts"] += row["attempts"]
            total["kept"] += row["kept"]
    for mode, total in sorted(totals.items()):
        target = recipe.targets.mode_target(mode)
        if target is None:
            continue
        yield_ = total["kept"] / total["attempts"] if total["attempts"] else None
        need = max(0, target - total["kept"])
        out[mode] = {
            "target": target,
            "kept": total["kept"],
            "yield": yield_,
            "more_attempts": 0 if not need else (math.ceil(need / yield_) if yield_ else None),
        }
    return out


def _budget(recipe: Recipe, so_far: dict[str, float], to_targets: dict[str, float | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, limit in (
        ("attempts", recipe.budget.attempts),
        ("tokens", recipe.budget.tokens),
        ("dollars", recipe.budget.dollars),
    ):
        if limit is None:
            continue
        projected = to_targets.get(key)
        out[key] = {
            "limit": limit,
            "so_far": so_far[key],
            "projected": projected,
            "fits": None if projected is None else projected <= limit,
        }
    return out


__all__ = ["CellProjection", "Projection", "project", "project_cell"]
