"""Confidence intervals and the paired bootstrap, in plain Python (scoring needs no numerical stack)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The Wilson score interval for a proportion, in percent; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (round(100 * max(0.0, centre - half), 2), round(100 * min(1.0, centre + half), 2))


def paired_bootstrap(
    items: Sequence[T],
    strata: Sequence[str],
    metric: Callable[[Sequence[T]], float | None],
    *,
    resamples: int = 10_000,
    seed: int = 20260820,
) -> dict[str, float | int | None]:
    """Bootstrap the difference a metric shows between two methods on the same records.

    ``items`` are per-record pairs (A's judgement, B's judgement); ``metric`` maps a resample to A's
    value minus B's. Records are resampled with replacement within each stratum (source), so every
    resample keeps the sources' sizes. Returns the observed difference, the 95% percentile interval,
    and the two-sided p-value of "no difference" (twice the smaller tail share around 0).
    """
    observed = metric(items)
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    rng = random.Random(seed)
    diffs: list[float] = []
    for _ in range(resamples):
        picked: list[T] = []
        for members in groups.values():
            picked.extend(items[members[rng.randrange(len(members))]] for _ in members)
        value = metric(picked)
        if value is not None:
            diffs.append(value)
    if observed is None or not diffs:
        return {"observed": observed, "low": None, "high": None, "p_value": None, "resamples": len(diffs)}
    diffs.sort()
    low = diffs[int(0.025 * (len(diffs) - 1))]
    high = diffs[int(math.ceil(0.975 * (len(diffs) - 1)))]
    below = sum(1 for d in diffs if d <= 0) / len(diffs)
    above = sum(1 for d in diffs if d >= 0) / len(diffs)
    return {
        "observed": round(observed, 4),
        "low": round(low, 4),
        "high": round(high, 4),
        "p_value": round(min(1.0, 2 * min(below, above)), 4),
        "resamples": len(diffs),
    }
