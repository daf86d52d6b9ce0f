"""``failforge export``: gold records in a public failure-attribution format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from failforge.cli._app import app, console, out


@app.command()
def export(
    gold: Annotated[Path, typer.Argument(help="gold.jsonl")],
    format: Annotated[str, typer.Option("--format", "-f", help="whowhen-pro or whowhen")] = "whowhen-pro",
    output: Annotated[Path, typer.Option("--output", "-o")] = Path("export.jsonl"),
    codes: Annotated[str, typer.Option(help="whowhen-pro mode codes: release (taxonomy.yaml) or failforge")] = "release",
) -> None:
    """Write gold records in a public failure-attribution format (one JSON object per line)."""
    from failforge.plugins import exporters
    from failforge.trajectory import load_jsonl

    if format not in exporters:
        raise typer.BadParameter(f"--format must be one of {', '.join(exporters.names())}")
    export_one = exporters.get(format)
    if codes not in ("release", "failforge"):
        raise typer.BadParameter("--codes must be release or failforge")
    good, bad = load_jsonl(gold)
    for err in bad:
        console.print(f"[yellow]skipped malformed record[/] {err}")
    rows = [export_one(t, codes) for t in good if t.label is not None]
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    out.print(f"wrote {len(rows)} {format} traces to {output}")
