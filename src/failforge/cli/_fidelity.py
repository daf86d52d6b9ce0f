"""``failforge replay`` and ``failforge audit``: replay seeds with no live model and report fidelity.

One bad seed (malformed, unknown environment or harness, drifting) is reported and the rest go on.
Both exit 1 when the user's intent was not met (some seed did not replay identically, a file held
malformed records) and 2 on bad input: a file that is missing or holds no usable seed at all, the
convention ``generate`` follows too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from failforge.cli._app import _progress, app, console, out
from failforge.errors import ConfigError, SeedFormatError
from failforge.trajectory import Trajectory


def load_seed_files(paths: list[Path]) -> tuple[list[Trajectory], list[SeedFormatError]]:
    """Every seed of every file; malformed lines are printed (file:line: field: problem) and counted.

    No usable seed at all (an empty file, or only malformed lines) is bad input, as in ``generate``: a
    one-line ``ConfigError`` (exit 2), not a replay of nothing.
    """
    from failforge.trajectory import load_jsonl

    good: list[Trajectory] = []
    bad: list[SeedFormatError] = []
    for path in paths:
        ok, errors = load_jsonl(path)
        good.extend(ok)
        bad.extend(errors)
        for err in errors:
            console.print(f"[yellow]skipped malformed seed[/] {escape(str(err))}")
    if not good:
        raise ConfigError(
            f"no seeds in {', '.join(map(str, paths))}"
            + (f" ({len(bad)} malformed line(s), each listed above)" if bad else "")
        )
    return good, bad


@app.command()
def replay(
    seeds: Annotated[Path, typer.Argument(help="JSONL of seed trajectories")],
    until: Annotated[Optional[int], typer.Option(help="replay only steps before this agent step")] = None,
    report: Annotated[Optional[Path], typer.Option(help="write the per-seed report as JSON")] = None,
) -> None:
    """Replay seeds with no live model and report fidelity per seed (exit 1 unless every seed replays identically; 2
    when there is no seed to replay)."""
    from failforge.replay import replay as replay_seed

    good, bad = load_seed_files([seeds])
    rows = []
    with _progress() as progress:
        bar = progress.add_task("replay", total=len(good), status="")
        for seed in good:
            rows.append(replay_seed(seed, until=until, raise_on_drift=False))
            progress.update(bar, advance=1, status=seed.id)
    table = Table(title=f"replay of {seeds}")
    for col in ("seed", "steps", "identical", "drift", "success"):
        table.add_column(col)
    for r in rows:
        problem = f"{type(r.drift).__name__} at step {r.drift.step}" if r.drift else (r.infrastructure or "")
        table.add_row(
            r.trajectory_id,
            f"{r.steps_replayed}/{r.steps_expected}",
            "yes" if r.identical else "NO",
            problem,
            str(r.outcome.success if r.outcome else "-"),
        )
    out.print(table)
    identical = sum(r.identical for r in rows)
    successes = sum(bool(r.outcome and r.outcome.success) for r in rows)
    out.print(
        f"{identical}/{len(rows)} seeds replayed identically; evaluator success on replay: {successes}/{len(rows)};"
        f" malformed: {len(bad)}"
    )
    if report:
        report.write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    if identical < len(rows) or bad or not rows:
        raise typer.Exit(1)


@app.command()
def audit(
    seeds: Annotated[list[Path], typer.Argument(help="seed JSONL file(s)")],
    json_out: Annotated[Optional[Path], typer.Option("--json", help="write the report as JSON")] = None,
) -> None:
    """Replay every seed to its end (report, don't raise) and summarise fidelity per environment."""
    from failforge.fidelity import audit as run_audit

    good, bad = load_seed_files(seeds)
    with _progress() as progress:
        bar = progress.add_task("audit", total=len(good), status="")
        report = run_audit(good, on_seed=lambda r: progress.update(bar, advance=1, status=r.trajectory_id))
    table = Table(title="replay fidelity per environment")
    for col in (
        "environment",
        "seeds",
        "identical",
        "drift by type",
        "drift by position",
        "cache misses",
        "infra/config errors",
        "success on replay",
        "seconds",
    ):
        table.add_column(col)
    for env in report.environments:
        table.add_row(
            env.environment,
            str(env.seeds),
            f"{env.identical}/{env.seeds}",
            ", ".join(f"{k} {v}" for k, v in env.drift_by_type.items()) or "none",
            ", ".join(f"{k} {v}" for k, v in env.drift_by_position.items()) or "-",
            str(env.cache_misses),
            str(env.infrastructure_errors),
            f"{env.evaluator_success_on_replay}/{env.seeds}",
            f"{env.seconds:.1f}",
        )
    out.print(table)
    identical = sum(e.identical for e in report.environments)
    total = sum(e.seeds for e in report.environments)
    out.print(f"{identical}/{total} seeds replayed identically; malformed: {len(bad)}")
    if json_out:
        json_out.write_text(report.model_dump_json(indent=2))
        out.print(f"report: {json_out}")
    if identical < total or bad or not total:
        raise typer.Exit(1)
