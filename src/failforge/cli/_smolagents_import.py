"""``failforge import RUN --format smolagents``: saved smolagents CodeAgent runs in, DA-Bench seeds out."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from failforge.cli._app import console, out
from failforge.errors import ConfigError, SeedFormatError


def import_smolagents(source: Path, output: Path, *, data_dir: str | None, backend: str) -> None:
    """Each saved run that names a question, passes the evaluator and re-executes identically is appended to
    ``output`` as a seed; every other run is named with its reasons, and the exit status is 1 when any was refused."""
    from failforge.seeds.smolagents_run import import_run, read_runs
    from failforge.trajectory import write_jsonl

    if not source.is_file():
        raise ConfigError(f"{source}: no such file (a smolagents run saved as .json, or .jsonl with one run per line)")
    seeds = []
    refused = 0
    table = Table(title="failforge import --format smolagents")
    for column in ("run", "question", "verdict"):
        table.add_column(column)
    for where, run in read_runs(source):
        if isinstance(run, SeedFormatError):
            refused += 1
            console.print(f"[yellow]skipped[/] {run}")
            table.add_row(where, "-", "unreadable")
            continue
        verdict = import_run(run, where, data_dir=data_dir, backend=backend)
        if verdict.seed is None:
            refused += 1
            for reason in verdict.reasons:
                console.print(f"[yellow]not a seed[/] {where}: {reason}")
            table.add_row(where, verdict.question or "-", "refused")
        else:
            seeds.append(verdict.seed)
            table.add_row(where, verdict.question or "-", f"seed {verdict.seed.id}")
    if seeds:
        write_jsonl(output, seeds)
    out.print(table)
    out.print(f"seeds: {len(seeds)} in {output}" if seeds else "seeds: none written")
    if refused:
        raise typer.Exit(1)
