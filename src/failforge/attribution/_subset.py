"""Fixed evaluation subsets with hashed manifests, and their fidelity to the full set (LongRCA's protocol).

A cheaper comparison stays honest only if nobody could have chosen its members with the answers in
view. So :func:`draw_subset` is given record ids and sources and nothing else (the signature makes
labels and predictions unreachable): per source, ``per_source`` ids uniformly without replacement from
the sorted ids, with ``random.Random(f"{seed}:{source}")``. The manifest keeps the seed, the size of
every stratum, a SHA-256 of the whole dataset and one of every member; :func:`check_subset` refuses a
manifest that the records given do not reproduce (a member missing or edited, another dataset, members
that the seed does not redraw: a hand-picked or rerolled subset).

Fidelity (:func:`fidelity`): for each method with full-set predictions, the absolute deviation in points
of the subset score from the full score, per metric, under the macro average over sources (LongRCA's
Macro-5 analogue) and the micro average, with the mean and max over methods and metrics and the
Kendall tau of the methods' ranking. These follow LongRCA's released description; its own scripts are
not public, so the definitions are failforge's (documented in docs/ATTRIBUTION.md).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from failforge.attribution._metrics import score
from failforge.attribution._predictions import Prediction
from failforge.attribution._record import LabelledFailure
from failforge.canonical import canonical_hash, sha256_hex
from failforge.errors import ConfigError
from failforge.jsonl import read_json

SUBSET_SCHEMA = "failforge.subset/1"
#: The metrics whose fidelity is reported (LongRCA reports three per method).
FIDELITY_METRICS = ("agent", "step_exact", "step_within_k")


class SubsetMember(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    source: str
    sha256: str = Field(description="canonical hash of the whole record when it was drawn")


class Stratum(BaseModel):
    model_config = ConfigDict(extra="forbid")

    population: int
    drawn: int


class SubsetManifest(BaseModel):
    """What a fixed subset is: enough to redraw it, and to notice that anything it rests on changed."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SUBSET_SCHEMA
    seed: int
    per_source: int
    drawn_from: str = Field(description="the ids and sources only: what the draw was given")
    dataset_sha256: str = Field(description="SHA-256 over every record's id and canonical hash, sorted by id")
    strata: dict[str, Stratum]
    members: list[SubsetMember]

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        """A manifest of another schema may mean something else by the same keys: refused, not guessed at."""
        if value != SUBSET_SCHEMA:
            raise ValueError(f"unknown subset schema version {value[:80]!r}; this failforge reads {SUBSET_SCHEMA!r}")
        return value

    def ids(self) -> set[str]:
        return {m.id for m in self.members}


class SubsetMismatch(ConfigError):
    """A manifest the records given do not reproduce (scoring against it would not be the fixed subset)."""


def record_hash(record: LabelledFailure) -> str:
    return canonical_hash(record.model_dump(mode="json"))


def dataset_hash(records: Iterable[LabelledFailure]) -> str:
    lines = sorted(f"{r.id}\t{record_hash(r)}" for r in records)
    return sha256_hex("\n".join(lines))


def draw_subset(ids_by_source: Mapping[str, Sequence[str]], per_source: int, seed: int) -> dict[str, list[str]]:
    """Per source, ``per_source`` ids (all of them when it has fewer), uniformly without replacement.

    Given ids and sources only: whatever else a record holds cannot steer the draw. The ids are sorted
    first, so the draw does not depend on the order of the file either."""
    if per_source < 1:
        raise ConfigError(f"--per-source must be at least 1, got {per_source}")
    drawn: dict[str, list[str]] = {}
    for source in sorted(ids_by_source):
        population = sorted(set(ids_by_source[source]))
        rng = random.Random(f"{seed}:{source}")
        chosen = population if len(population) <= per_source else rng.sample(population, per_source)
        drawn[source] = sorted(chosen)
    return drawn


def make_manifest(records: Sequence[LabelledFailure], per_source: int, seed: int) -> SubsetManifest:
    duplicated = sorted(i for i, n in Counter(r.id for r in records).items() if n > 1)
    if duplicated:
        raise ConfigError(
            f"record id {duplicated[0]!r} occurs more than once; a subset is drawn by id, so ids must be unique"
        )
    by_source: dict[str, list[str]] = defaultdict(list)
    for r in records:
        by_source[r.source].append(r.id)
    drawn = draw_subset(by_source, per_source, seed)
    by_id = {r.id: r for r in records}
    members = [SubsetMember(id=i, source=s, sha256=record_hash(by_id[i])) for s in sorted(drawn) for i in drawn[s]]
    return SubsetManifest(
        seed=seed,
        per_source=per_source,
        drawn_from="record ids grouped by source (no labels, no predictions)",
        dataset_sha256=dataset_hash(records),
        strata={s: Stratum(population=len(by_source[s]), drawn=len(drawn[s])) for s in sorted(drawn)},
        members=members,
    )


def load_manifest(path: str | Path) -> SubsetManifest:
    data = read_json(path)
    try:
        return SubsetManifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<manifest>"
        why = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{path}: not a failforge subset manifest: {where}: {why}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not a failforge subset manifest ({str(exc).splitlines()[0]})") from exc


def check_subset(
    manifest: SubsetManifest, records: Sequence[LabelledFailure], where: str = "the manifest"
) -> list[LabelledFailure]:
    """The manifest's members among ``records``, or :class:`SubsetMismatch` naming the first thing that differs."""
    by_id = {r.id: r for r in records}
    for m in manifest.members:
        record = by_id.get(m.id)
        if record is None:
            raise SubsetMismatch(f"{where}: member {m.id!r} ({m.source}) is not in the records given")
        found = record_hash(record)
        if found != m.sha256:
            raise SubsetMismatch(
                f"{where}: member {m.id!r} changed since the draw (expected sha256 {m.sha256[:12]}, found {found[:12]})"
            )
    found_dataset = dataset_hash(records)
    if found_dataset != manifest.dataset_sha256:
        raise SubsetMismatch(
            f"{where}: drawn from another dataset (expected sha256 {manifest.dataset_sha256[:12]}, found"
            f" {found_dataset[:12]} over {len(records)} records); draw a new subset for these records"
        )
    redrawn = make_manifest(records, manifest.per_source, manifest.seed)
    if [m.id for m in redrawn.members] != [m.id for m in manifest.members]:
        extra = sorted(manifest.ids() - redrawn.ids()) or sorted(redrawn.ids() - manifest.ids())
        raise SubsetMismatch(
            f"{where}: seed {manifest.seed} does not redraw these members (first difference"
            f" {extra[0] if extra else '?'}); a subset is never hand-picked or rerolled"
        )
    return [by_id[m.id] for m in manifest.members]


class MethodFidelity(BaseModel):
    method: str
    full: dict[str, float | None]
    subset: dict[str, float | None]
    deviation_pp: dict[str, float | None]


def _values(report: Mapping[str, object], aggregate: str) -> dict[str, float | None]:
    if aggregate == "macro":
        macro = report["macro_source"]
        return {m: macro[m]["value"] for m in FIDELITY_METRICS}  # type: ignore[index]
    overall = report["overall"]
    return {m: overall[m]["value"] for m in FIDELITY_METRICS}  # type: ignore[index]


def _kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    pairs = list(combinations(range(len(a)), 2))
    if not pairs:
        return None
    concordant = sum(1 for i, j in pairs if (a[i] - a[j]) * (b[i] - b[j]) > 0)
    discordant = sum(1 for i, j in pairs if (a[i] - a[j]) * (b[i] - b[j]) < 0)
    return round((concordant - discordant) / len(pairs), 4)


def fidelity(
    records: Sequence[LabelledFailure],
    manifest: SubsetManifest,
    predictions: Mapping[str, Sequence[Prediction]],
    *,
    k: int = 5,
    aggregate: str = "macro",
) -> dict[str, object]:
    """Each method's subset score against its full score: per metric |subset - full| in points, mean and max over
    methods and metrics, and whether the subset ranks the methods as the full set does (Kendall tau on Step exact)."""
    members = check_subset(manifest, records)
    rows: list[MethodFidelity] = []
    for method, preds in predictions.items():
        full = _values(score(records, preds, k=k), aggregate)
        sub = _values(score(members, [p for p in preds if p.record_id in manifest.ids()], k=k), aggregate)
        dev = {
            m: round(abs(sub[m] - full[m]), 3) if sub[m] is not None and full[m] is not None else None  # type: ignore[operator]
            for m in FIDELITY_METRICS
        }  # type: ignore[operator]
        rows.append(MethodFidelity(method=method, full=full, subset=sub, deviation_pp=dev))
    deviations = [d for r in rows for d in r.deviation_pp.values() if d is not None]
    ranked = [r for r in rows if r.full["step_exact"] is not None and r.subset["step_exact"] is not None]
    return {
        "aggregate": aggregate,
        "k": k,
        "subset_size": len(members),
        "full_size": len(records),
        "methods": [r.model_dump() for r in rows],
        "mean_deviation_pp": round(sum(deviations) / len(deviations), 3) if deviations else None,
        "max_deviation_pp": max(deviations) if deviations else None,
        "kendall_tau_step_exact": _kendall_tau(
            [r.full["step_exact"] for r in ranked],  # type: ignore[misc]
            [r.subset["step_exact"] for r in ranked],  # type: ignore[misc]
        ),  # type: ignore[misc]
    }
