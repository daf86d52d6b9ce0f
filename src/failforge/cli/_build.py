"""``failforge build RECIPE.toml -o RELEASE/``: a dataset from a recipe, with ``--pilot N`` to project it first."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from failforge.cli._app import app, console, out


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _n(value: float | None, digits: int = 0) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _print_projection(result: object, title: str) -> None:
    from failforge.build import BuildResult

    assert isinstance(result, BuildResult)
    p = result.projection
    table = Table(title=title)
    for column in (
        "cell",
        "attempts",
        "kept",
        "yield",
        "calls/att",
        "tokens/att",
        "$/att",
        "s/att",
        "tokens/kept",
        "quota",
        "more attempts",
        "more tokens",
        "more $",
        "more time",
    ):
        table.add_column(column, justify="left" if column == "cell" else "right")
    for cell in p.cells:
        table.add_row(
            cell.cell,
            str(cell.attempts),
            str(cell.kept),
            "?" if cell.yield_ is None else f"{cell.yield_:.0%}",
            _n(cell.per_attempt["calls"], 1),
            _n(cell.per_attempt["tokens"]),
            _n(cell.per_attempt["dollars"], 4),
            _n(cell.per_attempt["seconds"], 1),
            _n(cell.per_kept["tokens"]) if cell.per_kept else "?",
            "-" if cell.quota is None else str(cell.quota),
            _n(cell.more_attempts),
            _n(cell.more["tokens"]) if cell.more else "?",
            _n(cell.more["dollars"], 2) if cell.more else "?",
            _hours(cell.more["seconds"]) if cell.more else "?",
        )
    out.print(table)
    for cell in p.cells:
        if cell.note:
            out.print(f"  {escape(cell.cell)}: {escape(cell.note)}")
    for mode, row in p.modes.items():
        out.print(
            f"  mode {mode}: {row['kept']}/{row['target']} kept, yield"
            f" {'?' if row['yield'] is None else format(row['yield'], '.0%')}, {_n(row['more_attempts'])} more attempts"
        )
    t, s = p.to_targets, p.so_far
    out.print(
        f"so far: {_n(s['attempts'])} attempts, {_n(s['kept'])} kept, {_n(s['tokens'])} tokens,"
        f" ${s['dollars']:.2f}, {_hours(s['seconds'])}"
    )
    out.print(
        f"to the targets: {_n(t['attempts'])} attempts, {_n(t['kept'])} kept, {_n(t['tokens'])} tokens,"
        f" ${_n(t['dollars'], 2)}, {_hours(t['seconds'])}"
    )
    for key, row in p.budget.items():
        verdict = {True: "fits", False: "DOES NOT FIT", None: "unknown"}[row["fits"]]
        out.print(f"budget {key}: {row['limit']:,} — projected {_n(row['projected'])}: {verdict}")


@app.command()
def build(
    recipe: Annotated[Path, typer.Argument(help="the recipe: cells, targets, budget, prices (docs/BUILD.md)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the release folder (resumed if it exists)")],
    pilot: Annotated[
        Optional[int],
        typer.Option(min=1, help="run N attempts per cell, then print and write the projection (build/pilot.json)"),
    ] = None,
    force: Annotated[
        bool, typer.Option(help="let a cell continue a folder that holds a different campaign (its ledger refuses)")
    ] = False,
) -> None:
    """Build a dataset: every cell's campaign in rounds until the targets are met, then the release.

    Exit status: 0 when the targets were met (or the pilot ran); 1 when the build ended short of a target (plans
    run out, or the budget spent); 2 on bad input; 3 when a cell's circuit breaker stopped it (its endpoint is down);
    130 when interrupted (rerun the same command to resume).
    """
    from failforge.build import load_recipe, run_build
    from failforge.errors import ConfigError

    loaded = load_recipe(recipe)
    try:
        release = output.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError before Python 3.13, OSError since
        raise ConfigError(f"-o {output} cannot be used as the release folder: {exc}") from None

    def say(line: str) -> None:
        console.print(escape(line))

    try:
        result = run_build(loaded, release, pilot=pilot, on_event=say, force=force)
    except KeyboardInterrupt:
        console.print(
            f"[yellow]interrupted:[/] attempts in flight went back to their cell's queue; rerun to resume ({output})"
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    if pilot is not None:
        _print_projection(result, f"failforge build --pilot {pilot}: projection")
        out.print(f"written: {output / 'build' / 'pilot.json'}")
    else:
        _print_projection(result, "failforge build: what the cells made")
    if result.breaker:  # a pilot's too: its yields would be the endpoint's failures, not the cells'
        console.print(
            f"[red]stopped:[/] a cell's attempts failed in a row for infrastructure reasons: {escape(result.breaker)}."
            " Fix the endpoint and rerun the same command."
        )
        raise typer.Exit(3)
    if pilot is not None:
        return
    made = result.release_summary
    if made is not None:
        out.print(
            f"release {output}: {made.gold} gold ({made.duplicates} duplicates dropped), {made.rows} rows exported"
            f" ({len(made.not_exportable)} not exportable), splits "
            + ", ".join(f"{k} {v}" for k, v in sorted(made.by_split.items()))
        )
        for problem in made.not_exportable[:5]:
            out.print(f"  not exportable: {escape(problem)}")
        if made.bad_lines:  # a cell's gold line that is not a record: left out of the release, said
            console.print(f"[yellow]{len(made.bad_lines)} unreadable gold line(s) left out of the release:[/]")
            for problem in made.bad_lines[:5]:
                console.print(f"  {escape(problem)}")
    for key, row in result.compared.items():
        if not isinstance(row, dict):
            out.print(f"note: {escape(str(row))}")
            continue
        ratio = row["ratio"]
        out.print(
            f"pilot projected {key}: {_n(row['projected'])}, actual {_n(row['actual'])}"
            + (f" (actual/projected {ratio:.2f})" if ratio is not None else "")
        )
    out.print(f"ended: {result.ended}")
    short = result.short()
    if short:
        console.print(f"[red]short of the targets:[/] {escape('; '.join(short))}")
        raise typer.Exit(1)
