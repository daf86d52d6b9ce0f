"""Read a campaign's output folder into one list of candidates, whatever became of each.

A campaign writes three kinds of line: gold trajectories (``gold.jsonl``), rejections with their
reasons and, when a branch was run, its trajectory (``rejected.jsonl``), and failed attempts
(``failed.jsonl``). The card, the HTML report and ``failforge show`` all need the same view of
them — one :class:`Record` per attempt with its mode, decisive step, verdicts and branch — so they
read it here, from the files alone, without the campaign code that wrote them.

Seeds are found through the manifest (the campaign's seed files). When a seed file is gone, a record
still shows: its prefix is the seed's by construction and the label keeps the original step a_t.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from failforge.canonical import canonical_hash
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import read_json, read_jsonl
from failforge.taxonomy import get_mode
from failforge.trajectory import Step, Trajectory, iter_jsonl

Status = Literal["gold", "rejected", "failed"]
FILES: dict[Status, str] = {"gold": "gold.jsonl", "rejected": "rejected.jsonl", "failed": "failed.jsonl"}
AUDIT_FILES = ("audit.json", "fidelity.json")


@dataclass
class Record:
    """One attempt as a reader sees it."""

    attempt_id: str
    status: Status
    seed_id: str
    step: int
    mode: str
    family: str
    stage: str
    reasons: list[str]
    verdicts: list[dict[str, Any]]
    note: str | None
    branch: Trajectory | None
    provenance: dict[str, Any] = field(default_factory=dict)
    original: Step | None = None
    """The seed's a_t, from the label (gold) or the seed."""

    error: dict[str, Any] | None = None
    """A failed attempt's error (type and message)."""

    seed_environment: str | None = None
    """The seed's environment, for attempts that never produced a branch."""

    @property
    def record_id(self) -> str:
        """The branch id (``gold-...``) where a branch exists, else the attempt id."""
        return self.branch.id if self.branch is not None else self.attempt_id

    @property
    def injected(self) -> Step | None:
        if self.branch is None or self.step >= len(self.branch.steps):
            return None
        return self.branch.steps[self.step]

    @property
    def environment(self) -> str:
        return self.branch.environment.name if self.branch is not None else (self.seed_environment or "unknown")

    @property
    def agent(self) -> str:
        step = self.original or self.injected
        return step.agent if step is not None else "unknown"

    @property
    def conformance(self) -> dict[str, Any] | None:
        found = (self.branch.provenance if self.branch is not None else {}).get("conformance")
        return found if isinstance(found, dict) else None

    @property
    def guide_kind(self) -> str:
        source = self.branch.provenance if self.branch is not None else self.provenance
        return str(source.get("guide_kind") or self.provenance.get("guide_kind") or "model")

    @property
    def evaluator(self) -> dict[str, Any] | None:
        if self.branch is None or self.branch.outcome is None:
            return None
        return self.branch.outcome.model_dump(mode="json")

    @property
    def decisiveness(self) -> dict[str, Any] | None:
        """Both arms' verdicts (``checked`` false when the campaign turned the check off); a rejection
        whose point's original arm failed has it without a branch."""
        found = (self.branch.provenance if self.branch is not None else {}).get("decisiveness") or self.provenance.get(
            "decisiveness"
        )
        return found if isinstance(found, dict) else None

    def matches(self, key: str) -> bool:
        return key in (self.attempt_id, self.record_id)


@dataclass
class Dataset:
    out: Path
    manifest: dict[str, Any]
    records: list[Record]
    seeds: dict[str, Trajectory]
    audit: dict[str, Any] | None = None
    problems: list[str] = field(default_factory=list)

    def seed_for(self, record: Record) -> Trajectory | None:
        """The record's seed, or a stand-in built from the branch's prefix and the original a_t."""
        seed = self.seeds.get(record.seed_id)
        if seed is not None:
            return seed
        if record.branch is None or record.original is None:
            return None
        steps = [*record.branch.steps[: record.step], record.original]
        return record.branch.model_copy(
            update={"id": record.seed_id, "steps": steps, "label": None, "parent_id": None, "branch_step": None}
        )

    def find(self, key: str) -> Record:
        exact = [r for r in self.records if r.matches(key)]
        if len(exact) == 1:
            return exact[0]
        prefixed = [r for r in self.records if r.attempt_id.startswith(key) or r.record_id.startswith(key)]
        if len(prefixed) == 1:
            return prefixed[0]
        if not prefixed:
            raise ConfigError(f"no record {key!r} in {self.out} (give a record id such as gold-..., or an attempt id)")
        raise ConfigError(
            f"{key!r} matches {len(prefixed)} records in {self.out}; give more of the id, e.g. {prefixed[0].record_id}"
        )


def prefix_hash(steps: list[Step]) -> str:
    """Hash of the comparable fields of a prefix: equal for a seed and a branch exactly when they agree."""
    return canonical_hash([s.comparable() for s in steps])


def _lines(path: Path, problems: list[str] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.exists():
        return
    for item in read_jsonl(path):  # the one JSONL reader: a line it cannot read is named and skipped
        if isinstance(item, SeedFormatError):
            if problems is not None:
                problems.append(f"skipped: {item}")
            continue
        yield item


def _family(code: str) -> str:
    try:
        return get_mode(code).family.value
    except ConfigError:
        return "unknown"


def _from_gold(row: dict[str, Any]) -> Record:
    traj = Trajectory.model_validate(row)
    label = traj.label
    assert label is not None
    return Record(
        attempt_id=str(traj.provenance.get("attempt_id") or traj.id),
        status="gold",
        seed_id=label.seed_id,
        step=label.decisive_step,
        mode=label.mode_code,
        family=label.mode_family,
        stage="kept",
        reasons=[],
        verdicts=[v.model_dump() for v in label.filter_verdicts],
        note=label.steering_note,
        branch=traj,
        provenance=dict(traj.provenance),
        original=label.original_step,
    )


def _from_rejection(row: dict[str, Any], status: Status) -> Record:
    branch = Trajectory.model_validate(row["trajectory"]) if row.get("trajectory") else None
    mode = str(row.get("mode", ""))
    return Record(
        attempt_id=str(row.get("attempt_id")),
        status=status,
        seed_id=str(row.get("seed_id")),
        step=int(row.get("step", 0)),
        mode=mode,
        family=_family(mode),
        stage=str(row.get("stage", "")),
        reasons=list(row.get("reasons") or []),
        verdicts=list(row.get("verdicts") or []),
        note=row.get("note"),
        branch=branch,
        provenance=dict(row.get("provenance") or {}),
        error=row.get("error"),
    )


def read_records(
    out: Path, statuses: Iterable[Status] = ("gold", "rejected", "failed"), problems: list[str] | None = None
) -> Iterator[Record]:
    """Every attempt in the folder; a line that is not a readable record is named in ``problems`` and skipped."""
    for status in statuses:
        path = out / FILES[status]
        for number, row in _lines(path, problems):
            if status == "gold" and not row.get("label"):
                continue
            try:
                record = _from_gold(row) if status == "gold" else _from_rejection(row, status)
            except (ValueError, TypeError, KeyError, RecursionError) as exc:
                if problems is not None:
                    problems.append(
                        f"skipped: {path}:{number}: not a {status} record: {' '.join(str(exc).split())[:200]}"
                    )
                continue
            yield record


def load_seeds(paths: Iterable[str | Path], wanted: set[str] | None = None) -> tuple[dict[str, Trajectory], list[str]]:
    seeds: dict[str, Trajectory] = {}
    problems: list[str] = []
    for path in paths:
        if not Path(path).exists():
            problems.append(f"seed file {path} not found; seeds are shown from the records' prefixes")
            continue
        for item in iter_jsonl(path):
            if isinstance(item, Trajectory) and (wanted is None or item.id in wanted):
                seeds.setdefault(item.id, item)
    return seeds, problems


def load_dataset(out: str | Path, *, seed_files: Iterable[str | Path] = (), audit: str | Path | None = None) -> Dataset:
    """Everything a reader needs from an output folder (and, when given or found, seeds and audit)."""
    folder = Path(out)
    if not folder.is_dir():
        raise ConfigError(f"{folder} is not a campaign output folder (no such directory)")
    if not any((folder / name).exists() for name in FILES.values()):
        raise ConfigError(f"{folder} has none of {', '.join(FILES.values())}: not a campaign output folder")
    manifest_path = folder / "manifest.json"
    manifest = read_json(manifest_path) if manifest_path.exists() else {}
    unread: list[str] = []
    records = list(read_records(folder, problems=unread))
    files = list(seed_files) or list((manifest.get("config") or {}).get("seeds") or [])
    seeds, problems = load_seeds(files, {r.seed_id for r in records})
    problems = unread + problems
    for record in records:
        seed = seeds.get(record.seed_id)
        if seed is None:
            continue
        record.seed_environment = seed.environment.name
        if record.original is None and record.step < len(seed.steps):
            record.original = seed.steps[record.step]
    audit_data = None
    audit_path = Path(audit) if audit else next((folder / n for n in AUDIT_FILES if (folder / n).exists()), None)
    if audit_path is not None:
        try:
            audit_data = read_json(audit_path)
        except (ConfigError, SeedFormatError) as exc:
            raise ConfigError(f"fidelity audit {audit_path} could not be read: {exc}") from exc
    return Dataset(out=folder, manifest=manifest, records=records, seeds=seeds, audit=audit_data, problems=problems)
