"""What one cell has made and spent so far, read back from its campaign folder (never from memory: a build resumed
after a SIGKILL knows exactly what the folder knows).

Attempts per mode and state come from the cell's ledger; what each attempt cost (wall seconds; live calls and tokens
by role) from ``provenance["cost"]`` of its record, and the original arms' from ``arms.jsonl``; why attempts were
rejected or failed from their records.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from failforge.campaign import FAILED, GOLD, LEDGER, REJECTED
from failforge.gold import ARMS
from failforge.jobs import Ledger
from failforge.jsonl import read_jsonl

ROLES = ("agent", "guide")


def number(value: Any) -> float:
    """A count or a measure read from a file: a number, else 0 (a hand-edited or foreign line must not stop a
    build that only sums these)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


class Spend(BaseModel):
    """Live model calls and tokens of one role, and what they cost at the recipe's price."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unreported: int = Field(default=0, description="calls whose endpoint reported no token usage")

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, row: dict[str, Any]) -> None:
        self.calls += int(number(row.get("calls")))
        self.prompt_tokens += int(number(row.get("prompt_tokens")))
        self.completion_tokens += int(number(row.get("completion_tokens")))
        self.unreported += int(number(row.get("unreported")))


class CellStats(BaseModel):
    """One cell's attempts, yield and spend, as its folder holds them."""

    cell: str
    planned: int = 0
    attempts: int = Field(default=0, description="settled: gold, rejected or failed")
    kept: int = 0
    rejected: int = 0
    failed: int = 0
    by_mode: dict[str, dict[str, int]] = Field(default_factory=dict, description="mode -> attempts, kept")
    rejected_by: dict[str, int] = Field(default_factory=dict, description="filter (or stage) -> rejected attempts")
    failed_by: dict[str, int] = Field(default_factory=dict, description="error type -> failed attempts")
    seconds: float = Field(default=0.0, description="job seconds of attempts and original arms (busy time, summed)")
    arms: int = 0
    unmetered: int = Field(default=0, description="results with no cost recorded (made before costs were kept)")
    spend: dict[str, Spend] = Field(default_factory=lambda: {role: Spend() for role in ROLES})

    @property
    def pending(self) -> int:
        return self.planned - self.attempts

    def add_cost(self, cost: dict[str, Any] | None) -> None:
        if not isinstance(cost, dict):
            self.unmetered += 1
            return
        self.seconds += number(cost.get("seconds"))
        models = cost.get("models")
        for role, row in (models if isinstance(models, dict) else {}).items():
            if isinstance(row, dict):
                self.spend.setdefault(role, Spend()).add(row)


def cell_stats(cell: str, folder: Path) -> CellStats:
    """The cell's numbers from its folder (an empty folder: all zero)."""
    stats = CellStats(cell=cell)
    if (folder / LEDGER).exists():
        ledger = Ledger(folder / LEDGER)
        try:
            by_mode = ledger.counts_by_mode()
        finally:
            ledger.close()
        for mode, states in sorted(by_mode.items()):
            settled = states["done"] + states["rejected"] + states["failed"]
            stats.planned += sum(states.values())
            stats.by_mode[mode] = {"attempts": settled, "kept": states["done"]}
    rejected_by: Counter[str] = Counter()
    failed_by: Counter[str] = Counter()
    for name in (GOLD, REJECTED, FAILED):
        path = folder / name
        if not path.exists():
            continue
        for item in read_jsonl(path):
            if not isinstance(item, tuple):
                continue  # a torn line: its attempt is settled again on the next run
            record = item[1]
            provenance = record.get("provenance")
            attempt = record.get("attempt_id") or (
                provenance.get("attempt_id") if isinstance(provenance, dict) else None
            )
            if not isinstance(attempt, str) or not attempt:
                continue  # names no attempt (not a result the campaign wrote): the ledger does not count it either
            stats.add_cost(provenance.get("cost") if isinstance(provenance, dict) else None)
            stats.attempts += 1
            if name == GOLD:
                stats.kept += 1
            elif name == REJECTED:
                stats.rejected += 1
                reasons = record.get("reasons") if isinstance(record.get("reasons"), list) else None
                reasons = reasons or ["?"]
                keys = (
                    {str(r).split(":", 1)[0] for r in reasons}
                    if record.get("stage") == "filters"
                    else {str(record.get("stage"))}
                )
                rejected_by.update(keys)
            else:
                stats.failed += 1
                error = record.get("error")
                failed_by[str((error.get("type") if isinstance(error, dict) else None) or record.get("stage"))] += 1
    if (folder / ARMS).exists():
        for item in read_jsonl(folder / ARMS):
            if isinstance(item, tuple):
                stats.arms += 1
                stats.add_cost(item[1].get("cost"))
    stats.rejected_by = dict(rejected_by.most_common())
    stats.failed_by = dict(failed_by.most_common())
    return stats


__all__ = ["ROLES", "CellStats", "Spend", "cell_stats"]
