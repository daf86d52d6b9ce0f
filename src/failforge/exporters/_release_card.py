"""The release's dataset card and manifest: what a reader of a Who&When Pro-layout export checks before use.

The card (``README.md``) has the paper's kinds of tables, computed from the rows written: gold by benchmark x
framework x mode (the framework that ran, ``extras.agent_framework``, not the convention the row is rendered
in), where the decisive step falls in its trajectory, and how long the trajectories are. The manifest
(``manifest.json``) lists every file with its sha256, size and row count, and the generator's version and
conventions, so a copy can be checked and a consumer knows how the rows were written.
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from failforge.attribution import LabelledFailure

CARD = "README.md"
MANIFEST = "manifest.json"
#: Relative position of the decisive agent turn among the record's agent turns, in fifths.
POSITION_BINS = ("first 20%", "20-40%", "40-60%", "60-80%", "last 20%")


def _agent_turns(record: LabelledFailure) -> tuple[int, int]:
    """(ordinal of the decisive agent turn, number of agent turns)."""
    agents = [s.index for s in record.steps if s.kind == "agent"]
    return (agents.index(record.gold.step) if record.gold.step in agents else 0), max(len(agents), 1)


def position_bin(record: LabelledFailure) -> str:
    ordinal, turns = _agent_turns(record)
    return POSITION_BINS[min(int(5 * ordinal / turns), 4)]


def _stats(values: list[int]) -> str:
    if not values:
        return "| - | - | - | - |"
    return f"| {min(values)} | {statistics.median(values):g} | {statistics.mean(values):.1f} | {max(values)} |"


def card_text(written: list[tuple[LabelledFailure, dict[str, Any]]], codes: str, skipped: int) -> str:
    cells = Counter((r["benchmark"], r["agent_framework"], r["ground_truth"]["mode"] or "none") for _, r in written)
    splits = Counter(r["modality"] for _, r in written)
    conventions = Counter((r["modality"], r["framework"], r["agent_framework"]) for _, r in written)
    lines = [
        "---",
        "pretty_name: failforge gold in the Who&When Pro release layout",
        "task_categories: [text-classification]",
        "tags: [failure-attribution, agents, who-and-when]",
        "---",
        "",
        "# failforge gold (Who&When Pro release layout)",
        "",
        f"{len(written)} gold records ({skipped} not exportable, reported by the exporter). Every record is a",
        "successful seed replayed exactly to its decisive step, changed there in one error mode, continued live,",
        "and kept because the benchmark's own evaluator confirmed the failure. Modes are written in the",
        f"{'released 17' if codes == 'release' else 'failforge 18'}-code taxonomy (`taxonomy.yaml`); failforge's",
        "own code is kept in each row's `extras.failforge_mode`.",
        "",
        "## Files",
        "",
        "| split | rows |",
        "| --- | --- |",
        *[f"| `data/{s}.jsonl` | {n} |" for s, n in sorted(splits.items())],
        "",
        "## Framework and step convention",
        "",
        "`framework` names the convention the evaluation harness renders and scores the row with; the framework",
        "that ran is `extras.agent_framework`.",
        "",
        "| split | framework (convention) | agent framework (ran) | rows |",
        "| --- | --- | --- | --- |",
        *[f"| {s} | {c} | {f} | {n} |" for (s, c, f), n in sorted(conventions.items())],
        "",
        "## Gold by benchmark x framework x mode",
        "",
        "| benchmark | agent framework | mode | gold |",
        "| --- | --- | --- | --- |",
        *[f"| {b} | {f} | {m} | {n} |" for (b, f, m), n in sorted(cells.items())],
        "",
        "| mode | gold |",
        "| --- | --- |",
        *[f"| {m} | {n} |" for m, n in sorted(Counter(m for (_, _, m) in cells.elements()).items())],
        "",
        "## Decisive-step positions",
        "",
        "Where the decisive agent turn falls among the record's agent turns.",
        "",
        "| position | gold |",
        "| --- | --- |",
    ]
    bins = Counter(position_bin(rec) for rec, _ in written)
    lines += [f"| {b} | {bins.get(b, 0)} |" for b in POSITION_BINS]
    ordinals = [_agent_turns(rec)[0] for rec, _ in written]
    lines += [
        "",
        "| decisive agent turn (0-based) | min | median | mean | max |",
        "| --- | --- | --- | --- | --- |",
        f"| all records {_stats(ordinals)}",
        "",
        "## Lengths",
        "",
        "| per record | min | median | mean | max |",
        "| --- | --- | --- | --- | --- |",
        f"| steps {_stats([len(rec.steps) for rec, _ in written])}",
        f"| agent turns {_stats([_agent_turns(rec)[1] for rec, _ in written])}",
        f"| agents {_stats([len(rec.agents) for rec, _ in written])}",
        f"| characters {_stats([sum(len(s.content) for s in rec.steps) for rec, _ in written])}",
        "",
    ]
    return "\n".join(lines)


def write_card(out: Path, written: list[tuple[LabelledFailure, dict[str, Any]]], codes: str, skipped: int) -> Path:
    target = out / CARD
    target.write_text(card_text(written, codes, skipped), encoding="utf-8")
    return target


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(out: Path, codes: str, rows: dict[str, int]) -> Path:
    """``manifest.json``: every file of the release but itself, with sha256, bytes and rows (data files)."""
    from failforge import __version__

    files = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p.name != MANIFEST):
        rel = path.relative_to(out).as_posix()
        entry: dict[str, Any] = {"path": rel, "sha256": _digest(path), "bytes": path.stat().st_size}
        if rel.startswith("data/") and rel.endswith(".jsonl"):
            entry["rows"] = rows.get(Path(rel).stem, 0)
        files.append(entry)
    manifest = {
        "format": "whowhen-pro release layout (whowhen_eval/run.py: data/<split>.jsonl rows, taxonomy.yaml)",
        "generator": {"name": "failforge", "version": __version__},
        "codes": codes,
        "conventions": {
            "text": "eva (single agent), magentic-one (multi-agent)",
            "image_gui": "agentoccam (single agent), coact (multi-agent)",
        },
        "files": files,
    }
    target = out / MANIFEST
    target.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return target
