"""``failforge import | attribute | score | export``: public attribution datasets in and out, methods, metrics."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from failforge.cli._app import ProgressLine, _endpoint, _progress, app, console, out
from failforge.errors import ConfigError
from failforge.jsonl import read_json


def _records(path: Path, skipped: list[str] | None = None) -> list[Any]:
    """Labelled-failure records; a line that cannot be read is printed, added to ``skipped`` and left out."""
    from failforge.attribution import load_records

    if path.is_dir():
        path = path / "records.jsonl"
    if not path.exists():
        raise ConfigError(f"{path}: no such file (give a records .jsonl from `failforge import` or a run folder)")
    records, problems = load_records(path)
    for problem in problems:
        console.print(f"[yellow]skipped record[/] {problem}")
    if not records:
        raise ConfigError(f"{path}: no readable labelled-failure record")
    if skipped is not None:
        skipped.extend(map(str, problems))
    return records


@app.command("import")
def import_(
    source: Annotated[
        Path,
        typer.Argument(
            help=(
                "the dataset: a Who&When folder, a Who&When Pro release folder, a TracerTraj .parquet/.jsonl, a"
                " failforge gold.jsonl"
            )
        ),
    ],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="whowhen, whowhen-pro, tracertraj, trajectory-attribution or failforge; "
            "smolagents: saved CodeAgent runs become DA-Bench seeds",
        ),
    ] = "whowhen",
    output: Annotated[
        Path, typer.Option("--output", "-o", help="labelled-failure records (JSONL); seeds for --format smolagents")
    ] = Path("records.jsonl"),
    summary_json: Annotated[
        Optional[Path], typer.Option("--summary", help="also write the import summary as JSON")
    ] = None,
    data_dir: Annotated[
        Optional[str], typer.Option("--data-dir", help="--format smolagents: the DA-Bench data folder")
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="--format smolagents: sandbox backend (auto, docker, local)")
    ] = "auto",
) -> None:
    """Read a public failure-attribution dataset into labelled-failure records; bad records are named and skipped.
    With ``--format smolagents``, saved smolagents CodeAgent runs on DA-Bench questions become seeds instead."""
    from failforge.attribution import summarise, write_records
    from failforge.plugins import importers

    if format == "smolagents":
        from failforge.cli._smolagents_import import import_smolagents

        import_smolagents(source, output, data_dir=data_dir, backend=backend)
        return

    reader = importers.get(format)
    if not source.exists():
        raise ConfigError(f"{source}: no such file or folder")
    records, summary = summarise(reader(source))
    for problem in summary.problems:
        console.print(f"[yellow]skipped[/] {problem}")
    write_records(output, records)
    table = Table(title=f"failforge import --format {format}")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("records read", str(summary.read))
    table.add_row("imported", str(summary.imported))
    table.add_row("skipped", str(summary.skipped))
    for source_name, count in sorted(summary.by_source.items()):
        table.add_row(f"  {source_name}", str(count))
    warned = sum(1 for r in records if r.origin.warnings)
    table.add_row("imported with a warning", str(warned))
    out.print(table)
    out.print(f"records: {output}")
    if summary_json:
        summary_json.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if summary.skipped:  # written, but not everything: the exit says so (docs: exit codes)
        console.print(
            f"[yellow]{summary.skipped} of {summary.read} source records skipped[/] (each named above); the rest are in"
            f" {output}"
        )
        raise typer.Exit(1)


def _manifest(path: Path) -> tuple[Path, Any]:
    """A subset manifest given as its file or its folder (from `failforge subset`), loaded."""
    from failforge.attribution import load_manifest

    manifest_path = path / "manifest.json" if path.is_dir() else path
    if not manifest_path.exists():
        raise ConfigError(f"{manifest_path}: no such subset manifest (make one with `failforge subset`)")
    return manifest_path, load_manifest(manifest_path)


def _subset_members(manifest_path: Path, records: list[Any]) -> list[Any]:
    """The members of a fixed subset, after checking that these records reproduce its manifest."""
    from failforge.attribution import check_subset

    manifest_path, manifest = _manifest(manifest_path)
    members = check_subset(manifest, records, where=str(manifest_path))
    out.print(f"subset {manifest_path}: {len(members)} of {len(records)} records (manifest checked)")
    return members


def _pick(records: list[Any], limit: Optional[int], ids_file: Optional[Path], source: Optional[str]) -> list[Any]:
    if source:
        records = [
            r
            for r in records
            if r.source == source or r.source.startswith(source + "/") or r.source.endswith("/" + source)
        ]
    if ids_file:
        wanted = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()]
        by_id = {r.id: r for r in records}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise ConfigError(f"{ids_file}: {len(missing)} ids are not in the records, first {missing[0]!r}")
        records = [by_id[i] for i in wanted]
    if limit is not None:
        records = records[:limit]
    if not records:
        raise ConfigError("no record left to attribute after --source/--ids/--limit")
    return records


@app.command()
def attribute(
    records_path: Annotated[Path, typer.Argument(metavar="RECORDS", help="labelled-failure records (JSONL)")],
    method: Annotated[
        Optional[str],
        typer.Option(
            "--method",
            "-m",
            help=(
                "all-at-once (default), step-by-step, binary-search, hybrid, random, first-agent-step, last-step,"
                " majority-agent, role-prior, rcta, auditor, incremental, leave-one-out"
            ),
        ),
    ] = None,
    methods_config: Annotated[
        Optional[Path],
        typer.Option(
            "--methods-config",
            help=(
                "a YAML file of runs (method, judge endpoint, executor, workers), each run into OUTPUT/<name>/; instead"
                " of --method"
            ),
        ),
    ] = None,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="run folder (resumable: rerun the same command to continue)")
    ] = Path("attribution-run"),
    answer: Annotated[bool, typer.Option("--answer/--no-answer", help="show the gold answer to the judge")] = True,
    menu: Annotated[
        bool,
        typer.Option(
            "--menu/--free-text", help="the 18-mode menu in the prompt, or free text mapped to a mode afterwards"
        ),
    ] = True,
    paraphrased_menu: Annotated[
        bool,
        typer.Option(
            "--paraphrased-menu", help="with --menu: the same 18 codes, every definition reworded (label-menu ablation)"
        ),
    ] = False,
    base_url: Annotated[
        Optional[str], typer.Option(help="OpenAI-compatible judge endpoint (default: the embedded local model)")
    ] = None,
    model: Annotated[Optional[str], typer.Option(help="judge model name (with --base-url)")] = None,
    api_key_env: Annotated[
        Optional[str], typer.Option(help="environment variable holding the judge's API key")
    ] = "OPENAI_API_KEY",
    recording: Annotated[
        Optional[Path],
        typer.Option(help="a finished run folder: serve every judge call from its recording (no model, 0 tokens)"),
    ] = None,
    limit: Annotated[Optional[int], typer.Option(help="only the first N records")] = None,
    ids: Annotated[Optional[Path], typer.Option(help="file of record ids to run, one per line")] = None,
    source: Annotated[
        Optional[str], typer.Option(help="only records of this source (e.g. who_and_when/algorithm_generated)")
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="seed of the random choices (random baseline, ambiguous binary-search halves) and of judge sampling"
        ),
    ] = 0,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "--workers", help="sessions in flight: threads, worker processes or Ray tasks"),
    ] = 1,
    executor: Annotated[
        str, typer.Option(help="where sessions run: thread (in this process), process (worker processes) or ray")
    ] = "thread",
    ray_address: Annotated[
        Optional[str], typer.Option(help="with --executor ray: the cluster (default: a local Ray instance)")
    ] = None,
    max_tokens: Annotated[int, typer.Option(help="judge reply budget")] = 256,
    structured_output: Annotated[
        str,
        typer.Option(
            help="auto: ask for schema-constrained answers where the judge endpoint has a mechanism "
            "(probed once, recorded in the manifest); off: always free text"
        ),
    ] = "auto",
    max_step_chars: Annotated[int, typer.Option(help="characters kept per step in judge prompts")] = 600,
    budget_chars: Annotated[int, typer.Option(help="characters of trajectory per judge prompt")] = 9000,
    n_ctx: Annotated[
        int, typer.Option(help="context size: of the embedded judge server, and of the likelihood model")
    ] = 8192,
    timeout: Annotated[
        float, typer.Option(help="seconds one judge call may take (a CPU-bound local model is slow on long logs)")
    ] = 600.0,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="run the sessions that failed before (infrastructure errors) again")
    ] = False,
    subset: Annotated[
        Optional[Path], typer.Option("--subset", help="a subset manifest from `failforge subset`: its members only")
    ] = None,
) -> None:
    """Run an attribution method (or a methods config of several) over labelled failures; every judge call is recorded
    for replay."""
    from failforge.attribution import EXECUTORS, AttributeConfig, LikelihoodConfig, PromptConfig, methods
    from failforge.llm import ModelEndpoint

    if methods_config is not None:
        given = [
            flag
            for flag, value in (
                ("--method", method),
                ("--base-url", base_url),
                ("--model", model),
                ("--recording", recording),
            )
            if value is not None
        ]
        if given:
            raise ConfigError(
                f"--methods-config names each run's method and judge; it cannot be combined with {', '.join(given)}"
            )
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor}: unknown (known: {', '.join(EXECUTORS)})")
    if structured_output not in ("auto", "off"):
        raise ConfigError(f"--structured-output {structured_output}: choose auto or off")
    if paraphrased_menu and not menu:
        raise ConfigError("--paraphrased-menu rewords the menu; it cannot be combined with --free-text (no menu)")
    plan = _methods_plan(methods_config) if methods_config is not None else None
    if plan is None:
        methods.get(
            method or "all-at-once"
        )  # an unknown method: one line naming the known ones, before any record is read
    if recording is not None and not (recording / "calls.jsonl").exists():
        raise ConfigError(f"{recording}: no calls.jsonl (not an attribution run folder with a recording)")
    skipped: list[str] = []
    every = _records(records_path, skipped)
    records = _pick(_subset_members(subset, every) if subset is not None else every, limit, ids, source)

    def config_of(name: str, run_executor: str, workers: int) -> AttributeConfig:
        return AttributeConfig(
            method=name,
            seed=seed,
            max_tokens=max_tokens,
            concurrency=workers,
            executor=run_executor,  # type: ignore[arg-type]
            ray_address=ray_address,  # type: ignore[arg-type]
            structured_output=structured_output,  # type: ignore[arg-type]  # checked below
            prompt=PromptConfig(
                with_answer=answer,
                menu=menu,
                paraphrased_menu=paraphrased_menu,
                max_step_chars=max_step_chars,
                budget_chars=budget_chars,
            ),
            likelihood=LikelihoodConfig(n_ctx=min(n_ctx, 4096)),
        )

    if plan is None:
        config = config_of(method or "all-at-once", executor, concurrency)
        summary = _run_method(
            records, config, output, _endpoint(base_url, model, api_key_env), recording, retry_failed, n_ctx, timeout
        )
        _summary_table(summary, output)
        unread = summary.unread_lines
    else:
        methods_file, loaded = plan
        provenance = loaded.provenance(methods_file)
        unread = []
        done: list[tuple[str, Any, Path]] = []
        for entry in loaded.runs:
            folder = output / entry.folder
            config = config_of(entry.method, entry.executor or executor, entry.workers or concurrency)
            endpoint = ModelEndpoint(**entry.endpoint.model_dump()) if entry.endpoint is not None else None
            console.print(f"[bold]{entry.folder}[/]: {entry.method} -> {folder}")
            own = (
                entry.endpoint.timeout
                if entry.endpoint is not None and "timeout" in entry.endpoint.model_fields_set
                else None
            )
            summary = _run_method(
                records,
                config,
                folder,
                endpoint,
                None,
                retry_failed,
                n_ctx,
                own if own is not None else timeout,
                provenance={"methods_config": provenance, "run": entry.folder},
                label=entry.folder,
            )
            unread += summary.unread_lines
            done.append((entry.folder, summary, folder))
        for name, summary, folder in done:
            out.print(
                f"{name}: {summary.method} · records {summary.planned} · resumed {summary.done_before} · predicted"
                f" {summary.predicted} · failed {summary.failed} · live calls {summary.live_calls} · replayed"
                f" {summary.replayed_calls} · tokens {summary.prompt_tokens + summary.completion_tokens} ·"
                f" {summary.seconds}s · {folder}"
            )
    for line in unread:
        console.print(f"[yellow]skipped recorded call[/] {line}")
    if skipped or unread:
        raise typer.Exit(1)


def _methods_plan(path: Path) -> tuple[Path, Any]:
    from failforge.attribution import load_methods_config

    return path, load_methods_config(path)


def _run_method(
    records: list[Any],
    config: Any,
    output: Path,
    endpoint: Any,
    recording: Optional[Path],
    retry_failed: bool,
    n_ctx: int,
    timeout: float,
    *,
    provenance: Optional[dict[str, Any]] = None,
    label: Optional[str] = None,
) -> Any:
    """One method's run through :func:`run_attribution`, with a progress bar (or log lines) and its judge
    opened: ``endpoint``, else the embedded local model; a recording or a baseline opens none."""
    from failforge.attribution import methods, run_attribution

    kind = methods.get(config.method).kind
    name = label or config.method

    def go(endpoint: Any = None) -> Any:
        with _progress() as progress:
            bar = progress.add_task(name, total=len(records), status="")
            line = ProgressLine(total=len(records), every=0 if console.is_terminal else 10.0)

            def on_progress(attempt: str, summary: Any) -> None:
                status = line.update(
                    summary.done_before,
                    summary.predicted + summary.failed,
                    f"failed {summary.failed} · live calls {summary.live_calls}",
                )
                progress.update(bar, completed=line.done, status=status)
                if line.due():  # a log, not a terminal: one plain line every few seconds instead of a bar
                    console.print(f"{name}: {status}")

            return run_attribution(
                records,
                config,
                output,
                upstream=None,
                endpoint=endpoint,
                recording=recording,
                retry_failed=retry_failed,
                on_progress=on_progress,
                provenance=provenance,
            )

    if kind == "judge" and recording is None:
        from failforge.campaign import open_models

        with open_models(endpoint, None, n_ctx=n_ctx) as resolved:
            config.judge_model = resolved.agent.model
            config.judge_base_url = resolved.agent.base_url
            return go(resolved.agent.model_copy(update={"timeout": timeout}))
    if kind == "judge":
        previous = (
            read_json(recording / "manifest.json") if recording and (recording / "manifest.json").exists() else {}
        )
        config.judge_model = (previous.get("config") or {}).get("judge_model") or (endpoint.model if endpoint else None)
    return go()


def _summary_table(summary: Any, output: Path) -> None:
    table = Table(title=f"failforge attribute --method {summary.method}")
    table.add_column("what")
    table.add_column("value", justify="right")
    ran = summary.predicted + summary.failed
    for label, value in (
        ("records", summary.planned),
        ("already done (resumed)", summary.done_before),
        ("predicted now", summary.predicted),
        ("failed (infrastructure / drift)", summary.failed),
        ("judge calls", summary.calls),
        ("  live", summary.live_calls),
        ("  from the recording", summary.replayed_calls),
        ("prompt tokens", summary.prompt_tokens),
        ("completion tokens", summary.completion_tokens),
        ("seconds", summary.seconds),
        ("seconds per record", round(summary.seconds / ran, 2) if ran else 0),
    ):
        table.add_row(label, str(value))
    out.print(table)
    out.print(f"predictions: {output / 'predictions.jsonl'}\nrecords:     {output / 'records.jsonl'}")
    if (output / "calls.jsonl").exists():
        out.print(f"calls:       {output / 'calls.jsonl'}")


def _predictions(path: Path, skipped: list[str] | None = None) -> list[Any]:
    from failforge.attribution import load_predictions

    if path.is_dir():
        path = path / "predictions.jsonl"
    if not path.exists():
        raise ConfigError(f"{path}: no such predictions file")
    predictions, problems = load_predictions(path)
    for problem in problems:
        console.print(f"[yellow]skipped prediction[/] {problem}")
    if skipped is not None:
        skipped.extend(map(str, problems))
    return predictions


def _fmt(metric: Any) -> str:
    if not isinstance(metric, dict) or metric.get("value") is None:
        return "—"
    value = metric["value"]
    ci = metric.get("ci95")
    return f"{value:.1f}" + (f" [{ci[0]:.0f}–{ci[1]:.0f}]" if ci else "")


def _table(title: str, rows: dict[str, Any], k: int) -> Table:
    table = Table(title=title)
    for col in ("group", "N", "agent", "step", f"±{k}", "MAE", "signed", "early %", "mode F1", "family F1", "joint"):
        table.add_column(col, justify="right" if col != "group" else "left")
    for name, m in rows.items():
        table.add_row(
            name,
            str(m.get("n", "")),
            _fmt(m["agent"]),
            _fmt(m["step_exact"]),
            _fmt(m["step_within_k"]),
            _fmt(m["mae"]),
            _fmt(m["signed_error"]),
            _fmt(m["early_share"]),
            _fmt(m["mode_macro_f1"]),
            _fmt(m["family_macro_f1"]),
            _fmt(m["joint"]),
        )
    return table


@app.command()
def score(
    records_path: Annotated[
        Optional[Path], typer.Argument(metavar="RECORDS", help="the gold: records JSONL or a run folder")
    ] = None,
    predictions_path: Annotated[
        Optional[Path], typer.Argument(metavar="PREDICTIONS", help="predictions JSONL or a run folder")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="tolerance of Step ±k")] = 5,
    compare_with: Annotated[
        Optional[Path], typer.Option("--compare", help="second predictions file: paired bootstrap of the difference")
    ] = None,
    resamples: Annotated[int, typer.Option(help="bootstrap resamples")] = 10_000,
    report_json: Annotated[Optional[Path], typer.Option("--json", help="write the full report as JSON")] = None,
    subset: Annotated[
        Optional[Path],
        typer.Option(
            "--subset",
            help=(
                "a subset manifest from `failforge subset`: score its members only (refused if the records do not"
                " reproduce it)"
            ),
        ),
    ] = None,
    outcomes: Annotated[
        Optional[list[Path]],
        typer.Option(
            "--outcomes", help="runs (seeds, branches, gold JSONL) with a five-outcome adjudication: BLINDSPOT's rates"
        ),
    ] = None,
    runs_k: Annotated[
        int, typer.Option("--runs-k", help="with --outcomes: k of Fail@k and consistency@k over repeated runs")
    ] = 1,
) -> None:
    """Score predictions against gold (Agent, Step exact/±k, MAE, mode F1, Joint; component localisation and chains),
    and/or outcome rates of runs."""
    if records_path is None and not outcomes:
        raise ConfigError("give RECORDS and PREDICTIONS, or --outcomes RUNS.jsonl (or both)")
    if records_path is not None and predictions_path is None:
        raise ConfigError("give PREDICTIONS after RECORDS (a predictions JSONL or a run folder)")
    skipped: list[str] = []
    report: dict[str, Any] = {}
    if records_path is not None and predictions_path is not None:
        report = _score_predictions(records_path, predictions_path, k, compare_with, resamples, subset, skipped)
    if outcomes:
        report["outcomes"] = _score_outcomes(outcomes, runs_k, skipped)
    _finish(report, report_json, skipped)


def _score_predictions(
    records_path: Path,
    predictions_path: Path,
    k: int,
    compare_with: Optional[Path],
    resamples: int,
    subset: Optional[Path],
    skipped: list[str],
) -> dict[str, Any]:
    from failforge.attribution import compare
    from failforge.attribution import score as score_report

    records = _records(records_path, skipped)
    if subset is not None:
        records = _subset_members(subset, records)
    predictions = _predictions(predictions_path, skipped)
    report: dict[str, Any] = score_report(records, predictions, k=k)
    counts = report["counts"]
    out.print(_table("overall", {"all": report["overall"]}, k))
    out.print(_table("by source", report["by_source"], k))
    for axis in ("modality", "topology"):
        if len(report[f"by_{axis}"]) > 1:
            out.print(_table(f"by {axis}", report[f"by_{axis}"], k))
    macro = report["macro_source"]
    out.print(
        "macro over sources: " + ", ".join(f"{key} {v['value']}" for key, v in macro.items() if v["value"] is not None)
    )
    sub = report["upstream_substring"]
    out.print(
        f"Who&When evaluate.py substring rule: step {sub['step_accuracy_substring']} vs integer"
        f" {sub['step_accuracy_integer']} ({sub['step_inflation_pp']:+} pp, {sub['records_counted_only_by_substring']}"
        f" records), agent {sub['agent_accuracy_substring']}; evaluate.py reads {sub['parsed']} of {sub['n']}"
        " predictions"
    )
    if "components" in report:
        out.print(_component_table(report["components"]))
    out.print(
        f"records {counts['records']} · predictions {counts['predictions']} · missing {counts['missing']} (scored"
        f" wrong) · with problems {counts['with_problems']} · not in the records {counts['extra']}"
    )
    if compare_with is not None:
        other = _predictions(compare_with, skipped)
        report["compare"] = compare(records, predictions, other, k=k, resamples=resamples)
        table = Table(
            title=(
                f"paired bootstrap: {predictions_path} - {compare_with} (pp, source-stratified, {resamples} resamples)"
            )
        )
        for col in ("metric", "A - B", "95% CI", "p"):
            table.add_column(col)
        for name, r in report["compare"].items():
            if isinstance(r, dict):
                table.add_row(name, str(r["observed"]), f"[{r['low']}, {r['high']}]", str(r["p_value"]))
        out.print(table)
    return report


def _component_table(report: dict[str, Any]) -> Table:
    table = Table(
        title="components: primary localisation and chain recovery (failforge's definitions, docs/COMPONENTS.md)"
    )
    for col in (
        "group",
        "N",
        "top-1",
        "top-3",
        "MRR",
        "attack F1",
        "attack exact",
        "attack order-F1",
        "exec F1",
        "exec exact",
        "exec order-F1",
    ):
        table.add_column(col, justify="left" if col == "group" else "right")
    rows = {
        "all": report["overall"],
        **report["by_source"],
        **{f"type {n}": m for n, m in report["by_target_type"].items()},
    }
    for name, m in rows.items():
        a, e = m["attack_chain"], m["execution_chain"]
        table.add_row(
            name,
            str(m["n"]),
            str(m["top1"]),
            str(m["top3"]),
            str(m["mrr"]),
            str(a["f1"]),
            str(a["exact"]),
            str(a["order_f1"]),
            str(e["f1"]),
            str(e["exact"]),
            str(e["order_f1"]),
        )
    return table


def _score_outcomes(paths: list[Path], runs_k: int, skipped: list[str]) -> dict[str, Any]:
    from failforge.attribution import outcome_report
    from failforge.trajectory import load_jsonl

    runs: list[Any] = []
    for path in paths:
        if not path.exists():
            raise ConfigError(f"{path}: no such runs file (give seeds.jsonl, branches or gold.jsonl)")
        good, bad = load_jsonl(path)
        for problem in bad:
            console.print(f"[yellow]skipped run[/] {problem}")
        skipped.extend(map(str, bad))
        runs.extend(good)
    report: dict[str, Any] = outcome_report(runs, runs_k)
    table = Table(title=f"outcome rates (BLINDSPOT's names, failforge's denominators; k={runs_k})")
    for col in (
        "group",
        "runs",
        "UCR",
        "CRR",
        "benign utility",
        "ORR",
        "indeterminate",
        f"Fail@{runs_k}",
        f"consistent@{runs_k}",
        "post-refusal failure",
    ):
        table.add_column(col, justify="left" if col == "group" else "right")
    rows: dict[str, Any] = {"all": report["overall"]}
    for axis in ("model", "harness", "environment", "source"):
        rows.update({f"{axis} {n}": m for n, m in report[f"by_{axis}"].items()})
    for name, m in rows.items():
        table.add_row(
            name,
            str(m["adjudicated"]),
            *(
                str(m[key]["value"])
                for key in (
                    "unsafe_completion_rate",
                    "correct_refusal_rate",
                    "benign_utility",
                    "over_refusal_rate",
                    "indeterminate_rate",
                    "fail_at_k",
                    "consistency_at_k",
                    "post_refusal_failure",
                )
            ),
        )
    out.print(table)
    return report


def _finish(report: Any, report_json: Optional[Path], skipped: list[str]) -> None:
    """Write the report as JSON when asked; exit 1 when lines were skipped (the scores are over what could be read)."""
    if report_json:
        report_json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        out.print(f"report: {report_json}")
    if skipped:
        console.print(
            f"[yellow]{len(skipped)} line(s) skipped[/] (each named above): the scores are over what could be read"
        )
        raise typer.Exit(1)


def _export_inputs(path: Path) -> tuple[list[Any], list[Any]]:
    """(records, problems): failforge gold or labelled-failure records, decided by the first readable line.

    Both are read with the one JSONL reader, so a bad line (or a trajectory without a gold label) is a
    problem naming its file and line, and every other line is still exported."""
    from failforge.attribution import RecordProblem, iter_records
    from failforge.jsonl import read_jsonl
    from failforge.plugins import importers

    first = next((item[1] for item in read_jsonl(path) if isinstance(item, tuple)), None)
    records: list[Any] = []
    problems: list[Any] = []
    reader = (
        iter_records if first is not None and {"gold", "steps", "origin"} <= set(first) else importers.get("failforge")
    )
    for item in reader(path):
        (problems if isinstance(item, RecordProblem) else records).append(item)
    return records, problems


def _trajectory_inputs(path: Path) -> tuple[list[Any], list[Any]]:
    """(trajectories, problems): gold and seeds alike (no gold label needed), read with the one JSONL reader;
    labelled-failure records when the file holds those."""
    from failforge.attribution import RecordProblem, iter_records
    from failforge.jsonl import read_jsonl
    from failforge.trajectory import load_jsonl

    first = next((item[1] for item in read_jsonl(path) if isinstance(item, tuple)), None)
    if first is not None and {"gold", "steps", "origin"} <= set(first):
        records: list[Any] = []
        problems: list[Any] = []
        for item in iter_records(path):
            (problems if isinstance(item, RecordProblem) else records).append(item)
        return records, problems
    good, bad = load_jsonl(path)
    return list(good), [RecordProblem.of(e) for e in bad]


@app.command()
def export(
    gold: Annotated[Path, typer.Argument(help="failforge gold.jsonl, or labelled-failure records")],
    format: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="whowhen-pro (alias whowhen-pro-release), whowhen, tracertraj, trajectory-attribution or otel",
        ),
    ] = "whowhen-pro",
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="folder (whowhen-pro, whowhen, otel) or .parquet/.jsonl file (tracertraj)"),
    ] = Path("export"),
    codes: Annotated[
        str, typer.Option(help="mode codes written: release (the released taxonomy.yaml) or failforge (18 codes)")
    ] = "release",
) -> None:
    """Write gold records in a public failure-attribution format that its own reader loads unchanged."""
    from failforge.plugins import exporters

    exporter = exporters.get(format)
    if codes not in ("release", "failforge"):
        raise ConfigError(f"--codes must be release or failforge, not {codes!r}")
    wants_runs = exporters.info(format).meta.get("input") == "trajectories"  # otel: gold and seeds as they ran
    items, unread = _trajectory_inputs(gold) if wants_runs else _export_inputs(gold)
    summary = exporter(items, output, codes)
    for note in summary.notes:
        console.print(f"[yellow]note[/] {note}")
    out.print(
        f"wrote {summary.written} {format} records: "
        + ", ".join(summary.files[:3])
        + (" ..." if len(summary.files) > 3 else "")
    )
    skipped = [*unread, *summary.skipped]
    if skipped:  # an export that leaves a record out is not the dataset asked for: exit 1, with why
        reasons = Counter(p.field for p in skipped)
        console.print(
            f"[red]skipped {len(skipped)} of {len(items) + len(unread)} records[/] (by field: "
            + ", ".join(f"'{field}' {n}" for field, n in reasons.most_common())
            + "); each is named below"
        )
        for problem in skipped:
            console.print(f"[yellow]skipped[/] {problem}")
        raise typer.Exit(1)


@app.command("attach-audit")
def attach_audit(
    run: Annotated[Path, typer.Argument(help="a finished `failforge attribute --method auditor` run folder")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="the run's records, each with its recorded audit (JSONL)")
    ] = Path("audited.jsonl"),
) -> None:
    """Write the run's labelled-failure records with the trajectory auditor's recorded output in their `audit` field."""
    from failforge.attribution import attach_audits, write_records

    skipped: list[str] = []
    records = _records(run, skipped)
    predictions = _predictions(run, skipped)
    methods = sorted({p.method for p in predictions})
    if not methods or any(not m.startswith("auditor/") for m in methods):
        raise ConfigError(
            f"{run}: predictions of {', '.join(methods) or 'no method'}; attach-audit needs a run of --method auditor"
        )
    manifest = read_json(run / "manifest.json") if (run / "manifest.json").exists() else {}
    audited, missing = attach_audits(records, predictions, (manifest.get("config") or {}).get("judge_model"))
    write_records(output, audited)
    out.print(f"wrote {len(audited)} records, {len(audited) - len(missing)} with an audit: {output}")
    for record_id in missing:
        console.print(
            f"[yellow]no audit[/] {record_id}: its session failed or is not in predictions.jsonl (written without one)"
        )
    if missing or skipped:
        raise typer.Exit(1)


@app.command("subset")
def subset_(
    records_path: Annotated[
        Path, typer.Argument(metavar="RECORDS", help="labelled-failure records (JSONL or a run folder)")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="folder for manifest.json, records.jsonl and ids.txt")
    ] = Path("subset"),
    per_source: Annotated[
        int, typer.Option("--per-source", help="records drawn per source (all of a source that has fewer)")
    ] = 40,
    seed: Annotated[int, typer.Option(help="seed of the draw (kept in the manifest; a subset is never rerolled)")] = 0,
) -> None:
    """Draw a fixed, source-stratified subset from the record ids alone (never labels or predictions), with a hashed
    manifest."""
    from failforge.attribution import make_manifest, write_records

    skipped: list[str] = []
    records = _records(records_path, skipped)
    if skipped:
        raise ConfigError(
            f"{records_path}: {len(skipped)} record(s) could not be read; a subset's dataset hash must cover the whole"
            " file, fix or remove them first"
        )
    manifest = make_manifest(records, per_source, seed)
    if (output / "manifest.json").exists():
        raise ConfigError(
            f"{output / 'manifest.json'} exists; a fixed subset is not redrawn over itself (give another --output)"
        )
    output.mkdir(parents=True, exist_ok=True)
    by_id = {r.id: r for r in records}
    write_records(output / "records.jsonl", [by_id[m.id] for m in manifest.members])
    (output / "ids.txt").write_text("".join(f"{m.id}\n" for m in manifest.members), encoding="utf-8")
    (output / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    table = Table(title=f"subset: {per_source} per source, seed {seed}")
    for col in ("source", "population", "drawn"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for name, stratum in manifest.strata.items():
        table.add_row(name, str(stratum.population), str(stratum.drawn))
    out.print(table)
    out.print(
        f"manifest: {output / 'manifest.json'} (dataset sha256 {manifest.dataset_sha256[:12]})\nrecords: "
        f" {output / 'records.jsonl'}"
    )


@app.command("subset-fidelity")
def fidelity_(
    records_path: Annotated[Path, typer.Argument(metavar="RECORDS", help="the full set of labelled failures")],
    predictions_paths: Annotated[
        list[Path],
        typer.Argument(metavar="PREDICTIONS...", help="full-set predictions, one file or run folder per method"),
    ],
    subset: Annotated[Path, typer.Option("--subset", help="the subset manifest (from `failforge subset`)")],
    k: Annotated[int, typer.Option("--k", help="tolerance of Step ±k")] = 5,
    aggregate: Annotated[
        str, typer.Option(help="macro (each source weighs the same, LongRCA's Macro-5) or micro")
    ] = "macro",
    report_json: Annotated[Optional[Path], typer.Option("--json", help="write the report as JSON")] = None,
) -> None:
    """How far each method's subset scores are from its full-set scores (LongRCA's fidelity), and whether the ranking
    holds."""
    from failforge.attribution import FIDELITY_METRICS, fidelity

    if aggregate not in ("macro", "micro"):
        raise ConfigError(f"--aggregate must be macro or micro, got {aggregate!r}")
    skipped: list[str] = []
    records = _records(records_path, skipped)
    _, manifest = _manifest(subset)
    by_method: dict[str, list[Any]] = {}
    for path in predictions_paths:
        preds = _predictions(path, skipped)
        names = sorted({p.method for p in preds})
        name = names[0] if len(names) == 1 else str(path)
        if name in by_method:
            name = f"{name} ({path})"
        by_method[name] = preds
    report = fidelity(records, manifest, by_method, k=k, aggregate=aggregate)
    table = Table(
        title=f"fidelity: subset {report['subset_size']} of {report['full_size']} ({aggregate} over sources, points)"
    )
    table.add_column("method")
    for m in FIDELITY_METRICS:
        table.add_column(f"{m} full / subset / |dev|", justify="right")
    for row in report["methods"]:  # type: ignore[attr-defined]
        table.add_row(
            row["method"],
            *(f"{row['full'][m]} / {row['subset'][m]} / {row['deviation_pp'][m]}" for m in FIDELITY_METRICS),
        )
    out.print(table)
    out.print(
        f"deviation: mean {report['mean_deviation_pp']} pp, max {report['max_deviation_pp']} pp over methods x metrics;"
        f" Kendall tau of the Step-exact ranking {report['kendall_tau_step_exact']}"
    )
    _finish(report, report_json, skipped)
