"""``failforge report`` and ``failforge show``: read a dataset back, as an HTML file or in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from failforge.cli._app import app, out

#: The record view fills its width (seed and branch side by side): on a pipe, whose console is as wide
#: as a table needs, it is laid out this wide instead.
SHOW_WIDTH = 160


@app.command()
def report(
    dataset: Annotated[
        Path, typer.Argument(help="a campaign's output folder (gold.jsonl, rejected.jsonl, manifest.json, ...)")
    ],
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="HTML file to write (default: DATASET/report.html)")
    ] = None,
    seeds: Annotated[
        Optional[list[Path]], typer.Option("--seeds", help="seed file(s), when the manifest's are not at hand")
    ] = None,
    audit: Annotated[
        Optional[Path],
        typer.Option(
            "--audit", help="a fidelity audit JSON (failforge audit --json); default DATASET/audit.json if present"
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML file: the dataset's numbers and plots, and a seed-vs-branch record viewer."""
    from failforge.report import load_dataset, summarise, write_report

    ds = load_dataset(dataset, seed_files=seeds or (), audit=audit)
    summary = summarise(ds)
    target = write_report(ds, output or dataset / "report.html", summary)
    totals = summary["totals"]
    out.print(
        f"report: {target} ({target.stat().st_size / 1024:.0f} KiB; {totals['kept']} kept, {totals['rejected']}"
        f" rejected, {totals['failed']} failed)"
    )
    for problem in ds.problems:
        out.print(f"[yellow]note:[/] {problem}")


@app.command()
def show(
    record_id: Annotated[str, typer.Argument(help="a record id (gold-...) or attempt id, or a unique prefix of one")],
    dataset: Annotated[Path, typer.Option("--dataset", "-d", help="the campaign's output folder")] = Path("."),
    seeds: Annotated[
        Optional[list[Path]], typer.Option("--seeds", help="seed file(s), when the manifest's are not at hand")
    ] = None,
) -> None:
    """Print one record: seed and branch side by side, the decisive step, the note, every verdict, the evaluator."""
    from failforge.report import load_dataset, render_record

    ds = load_dataset(dataset, seed_files=seeds or ())
    out.print(render_record(ds, ds.find(record_id)), width=min(out.width, SHOW_WIDTH))
