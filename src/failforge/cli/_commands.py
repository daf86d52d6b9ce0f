"""The ``failforge`` command.

Every command takes its configuration from flags (no hidden state) and records it in what it writes.
Model endpoints: pass ``--base-url``/``--model`` (key read from ``--api-key-env``) for any
OpenAI-compatible server; without them failforge starts the embedded local model for the duration
of the command and stops it afterwards.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from failforge import __version__
from failforge.errors import FailforgeError

from failforge.cli._app import _endpoint, _progress, app, console, out, seeds_app


DEMO_SEED_TASKS = (
    ("banking", "user_task_1"),
    ("banking", "user_task_3"),
    ("slack", "user_task_0"),
    ("slack", "user_task_2"),
    ("travel", "user_task_0"),
    ("workspace", "user_task_0"),
)


def bundled_seeds_path() -> Path:
    return Path(str(resources.files("failforge") / "data" / "seeds" / "agentdojo_demo.jsonl"))


@app.command()
def version() -> None:
    """Print the failforge version."""
    out.print(__version__)


@app.command()
def taxonomy() -> None:
    """Print the 18 error modes with where each applies."""
    from failforge.taxonomy import taxonomy_table

    out.print(taxonomy_table())


def _write_seeds(output: Path, label: str, items: list[str], make, failure: str) -> None:  # type: ignore[no-untyped-def]
    """Record one seed per item; keep evaluator successes, report the rest (a bad item never stops the run)."""
    from failforge.trajectory import write_jsonl

    made, failed = [], []
    with _progress() as progress:
        bar = progress.add_task(label, total=len(items), status="")
        for item in items:
            try:
                seed = make(item)
            except FailforgeError as exc:
                failed.append(f"{item}: {exc}")
            else:
                if seed.outcome and seed.outcome.success:
                    made.append(seed)
                else:
                    failed.append(f"{item}: {failure}")
            progress.update(bar, advance=1, status=item)
    write_jsonl(output, made)
    out.print(f"wrote {len(made)} {label} to {output} ({len(failed)} failed)")
    for line in failed:
        console.print(f"[yellow]skipped[/] {line}")


@seeds_app.command("agentdojo")
def seeds_agentdojo(
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL file to write")] = Path("agentdojo_oracle_seeds.jsonl"),
    suite: Annotated[Optional[list[str]], typer.Option(help="suite(s): workspace, travel, banking, slack (default: all)")] = None,
    task: Annotated[Optional[list[str]], typer.Option(help="user task id(s): user_task_3 (in every chosen suite) or banking/user_task_3 (default: all)")] = None,
    model: Annotated[str, typer.Option(help="model name the seeds are recorded for (the agent that will branch them)")] = "smollm2-135m-instruct",
) -> None:
    """Oracle seeds: AgentDojo's ground truth recorded through the built-in harness (no model needed)."""
    from failforge.environments.agentdojo_env import SUITES, list_user_tasks
    from failforge.environments.agentdojo_seeds import oracle_seed

    pairs = [f"{s}/{t}" for s, t in list_user_tasks(tuple(suite or SUITES)) if not task or t in task or f"{s}/{t}" in task]
    if not pairs:
        raise typer.BadParameter("no AgentDojo user task matches --suite/--task")
    _write_seeds(output, "oracle seeds", pairs, lambda pair: oracle_seed(*pair.split("/", 1), model=model), "ground truth did not pass the utility check")


@seeds_app.command("miniwob")
def seeds_miniwob(
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL file to write")] = Path("miniwob_demo_seeds.jsonl"),
    task: Annotated[Optional[list[str]], typer.Option(help="MiniWoB task(s), e.g. click-button (default: every task with a demonstration policy)")] = None,
    cache_dir: Annotated[Optional[Path], typer.Option(help="where page loads are cached (the seeds replay from it)")] = None,
    model: Annotated[str, typer.Option(help="model name the seeds are recorded for")] = "smollm2-135m-instruct",
) -> None:
    """Demonstration seeds: scripted MiniWoB++ policies recorded through the built-in harness in headless Chromium."""
    from failforge.environments.miniwob import DEMO_TASKS, demo_seed

    settings = {"cache_dir": str(cache_dir.resolve())} if cache_dir else {}
    _write_seeds(output, "MiniWoB demonstration seeds", list(task or DEMO_TASKS), lambda name: demo_seed(name, model=model, **settings), "the demonstration did not earn a reward")


@seeds_app.command("humaneval")
def seeds_humaneval(
    output: Annotated[Path, typer.Option("--output", "-o", help="JSONL file to write")] = Path("humaneval_oracle_seeds.jsonl"),
    task: Annotated[Optional[list[str]], typer.Option(help="HumanEval task id(s), e.g. HumanEval/0 (default: all 164)")] = None,
    backend: Annotated[str, typer.Option(help="sandbox backend: docker, local or auto")] = "auto",
    model: Annotated[str, typer.Option(help="model name the seeds are recorded for")] = "smollm2-135m-instruct",
) -> None:
    """Oracle seeds: HumanEval canonical solutions written and run in a sandbox through the built-in harness."""
    from failforge.environments.humaneval import list_task_ids, oracle_seed
    from failforge.environments.sandbox import resolve_backend

    concrete = resolve_backend(backend)  # type: ignore[arg-type]
    ids = list(task or list_task_ids())
    _write_seeds(output, f"HumanEval oracle seeds ({concrete})", ids, lambda task_id: oracle_seed(task_id, concrete, model=model), "the canonical solution did not pass")


@app.command()
def doctor() -> None:
    """Which sandbox backends, browser and model runtime work on this machine, and why not."""
    import importlib.util
    import shutil

    table = Table(title="failforge doctor")
    for col in ("part", "works", "why"):
        table.add_column(col)
    try:
        from failforge.environments.sandbox import sandbox_doctor

        for row in sandbox_doctor():
            table.add_row(f"sandbox: {row.backend}", "yes" if row.works else "NO", row.why)
    except Exception as exc:  # the doctor must report, never crash
        table.add_row("sandbox", "NO", f"{type(exc).__name__}: {exc}")
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    browser_ok = bool(chromium and importlib.util.find_spec("playwright") and importlib.util.find_spec("miniwob"))
    table.add_row("browser (MiniWoB++)", "yes" if browser_ok else "NO", f"chromium at {chromium}" if browser_ok else "needs Debian chromium, playwright and miniwob: bash scripts/install.sh")
    try:
        from failforge.llm import local_model_path

        model_ok = bool(importlib.util.find_spec("llama_cpp")) and local_model_path().exists()
        why = str(local_model_path()) if model_ok else "llama-cpp-python missing: bash scripts/install.sh"
    except FailforgeError as exc:
        model_ok, why = False, str(exc)
    table.add_row("local model", "yes" if model_ok else "NO", why)
    table.add_row("agentdojo", "yes" if importlib.util.find_spec("agentdojo") else "NO", "AgentDojo v1 suites")
    out.print(table)


def _record_target(env: str, suite: Optional[str], task_id: str, backend: str, cache_dir: Optional[Path]):  # type: ignore[no-untyped-def]
    """(environment spec, default built-in harness) for one task of ``env``."""
    if env == "agentdojo":
        from failforge.environments.agentdojo_seeds import env_spec
        from failforge.harnesses import ToolCallingAgent

        if not suite:
            raise typer.BadParameter("--suite is required for --env agentdojo")
        return env_spec(suite, task_id), ToolCallingAgent()
    if env == "miniwob":
        from failforge.environments.miniwob import default_seed, demo_harness, env_spec as miniwob_spec

        settings = {"cache_dir": str(cache_dir.resolve())} if cache_dir else {}
        return miniwob_spec(task_id, default_seed(task_id), cache_mode="record", **settings), demo_harness()
    if env == "humaneval":
        from failforge.environments.humaneval import default_harness, env_spec as humaneval_spec

        return humaneval_spec(task_id, backend), default_harness()  # type: ignore[arg-type]
    raise typer.BadParameter("--env must be agentdojo, miniwob or humaneval")


@app.command()
def record(
    task: Annotated[list[str], typer.Option(help="task id(s): user_task_3 (AgentDojo), click-button (MiniWoB), HumanEval/0")],
    env: Annotated[str, typer.Option(help="agentdojo, miniwob or humaneval")] = "agentdojo",
    suite: Annotated[Optional[str], typer.Option(help="AgentDojo suite")] = None,
    backend: Annotated[str, typer.Option(help="HumanEval sandbox backend: docker, local or auto")] = "auto",
    cache_dir: Annotated[Optional[Path], typer.Option(help="MiniWoB page cache (the seeds replay from it)")] = None,
    output: Annotated[Path, typer.Option("--output", "-o")] = Path("recorded_seeds.jsonl"),
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible endpoint (default: embedded local model)")] = None,
    model: Annotated[Optional[str], typer.Option(help="model name at --base-url")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(help="environment variable holding the API key")] = "OPENAI_API_KEY",
    harness: Annotated[str, typer.Option(help="builtin (failforge's loop) or agentdojo (AgentDojo's AgentPipeline, AgentDojo only)")] = "builtin",
    keep_failures: Annotated[bool, typer.Option(help="also write runs the evaluator judged failed (to OUTPUT.failures.jsonl)")] = False,
) -> None:
    """Record model-generated seeds; only evaluator successes become seeds."""
    from failforge.campaign import Models, open_models
    from failforge.harnesses import AgentDojoPipelineHarness
    from failforge.replay import record as record_run
    from failforge.trajectory import append_jsonl

    if harness not in ("builtin", "agentdojo") or (harness == "agentdojo" and env != "agentdojo"):
        raise typer.BadParameter("--harness must be builtin, or agentdojo with --env agentdojo")
    kept = failed = 0
    with open_models(_endpoint(base_url, model, api_key_env), None) as resolved:
        models = Models(resolved)
        for task_id in task:
            name = f"{suite}/{task_id}" if suite else task_id
            try:
                spec, chosen = _record_target(env, suite, task_id, backend, cache_dir)
                if harness == "agentdojo":
                    chosen = AgentDojoPipelineHarness()
                traj = record_run(env_spec=spec, harness=chosen, model=models.agent_spec, upstream=models.agent())
            except FailforgeError as exc:
                console.print(f"[red]{name}: {exc}[/]")
                failed += 1
                continue
            if env == "miniwob":  # stored seeds replay their pages from the cache
                traj.environment = traj.environment.model_copy(update={"config": {**traj.environment.config, "cache_mode": "replay"}})
            ok = bool(traj.outcome and traj.outcome.success)
            if ok:
                append_jsonl(output, [traj])
                kept += 1
            else:
                failed += 1
                if keep_failures:
                    append_jsonl(output.with_suffix(".failures.jsonl"), [traj])
            out.print(f"{name}: {'success' if ok else 'failed'} in {len(traj.steps)} steps")
    out.print(f"kept {kept} successful seed(s) in {output}; {failed} run(s) did not succeed")


@app.command()
def replay(
    seeds: Annotated[Path, typer.Argument(help="JSONL of seed trajectories")],
    until: Annotated[Optional[int], typer.Option(help="replay only steps before this agent step")] = None,
    report: Annotated[Optional[Path], typer.Option(help="write the per-seed report as JSON")] = None,
) -> None:
    """Replay seeds with no live model and report fidelity per seed (exit 1 on any drift)."""
    from failforge.replay import replay as replay_seed
    from failforge.trajectory import load_jsonl

    good, bad = load_jsonl(seeds)
    for err in bad:
        console.print(f"[yellow]skipped malformed seed[/] {err}")
    rows = []
    with _progress() as progress:
        bar = progress.add_task("replay", total=len(good), status="")
        for seed in good:
            r = replay_seed(seed, until=until, raise_on_drift=False)
            rows.append(r)
            progress.advance(bar)
    table = Table(title=f"replay of {seeds}")
    for col in ("seed", "steps", "identical", "drift", "success"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.trajectory_id, f"{r.steps_replayed}/{r.steps_expected}", "yes" if r.identical else "NO", f"{type(r.drift).__name__} at step {r.drift.step}" if r.drift else (r.infrastructure or ""), str(r.outcome.success if r.outcome else "-"))
    out.print(table)
    identical = sum(r.identical for r in rows)
    successes = sum(bool(r.outcome and r.outcome.success) for r in rows)
    out.print(f"{identical}/{len(rows)} seeds replayed identically; evaluator success on replay: {successes}/{len(rows)}; malformed: {len(bad)}")
    if report:
        report.write_text(json.dumps([r.to_dict() for r in rows], indent=2))
    if identical < len(rows):
        raise typer.Exit(1)


@app.command()
def audit(
    seeds: Annotated[list[Path], typer.Argument(help="seed JSONL file(s)")],
    json_out: Annotated[Optional[Path], typer.Option("--json", help="write the report as JSON")] = None,
) -> None:
    """Replay every seed to its end (report, don't raise) and summarise fidelity per environment."""
    from failforge.replay import audit as run_audit
    from failforge.trajectory import load_jsonl

    good = []
    for path in seeds:
        ok, bad = load_jsonl(path)
        good.extend(ok)
        for err in bad:
            console.print(f"[yellow]skipped malformed seed[/] {err}")
    with _progress() as progress:
        bar = progress.add_task("audit", total=len(good), status="")
        report = run_audit(good, on_seed=lambda r: progress.update(bar, advance=1, status=r.trajectory_id))
    table = Table(title="replay fidelity per environment")
    for col in ("environment", "seeds", "identical", "drift by type", "drift by position", "cache misses", "infra errors", "success on replay", "seconds"):
        table.add_column(col)
    for env in report.environments:
        table.add_row(
            env.environment, str(env.seeds), f"{env.identical}/{env.seeds}",
            ", ".join(f"{k} {v}" for k, v in env.drift_by_type.items()) or "none",
            ", ".join(f"{k} {v}" for k, v in env.drift_by_position.items()) or "-",
            str(env.cache_misses), str(env.infrastructure_errors), f"{env.evaluator_success_on_replay}/{env.seeds}", f"{env.seconds:.1f}",
        )
    out.print(table)
    if json_out:
        json_out.write_text(report.model_dump_json(indent=2))
        out.print(f"report: {json_out}")


def _run_generate(config, progress_label: str = "attempts", force: bool = False):  # type: ignore[no-untyped-def]
    from failforge.campaign import open_models, run_campaign

    with open_models(config.agent, config.guide) as resolved, _progress() as progress:
        bar = progress.add_task(progress_label, total=None, status="starting")

        def on_progress(event: str, spec, summary) -> None:  # type: ignore[no-untyped-def]
            if event == "plan":
                progress.update(bar, total=summary.planned, completed=summary.skipped, status=f"{summary.skipped} already done")
                return
            progress.update(bar, advance=1, status=f"kept {summary.kept} · rejected {summary.rejected} · failed {summary.failed}")

        summary = run_campaign(config, resolved, on_progress=on_progress, force=force)
    _print_summary(summary)
    return summary


def _print_summary(summary) -> None:  # type: ignore[no-untyped-def]
    table = Table(title="failforge campaign")
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("planned attempts", str(summary.planned))
    table.add_row("already done (resumed)", str(summary.skipped))
    table.add_row("attempts run now", str(summary.attempts))
    table.add_row("kept (gold)", str(summary.kept))
    table.add_row("rejected", str(summary.rejected))
    for reason, count in Counter(summary.rejected_by).most_common():
        table.add_row(f"  rejected by {reason}", str(count))
    table.add_row("failed (infrastructure / drift)", str(summary.failed))
    for reason, count in Counter(summary.failed_by).most_common():
        table.add_row(f"  failed: {reason}", str(count))
    if summary.totals:
        table.add_row("campaign totals: kept / rejected / failed", f"{summary.totals.get('done', 0)} / {summary.totals.get('rejected', 0)} / {summary.totals.get('failed', 0)}")
    out.print(table)
    for line in summary.bad_seeds:
        console.print(f"[yellow]seed skipped:[/] {line}")
    o = summary.output
    out.print(f"gold:     {o / 'gold.jsonl'}\nrejected: {o / 'rejected.jsonl'}\nfailed:   {o / 'failed.jsonl'}\nmanifest: {o / 'manifest.json'}\nledger:   {o / 'ledger.sqlite'}")


@app.command()
def generate(
    campaign: Annotated[Optional[Path], typer.Argument(help="campaign TOML file (flags below override it)")] = None,
    seeds: Annotated[Optional[list[Path]], typer.Option("--seeds", help="seed JSONL file(s)")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="agent model endpoint (default: embedded local model)")] = None,
    model: Annotated[Optional[str], typer.Option(help="agent model name")] = None,
    api_key_env: Annotated[Optional[str], typer.Option()] = "OPENAI_API_KEY",
    guide_base_url: Annotated[Optional[str], typer.Option(help="guide model endpoint (default: the agent's)")] = None,
    guide_model: Annotated[Optional[str], typer.Option()] = None,
    mode: Annotated[Optional[list[str]], typer.Option("--mode", help="restrict to taxonomy code(s)")] = None,
    steps_per_seed: Annotated[Optional[int], typer.Option()] = None,
    modes_per_step: Annotated[Optional[int], typer.Option()] = None,
    samples: Annotated[Optional[int], typer.Option()] = None,
    rng_seed: Annotated[Optional[int], typer.Option()] = None,
    max_seeds: Annotated[Optional[int], typer.Option()] = None,
    concurrency: Annotated[Optional[int], typer.Option(help="attempts in flight at once")] = None,
    executor: Annotated[Optional[str], typer.Option(help="local (thread pool) or ray")] = None,
    ray_address: Annotated[Optional[str], typer.Option(help="Ray cluster address (default: a local Ray instance)")] = None,
    attempt_deadline: Annotated[Optional[float], typer.Option(help="seconds one attempt may take")] = None,
    decisiveness: Annotated[Optional[bool], typer.Option(help="run the decisiveness check (k re-runs per arm)")] = None,
    force: Annotated[bool, typer.Option(help="continue in an output folder that holds a different campaign")] = False,
) -> None:
    """Branch seeds into gold failures: plan, inject, continue, evaluate, filter. Resumes if OUTPUT exists."""
    from failforge.campaign import CampaignConfig, load_campaign

    data = load_campaign(campaign).model_dump(mode="json") if campaign else {}
    if seeds:
        data["seeds"] = [str(p) for p in seeds]
    if output:
        data["output"] = str(output)
    data.setdefault("output", "failforge-out")
    if "seeds" not in data:
        raise typer.BadParameter("give a campaign file or --seeds")
    agent = _endpoint(base_url, model, api_key_env)
    if agent:
        data["agent"] = agent.model_dump()
    guide = _endpoint(guide_base_url, guide_model, api_key_env)
    if guide:
        data["guide"] = guide.model_dump()
    plan = data.setdefault("plan", {})
    for key, value in (("modes", mode), ("steps_per_seed", steps_per_seed), ("modes_per_step", modes_per_step), ("samples", samples), ("rng_seed", rng_seed), ("max_seeds", max_seeds)):
        if value is not None:
            plan[key] = value
    for key, value in (("concurrency", concurrency), ("executor", executor), ("ray_address", ray_address), ("attempt_deadline", attempt_deadline)):
        if value is not None:
            data[key] = value
    if decisiveness is not None:
        data.setdefault("filters", {}).setdefault("decisiveness", {})["enabled"] = decisiveness
    try:
        config = CampaignConfig.model_validate(data)
    except Exception as exc:
        raise typer.BadParameter(str(exc)) from exc
    _run_generate(config, force=force)


BROWSER_DEMO_TASKS = ("click-button", "enter-text", "login-user", "click-checkboxes", "choose-list", "click-tab")


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", "-o")] = Path("failforge-demo"),
    seeds: Annotated[Optional[Path], typer.Option(help="seed JSONL (default: the bundled AgentDojo oracle seeds)")] = None,
    browser: Annotated[bool, typer.Option("--browser", help="the browser part instead: MiniWoB++ demonstrations in headless Chromium")] = False,
    fresh: Annotated[bool, typer.Option(help="delete OUTPUT first instead of resuming")] = True,
) -> None:
    """The main job on embedded defaults: bundled AgentDojo oracle seeds, local model as guide and agent.

    With --browser: records MiniWoB++ demonstration seeds (pages cached in OUTPUT/http-cache), then
    branches them the same way.
    """
    import shutil

    from failforge.campaign import CampaignConfig

    if fresh and output.exists():
        shutil.rmtree(output)
    started = time.perf_counter()
    seed_path = seeds or bundled_seeds_path()
    if browser and seeds is None:
        from failforge.environments.miniwob import demo_seed
        from failforge.trajectory import write_jsonl

        output.mkdir(parents=True, exist_ok=True)
        seed_path = output / "miniwob_seeds.jsonl"
        if not seed_path.exists():
            cache = (output / "http-cache").resolve()
            made = [demo_seed(task, cache_dir=str(cache)) for task in BROWSER_DEMO_TASKS]
            write_jsonl(seed_path, made)
            out.print(f"recorded {len(made)} MiniWoB demonstration seeds in {seed_path}")
    config = CampaignConfig(seeds=[str(seed_path)], output=str(output), guide_kind="auto")
    summary = _run_generate(config, "browser demo attempts" if browser else "demo attempts")
    out.print(f"demo finished in {time.perf_counter() - started:.0f}s")
    if summary.kept == 0:
        console.print("[yellow]no gold record this time: the 135M local model leaks or fails to follow notes often; rerun with --no-fresh to add attempts or use a stronger model via `failforge generate`[/]")


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
