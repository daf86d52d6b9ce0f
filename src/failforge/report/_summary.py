"""The numbers a dataset is judged by, computed once for the card, the HTML report and the terminal.

Counts (kept / rejected / failed and why), where the gold sits (mode, family, decisive step and its
position in the seed, decisive agent, environment), how the notes were written (guide kind), mode
conformance per mode with which verdicts a judge gave, decisiveness, the realism probe, and the
fidelity audit when one is present.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from failforge.judgement import RealismResult, branch_pairs, realism_of
from failforge.report._dataset import Dataset, Record


@dataclass
class ModeConformance:
    mode: str
    candidates: int = 0
    exhibited: int = 0
    not_exhibited: int = 0
    unverified: int = 0
    not_recorded: int = 0
    by_rule: int = 0
    by_judge: int = 0
    judge_models: list[str] = field(default_factory=list)
    kept: int = 0
    kept_conformant: int = 0

    @property
    def rate(self) -> float | None:
        decided = self.candidates - self.not_recorded
        return self.exhibited / decided if decided else None


def conformance_by_mode(records: Iterable[Record]) -> dict[str, ModeConformance]:
    """Per mode, over every candidate that produced a branch (a guide-stage rejection has no step to judge)."""
    table: dict[str, ModeConformance] = {}
    for record in records:
        if record.branch is None:
            continue
        row = table.setdefault(record.mode, ModeConformance(mode=record.mode))
        row.candidates += 1
        found = record.conformance
        kept = record.status == "gold"
        row.kept += kept
        if found is None:
            row.not_recorded += 1
            continue
        exhibited = found.get("exhibited")
        row.exhibited += exhibited is True
        row.not_exhibited += exhibited is False
        row.unverified += exhibited is None
        row.by_rule += found.get("method") == "deterministic"
        row.by_judge += found.get("method") == "judge"
        judge = found.get("judge") or {}
        if judge.get("model") and judge["model"] not in row.judge_models:
            row.judge_models.append(str(judge["model"]))
        row.kept_conformant += kept and exhibited is True
    return dict(sorted(table.items()))


def _position(step: int, length: int) -> str:
    third = step / max(length, 1)
    return "early" if third < 1 / 3 else "middle" if third < 2 / 3 else "late"


def _reason_key(record: Record, reason: str) -> str:
    return reason.split(":", 1)[0] if record.stage == "filters" else record.stage


def realism(ds: Dataset, records: Iterable[Record]) -> RealismResult:
    pairs = []
    for record in records:
        seed = ds.seed_for(record)
        if record.branch is None or seed is None:
            continue
        pair = branch_pairs(seed, record.branch, record.step)
        if pair is not None:
            pairs.append(pair)
    return realism_of(pairs)


def summarise(ds: Dataset, *, with_realism: bool = True) -> dict[str, Any]:
    records = ds.records
    gold = [r for r in records if r.status == "gold"]
    rejected = [r for r in records if r.status == "rejected"]
    failed = [r for r in records if r.status == "failed"]
    reasons: Counter[str] = Counter(_reason_key(r, reason) for r in rejected for reason in r.reasons)
    failed_by: Counter[str] = Counter(str((r.error or {}).get("type") or r.stage) for r in failed)
    positions: Counter[str] = Counter()
    for r in gold:
        seed = ds.seed_for(r)
        positions[_position(r.step, len(seed.steps) if seed else r.step + 1)] += 1
    table = conformance_by_mode(records)
    candidates = sum(row.candidates for row in table.values())
    decided = sum(row.candidates - row.not_recorded for row in table.values())
    checks = [r.decisiveness for r in records if r.decisiveness]
    measured = [m for m in checks if m.get("checked", True) and "injected_success_rate" in m]
    decisive_verdicts = [v for r in records for v in r.verdicts if v.get("name") == "decisiveness"]
    original_failed = [r for r in rejected if r.stage == "decisiveness"]
    summary: dict[str, Any] = {
        "totals": {
            "kept": len(gold),
            "rejected": len(rejected),
            "failed": len(failed),
            "planned": ds.manifest.get("planned_attempts"),
        },
        "rejection_reasons": dict(reasons.most_common()),
        "failed_by": dict(failed_by.most_common()),
        "gold_by_mode": dict(Counter(r.mode for r in gold).most_common()),
        "gold_by_family": dict(Counter(r.family for r in gold).most_common()),
        "gold_by_step": {str(k): v for k, v in sorted(Counter(r.step for r in gold).items())},
        "gold_by_position": {k: positions.get(k, 0) for k in ("early", "middle", "late")},
        "gold_by_agent": dict(Counter(r.agent for r in gold).most_common()),
        "gold_by_environment": dict(Counter(r.environment for r in gold).most_common()),
        "guide_kinds": dict(Counter(r.guide_kind for r in records if r.status != "failed").most_common()),
        "conformance": {
            "by_mode": {code: {**asdict(row), "rate": row.rate} for code, row in table.items()},
            "candidates": candidates,
            "exhibited": sum(row.exhibited for row in table.values()),
            "rate": (sum(row.exhibited for row in table.values()) / decided) if decided else None,
            "by_judge": sum(row.by_judge for row in table.values()),
            "kept": sum(row.kept for row in table.values()),
            "kept_conformant": sum(row.kept_conformant for row in table.values()),
        },
        "decisiveness": {
            "measured": len(measured),
            "passed": sum(1 for v in decisive_verdicts if v.get("passed")),
            "not_checked": sum(1 for m in checks if m.get("checked") is False),
            "gold_not_checked": sum(1 for r in gold if (r.decisiveness or {}).get("checked") is False),
            "rejected_original_arm": len(original_failed),
            "non_decisive_points": len({(r.seed_id, r.step) for r in original_failed}),
            "mean_original_success": (
                (sum(m["original_success_rate"] for m in measured) / len(measured)) if measured else None
            ),
            "mean_injected_success": (
                (sum(m["injected_success_rate"] for m in measured) / len(measured)) if measured else None
            ),
        },
        "audit": ds.audit,
        "problems": ds.problems,
    }
    if with_realism:
        summary["realism"] = {
            "gold": realism(ds, gold).to_dict(),
            "candidates": realism(ds, [r for r in records if r.branch is not None]).to_dict(),
        }
    return summary


def describe_realism(result: dict[str, Any]) -> str:
    return RealismResult(
        **{k: result[k] for k in ("auc", "n_injected", "n_natural", "n_groups", "folds", "note")}
    ).describe()
