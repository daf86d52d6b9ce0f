"""The release a build writes: its cells' gold, deduplicated and split, in the layout Who&When Pro's harness reads.

- **Deduplicated** by what a record shows (every step's party, role, text and calls, the label's step and mode,
  the task): two cells that branched the same seed the same way made the same record once, and it is kept once
  (the first cell's, in recipe order).
- **Split by seed within each benchmark**, seeded: the records branched from one seed share their prefix up to the
  decisive step, so they all go to one split; seeds are shuffled per benchmark and cut at the recipe's fractions.
- **Written** as the ``whowhen-pro`` exporter writes a release (``data/*.jsonl``, ``taxonomy.yaml``, the card,
  ``manifest.json``), plus failforge's own records (``failforge/gold.jsonl``), ``splits.json`` (record and row ids
  by split) and ``build/manifest.json`` (sha256 of every file the build wrote).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from failforge.build._recipe import SplitConfig
from failforge.canonical import canonical_hash
from failforge.exporters import export_whowhen_pro, to_whowhen_pro
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

SPLITS = ("train", "dev", "test")


@dataclass
class ReleaseSummary:
    gold: int = 0
    duplicates: int = 0
    by_split: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    not_exportable: list[str] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def content_key(record: Trajectory) -> str:
    """What a record shows, hashed: ids, timings and provenance left out (two runs of one branch share it)."""
    label = record.label
    return canonical_hash(
        {
            "task": [record.task.benchmark, record.task.suite, record.task.task_id],
            "steps": [
                [
                    s.kind,
                    s.agent,
                    s.role,
                    s.content,
                    [[c.name, c.arguments] for c in s.tool_calls],
                    s.tool_name,
                    s.tool_arguments,
                ]
                for s in record.steps
            ],
            "label": [label.decisive_step, label.decisive_agent, label.mode_code, label.changed] if label else None,
        }
    )


def split_of(records: list[Trajectory], config: SplitConfig) -> dict[str, str]:
    """Record id -> split. Seeds are shuffled per benchmark with a generator seeded by the recipe's ``rng_seed`` and
    the benchmark's name (adding a benchmark moves no other benchmark's seeds)."""
    seeds_by_env: dict[str, set[str]] = {}
    for record in records:
        seeds_by_env.setdefault(record.environment.name, set()).add(_seed_of(record))
    where: dict[tuple[str, str], str] = {}
    for env, seeds in sorted(seeds_by_env.items()):
        order = sorted(seeds)
        digest = hashlib.sha256(f"{config.rng_seed}:{env}".encode()).digest()
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
        # at least one seed in a split that asks for some, once the benchmark has a seed to spare for it
        n_test = max(1, round(len(order) * config.test)) if config.test and len(order) >= 2 else 0
        n_dev = max(1, round(len(order) * config.dev)) if config.dev and len(order) - n_test >= 2 else 0
        for i, seed in enumerate(order):
            where[(env, seed)] = "test" if i < n_test else "dev" if i < n_test + n_dev else "train"
    return {record.id: where[(record.environment.name, _seed_of(record))] for record in records}


def _seed_of(record: Trajectory) -> str:
    return record.label.seed_id if record.label else (record.parent_id or record.id)


def collect_gold(cell_folders: list[tuple[str, Path]], summary: ReleaseSummary) -> list[tuple[str, Trajectory]]:
    """Every cell's gold in recipe order, each distinct record once, with the cell that made it."""
    seen: set[str] = set()
    out: list[tuple[str, Trajectory]] = []
    for cell, folder in cell_folders:
        path = folder / "gold.jsonl"
        if not path.exists():
            continue
        good, bad = load_jsonl(path)
        summary.bad_lines.extend(str(e) for e in bad)
        for record in good:
            key = content_key(record)
            if key in seen:
                summary.duplicates += 1
                continue
            seen.add(key)
            out.append((cell, record))
    return out


def write_release(
    release: Path,
    gold: list[tuple[str, Trajectory]],
    split: SplitConfig,
    codes: str,
    summary: ReleaseSummary,
    build_files: list[Path],
) -> ReleaseSummary:
    """The release folder from the deduplicated gold (see the module's docstring)."""
    records = [record for _, record in gold]
    summary.gold = len(records)
    splits = split_of(records, split)
    # the last run's rows go first: a modality (or every row) this run no longer has must not stay in data/ for
    # Who&When Pro's harness to read beside records the release does not hold
    for stale in sorted((release / "data").glob("*.jsonl")):
        stale.unlink()
    exported = export_whowhen_pro(records, release, codes=codes)  # type: ignore[arg-type]
    summary.rows = exported.written
    summary.not_exportable = [p.problem for p in exported.skipped]
    summary.files.extend(exported.files)
    own = release / "failforge" / "gold.jsonl"
    write_jsonl(own, records)
    summary.files.append(str(own))
    rows: dict[str, dict[str, list[str]]] = {s: {"records": [], "rows": []} for s in SPLITS}
    for record in records:
        where = splits[record.id]
        rows[where]["records"].append(record.id)
        try:
            rows[where]["rows"].append(str(to_whowhen_pro(record, codes=codes)["id"]))  # type: ignore[arg-type]
        except ValueError:
            pass  # not exportable: named in the summary; its failforge record is still in its split
    summary.by_split = dict(Counter(splits.values()))
    splits_file = release / "splits.json"
    splits_file.write_text(
        json.dumps(
            {"by": "seed within benchmark", **split.model_dump(), "splits": rows, "cells": dict(_cells(gold))},
            indent=1,
            sort_keys=True,
        ),
        encoding="utf-8",
    )
    summary.files.append(str(splits_file))
    manifest = release / "build" / "manifest.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    hashed = sorted({*(Path(f) for f in summary.files), *build_files}, key=str)
    manifest.write_text(
        json.dumps(
            {
                str(f.relative_to(release)): {
                    "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
                    "bytes": f.stat().st_size,
                }
                for f in hashed
                if f.exists()
            },
            indent=1,
            sort_keys=True,
        ),
        encoding="utf-8",
    )
    summary.files.append(str(manifest))
    return summary


def _cells(gold: list[tuple[str, Trajectory]]) -> Counter[str]:
    return Counter(cell for cell, _ in gold)


__all__ = ["SPLITS", "ReleaseSummary", "collect_gold", "content_key", "split_of", "write_release"]
