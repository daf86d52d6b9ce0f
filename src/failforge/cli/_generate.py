"""``failforge generate`` and ``failforge demo``: branch seeds into gold failures.

A campaign is configured by a TOML file and/or flags; the resolved configuration is validated before
anything is written, so bad input leaves no output folder behind. After a campaign the summary also
counts the kept records by decisive agent and by error family, and how many come from multi-agent
seeds. The demo mixes single-agent seeds with seeds of the two multi-agent harnesses.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from failforge.campaign import CampaignConfig, CampaignSummary
from failforge.cli._app import ProgressLine, _endpoint, _progress, app, console, file_in_the_way, out
from failforge.errors import ConfigError

DEMO_SEED_TASKS = (
    ("banking", "user_task_1"),
    ("banking", "user_task_3"),
    ("slack", "user_task_0"),
    ("slack", "user_task_2"),
    ("travel", "user_task_0"),
    ("workspace", "user_task_0"),
)


#: Seeds of the demo: the first four single-agent ones and both multi-agent ones (24 attempts in all).
DEMO_SINGLE_AGENT_SEEDS = 4


def bundled_seeds_path() -> Path:
    return Path(str(resources.files("failforge") / "data" / "seeds" / "agentdojo_demo.jsonl"))


def bundled_multiagent_seeds_path() -> Path:
    return Path(str(resources.files("failforge") / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"))


def _demo_seeds(output: Path) -> Path:
    """The demo's seed file in OUTPUT: single-agent and multi-agent bundled seeds, mixed."""
    from failforge.trajectory import load_jsonl, write_jsonl

    single, _ = load_jsonl(bundled_seeds_path())
    multi, _ = load_jsonl(bundled_multiagent_seeds_path())
    path = output / "demo_seeds.jsonl"
    output.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        write_jsonl(path, [*single[:DEMO_SINGLE_AGENT_SEEDS], *multi])
    return path


def _unverifiable_modes(config: CampaignConfig) -> list[str]:
    """Planned modes no rule can verify, when nothing else will: their attempts cannot become gold."""
    from failforge.judgement import STRUCTURAL_MODES
    from failforge.taxonomy import MODES

    conformance = config.filters.conformance
    if "mode_conformance" not in config.filters.enabled or conformance.judge or conformance.keep_unverified:
        return []
    planned = config.plan.modes or [m.code for m in MODES]
    return [code for code in planned if code not in STRUCTURAL_MODES]


#: An environment demo's size: seeds branched and each attempt's deadline (its original arm's too); an attempt
#: past its deadline is failed (and named as such in the summary), never left running. 450 s is what tau2's arm
#: needs on a loaded 2-core machine: its live agent call carries a 6,887-token prompt, and the arm took 397 s with
#: a load of 5-7 (240 s failed it every time). The other demos' attempts end in a fraction of it.
ENV_DEMO_SEEDS = 1
ENV_DEMO_ATTEMPT_SECONDS = 450.0


def why_nothing_kept(summary: CampaignSummary) -> str:
    """Where a campaign's attempts went, for a run that kept nothing: the stages and filters that rejected
    them and the errors that failed them, most frequent first."""
    if summary.planned == 0:
        return "no attempt was planned (no seed has a step the planned modes apply to)"
    parts = []
    if summary.rejected:
        parts.append(
            f"{summary.rejected} rejected ("
            + ", ".join(f"{k} {n}" for k, n in summary.rejected_by.most_common(4))
            + ")"
        )
    if summary.failed:
        parts.append(
            f"{summary.failed} failed (" + ", ".join(f"{k} {n}" for k, n in summary.failed_by.most_common(4)) + ")"
        )
    done = summary.kept + summary.rejected + summary.failed
    if done < summary.planned - summary.skipped:
        parts.append(f"{summary.planned - summary.skipped - done} not run")
    return "; ".join(parts) or "no attempt finished"


def nothing_kept_cause(summary: CampaignSummary) -> str:
    """The demo's one-sentence why, for a run that kept nothing: when every rejection is the decisiveness check's,
    the embedded model failed the task from the seed's own step too; otherwise its notes went unfollowed."""
    if summary.rejected and set(summary.rejected_by) == {"decisiveness"}:
        return "The 135M local model, continuing the seed's own step, failed the task too, so the step decides nothing"
    return "The 135M local model leaks or fails to follow notes often"


def _run_generate(
    config: CampaignConfig,
    progress_label: str = "attempts",
    force: bool = False,
    retry_failed: bool = False,
    warm: dict[str, object] | None = None,
    deadline_hint: str = "",
) -> CampaignSummary:
    """Run the campaign with a progress bar; exit non-zero when the user's intent was not met.

    Ctrl-C or SIGTERM stops it cleanly: attempts in flight go back to the queue (they do not count as
    failures), the manifest says ``interrupted``, and the same command resumes.
    """
    from failforge.campaign import open_models, run_campaign

    unverifiable = _unverifiable_modes(config)
    if unverifiable:
        console.print(
            "[yellow]note:[/] mode_conformance has no judge and keep_unverified is false, so candidates of the"
            f" semantic modes ({', '.join(unverifiable)}) can only be rejected as unverified; enable"
            f" {escape('[filters.conformance]')} judge or restrict plan.modes"
        )
    for path in config.seeds:  # before the model starts: a typo should cost no time
        if not Path(path).is_file():
            raise ConfigError(f"seeds file {path} {'is a directory' if Path(path).is_dir() else 'does not exist'}")
    blocker = file_in_the_way(Path(config.output))
    if blocker is not None:
        raise ConfigError(
            f"--output {config.output} cannot be made: {blocker} is a file, not a folder; give a folder for the"
            " campaign's results"
        )
    try:
        models = open_models(config.agent, config.guide, warm=warm)
        with models as resolved, _progress() as progress:
            if models.warmed_seconds is not None:
                out.print(f"warmed the embedded model's prompt cache in {models.warmed_seconds:.0f}s")
            bar = progress.add_task(progress_label, total=None, status="starting")
            arms = [0]
            line = ProgressLine(
                total=0, every=0 if console.is_terminal else 10.0
            )  # a log gets plain lines, a terminal the bar

            def on_progress(event: str, spec: object, summary: CampaignSummary) -> None:
                if event == "plan":
                    progress.update(
                        bar, total=summary.planned, completed=summary.skipped, status=f"{summary.skipped} already done"
                    )
                    line.total = summary.planned
                    line.update(summary.skipped, 0)
                    if line.every:
                        console.print(f"{progress_label}: {summary.planned} planned, {summary.skipped} already done")
                    return
                if event in ("arms", "arm"):  # the decisiveness check's original arms, before the attempts
                    arms[0] += event == "arm"
                    status = f"original arms (the seeds' own steps continued live): {arms[0]} done"
                    progress.update(bar, status=status)
                    if event == "arm" and line.due():
                        console.print(f"{progress_label}: {status}")
                    return
                outcome = f"kept {summary.kept} · rejected {summary.rejected} · failed {summary.failed}"
                progress.update(bar, advance=1, status=outcome)
                status = line.update(summary.skipped, summary.kept + summary.rejected + summary.failed, outcome)
                if line.due():
                    console.print(f"{progress_label}: {status}")

            summary = run_campaign(config, resolved, on_progress=on_progress, force=force, retry_failed=retry_failed)
    except KeyboardInterrupt:
        console.print(
            "[yellow]interrupted:[/] attempts in flight went back to the queue; rerun the same command to resume"
            f" ({config.output})"
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)  # worker threads may still be inside an abandoned attempt; nothing of theirs is written
    _print_summary(summary)
    if summary.breaker:
        console.print(
            f"[red]stopped:[/] {summary.failed} attempts in a row failed for infrastructure reasons; last error:"
            f" {escape(summary.breaker)}. Fix the endpoint and rerun the same command: those attempts are retried."
        )
        raise typer.Exit(3)
    if summary.attempts and summary.failed == summary.attempts:
        console.print(
            f"[red]every attempt of this run failed[/] ({escape(why_nothing_kept(summary))}); see"
            f" {config.output}/failed.jsonl"
        )
        if deadline_hint and "AttemptDeadlineExceeded" in summary.failed_by:
            console.print(f"[yellow]{escape(deadline_hint)}[/]")
        raise typer.Exit(1)
    return summary


def _print_summary(summary: CampaignSummary) -> None:
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
    if summary.arms:
        a = summary.arms
        table.add_row(
            "decisiveness: original arms run / reused",
            f"{a.get('run_now', 0)} / {a.get('reused', 0)} of {a.get('points', 0)} point(s)",
        )
        table.add_row(
            "  their live model calls (one arm per attempt instead)",
            f"{a.get('live_calls', 0)} ({a.get('live_calls_one_per_attempt', 0)})",
        )
        table.add_row("  points where the seed's own step also failed", str(a.get("failed_points", 0)))
    if summary.totals:
        table.add_row(
            "campaign totals: kept / rejected / failed",
            f"{summary.totals.get('done', 0)} / {summary.totals.get('rejected', 0)} /"
            f" {summary.totals.get('failed', 0)}",
        )
    out.print(table)
    _print_kept_by_agent_and_family(summary.output / "gold.jsonl")
    for line in summary.bad_seeds:
        console.print(f"[yellow]seed skipped:[/] {escape(line)}")
    for line in summary.non_decisive[:20]:
        console.print(f"[yellow]not decisive:[/] {escape(line)}")
    if len(summary.non_decisive) > 20:
        console.print(
            f"[yellow]not decisive:[/] ... and {len(summary.non_decisive) - 20} more point(s); see manifest.json"
        )
    o = summary.output
    out.print(
        f"{summary.kept} kept, {summary.rejected} rejected, {summary.failed} failed of {summary.attempts} attempts this"
        f" run ({summary.skipped} of {summary.planned} planned were already done)"
    )
    out.print(
        f"gold:     {o / 'gold.jsonl'}\nrejected: {o / 'rejected.jsonl'}\nfailed:   {o / 'failed.jsonl'}\nmanifest:"
        f" {o / 'manifest.json'}\nledger:   {o / 'ledger.sqlite'}"
    )


def kept_breakdown(gold_path: Path) -> dict[str, Counter[str]]:
    """Counts of the gold records in ``gold_path``: by decisive agent (with its role), by error family,
    and by whether the seed had one agent or several."""
    from failforge.trajectory import iter_jsonl

    counts: dict[str, Counter[str]] = {"agent": Counter(), "family": Counter(), "seed": Counter()}
    if not gold_path.exists():
        return counts
    for record in iter_jsonl(gold_path):
        if isinstance(record, Exception) or record.label is None:
            continue
        profile = record.profile(record.label.decisive_agent)
        counts["agent"][f"{record.label.decisive_agent} ({profile.role if profile else '?'})"] += 1
        counts["family"][record.label.mode_family] += 1
        counts["seed"]["multi-agent seeds" if len(record.agents) > 1 else "single-agent seeds"] += 1
    return counts


def _print_kept_by_agent_and_family(gold_path: Path) -> None:
    counts = kept_breakdown(gold_path)
    if not sum(counts["family"].values()):
        return
    table = Table(title="kept (gold) records")
    table.add_column("by")
    table.add_column("value")
    table.add_column("kept", justify="right")
    for by, title in (("agent", "decisive agent"), ("family", "error family"), ("seed", "from")):
        for value, count in sorted(counts[by].items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(title, value, str(count))
    out.print(table)


@app.command()
def generate(
    campaign: Annotated[Optional[Path], typer.Argument(help="campaign TOML file (flags below override it)")] = None,
    seeds: Annotated[Optional[list[Path]], typer.Option("--seeds", help="seed JSONL file(s)")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o")] = None,
    base_url: Annotated[
        Optional[str], typer.Option(help="agent model endpoint (default: embedded local model)")
    ] = None,
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
    executor: Annotated[
        Optional[str],
        typer.Option(help="local (thread pool), process (worker processes, for CPU-bound environments) or ray"),
    ] = None,
    ray_address: Annotated[
        Optional[str], typer.Option(help="Ray cluster address (default: a local Ray instance)")
    ] = None,
    attempt_deadline: Annotated[Optional[float], typer.Option(help="seconds one attempt may take")] = None,
    guide_kind: Annotated[
        Optional[str],
        typer.Option(
            help=(
                "who writes steering notes: auto (rules where a mode has them, the guide model otherwise; the default),"
                " rules, or model"
            )
        ),
    ] = None,
    decisiveness: Annotated[
        Optional[bool],
        typer.Option(
            help=(
                "the decisiveness check (on by default: the seed's own step continued live must still succeed);"
                " --no-decisiveness marks every record 'not checked'"
            )
        ),
    ] = None,
    agent_cmd: Annotated[
        Optional[str],
        typer.Option(
            help="seeds of --harness external: run this agent command instead of the recorded one (shell-quoted)"
        ),
    ] = None,
    force: Annotated[bool, typer.Option(help="continue in an output folder that holds a different campaign")] = False,
    retry_failed: Annotated[
        bool,
        typer.Option(
            help="retry every failed attempt (drift, errors, given-up interruptions), not only infrastructure failures"
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(help="print the planned attempts and why seeds and steps were not planned; run and write nothing"),
    ] = False,
) -> None:
    """Branch seeds into gold failures: plan, inject, continue, evaluate, filter. Resumes if OUTPUT exists.

    Exit status: 0 when the run finished and not every attempt failed; 1 when every attempt of this run
    failed; 2 on bad input; 3 when the circuit breaker stopped a run whose endpoint is down; 130 when
    interrupted (rerun to resume).
    """
    from failforge.campaign import CampaignConfig, load_campaign

    data = load_campaign(campaign).model_dump(mode="json") if campaign else {}
    if seeds:
        data["seeds"] = [str(p) for p in seeds]
    if output:
        data["output"] = str(output)
    data.setdefault("output", "failforge-out")
    if "seeds" not in data:
        raise ConfigError("give a campaign file or --seeds")
    agent = _endpoint(base_url, model, api_key_env)
    if agent:
        data["agent"] = agent.model_dump()
    guide = _endpoint(guide_base_url, guide_model, api_key_env)
    if guide:
        data["guide"] = guide.model_dump()
    plan = data.setdefault("plan", {})
    value: object
    for key, value in (
        ("modes", mode),
        ("steps_per_seed", steps_per_seed),
        ("modes_per_step", modes_per_step),
        ("samples", samples),
        ("rng_seed", rng_seed),
        ("max_seeds", max_seeds),
    ):
        if value is not None:
            plan[key] = value
    for key, value in (
        ("concurrency", concurrency),
        ("executor", executor),
        ("ray_address", ray_address),
        ("attempt_deadline", attempt_deadline),
        ("agent_cmd", agent_cmd),
    ):
        if value is not None:
            data[key] = value
    if decisiveness is not None:
        data.setdefault("filters", {}).setdefault("decisiveness", {})["enabled"] = decisiveness
    if guide_kind is not None:
        data["guide_kind"] = guide_kind
    try:
        config = CampaignConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"campaign: field '{'.'.join(str(p) for p in first['loc'])}': {first['msg']}") from exc
    if dry_run:
        _dry_run(config)
        return
    _run_generate(config, force=force, retry_failed=retry_failed)


def _dry_run(config: CampaignConfig) -> None:
    """The plan ``generate`` would make, one line per attempt, and every seed or step left out with why."""
    from failforge.campaign import CampaignSummary, plan_campaign, select_seeds

    summary = CampaignSummary(output=Path(config.output))
    seeds = select_seeds(config, summary)
    plan, not_planned = plan_campaign(config, seeds)
    for line in summary.bad_seeds:
        out.print(f"seed skipped: {escape(line)}")
    for line in not_planned:
        out.print(f"not planned: {escape(line)}")
    kinds = Counter(spec.mode for _, spec in plan)
    for _, spec in plan:
        out.print(f"planned: {escape(spec.attempt_id)}")
    out.print(
        f"{len(plan)} attempt(s) over {len(seeds)} seed(s): "
        + ", ".join(f"{mode} {n}" for mode, n in sorted(kinds.items()))
    )


def _first_request(seed_path: Path) -> dict[str, object] | None:
    """The first model request recorded in the first seed of ``seed_path`` (None: there is none)."""
    from failforge.jsonl import read_jsonl

    first = next((item[1] for item in read_jsonl(seed_path) if not isinstance(item, Exception)), None)
    calls = [s.get("model_call") for s in (first or {}).get("steps", []) if s.get("model_call")]
    return dict(calls[0]["request"]) if calls else None


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", "-o")] = Path("failforge-demo"),
    seeds: Annotated[
        Optional[Path],
        typer.Option(help="seed JSONL (default: bundled AgentDojo oracle seeds, single- and multi-agent)"),
    ] = None,
    environment_name: Annotated[
        Optional[str],
        typer.Option(
            "--environment",
            "-e",
            help="another environment's demo instead: its oracle seeds of a few quick tasks (see `failforge plugins`)",
        ),
    ] = None,
    browser: Annotated[
        bool,
        typer.Option(
            "--browser",
            help="the browser part: MiniWoB++ demonstrations in headless Chromium (same as --environment miniwob)",
        ),
    ] = False,
    fresh: Annotated[bool, typer.Option(help="delete OUTPUT first instead of resuming")] = True,
) -> None:
    """The main job on embedded defaults: bundled AgentDojo oracle seeds (single-agent, orchestrator-workers
    and plan-execute-verify), the local model as guide and as every agent.

    With --environment NAME (or --browser for MiniWoB++): records that environment's oracle seeds of the
    few tasks it names for a demo (its ``demo`` hook; MiniWoB's pages cached in OUTPUT/http-cache), then
    branches them the same way.
    """
    import shutil

    from failforge.campaign import CampaignConfig

    if browser and environment_name not in (None, "miniwob"):
        raise ConfigError(
            f"--browser is --environment miniwob; it cannot be combined with --environment {environment_name}"
        )
    env_name = "miniwob" if browser else environment_name
    if fresh and output.exists():
        shutil.rmtree(output)
    started = time.perf_counter()
    seed_path = seeds or (bundled_seeds_path() if env_name else _demo_seeds(output))
    if env_name and seeds is None:
        from failforge.environments import environment
        from failforge.seeds import oracle_seed
        from failforge.trajectory import write_jsonl

        output.mkdir(parents=True, exist_ok=True)
        seed_path = output / f"{env_name}_seeds.jsonl"
        if not seed_path.exists():
            plugin = environment(env_name)
            tasks, options = plugin.demo(output)
            made = [oracle_seed(env_name, task, options, harness_config=plugin.demo_harness()) for task in tasks]
            write_jsonl(seed_path, made)
            out.print(f"recorded {len(made)} {env_name} oracle seeds in {seed_path}")
    # Without a judge, a semantic-mode candidate can only be rejected as unverified (the 135M model is
    # no judge): the demo plans the structural modes, which rules write notes for and rules verify.
    from failforge.campaign import PlanConfig
    from failforge.judgement import STRUCTURAL_MODES

    config = CampaignConfig(
        seeds=[str(seed_path)], output=str(output), guide_kind="auto", plan=PlanConfig(modes=list(STRUCTURAL_MODES))
    )
    if env_name:  # another environment's demo: sized to end within about five minutes on two busy cores
        config.plan = PlanConfig(
            modes=list(STRUCTURAL_MODES), max_seeds=ENV_DEMO_SEEDS, steps_per_seed=1, modes_per_step=2
        )
        config.attempt_deadline = ENV_DEMO_ATTEMPT_SECONDS
    hint = (
        ""
        if not env_name
        else (
            f"An attempt (the seed's own step continued live, or a changed one) did not end within the demo's"
            f" {config.attempt_deadline:.0f} s: every live call carries the environment's real prompt, which the"
            f" embedded model evaluates slowly on a busy machine. `failforge generate --seeds {seed_path}"
            f" -o {output}-long --attempt-deadline 900 --max-seeds 1 --steps-per-seed 1 --modes-per-step 2 "
            + " ".join(f"--mode {code}" for code in STRUCTURAL_MODES)
            + "` gives it longer."
        )
    )
    if env_name:
        # the agent's long fixed prompt (smolagents' CodeAgent system prompt) evaluated once before the attempts,
        # not inside the first attempt's deadline, where a cold evaluation on a busy machine used all of it
        summary = _run_generate(
            config, f"{env_name} demo attempts", warm=_first_request(Path(seed_path)), deadline_hint=hint
        )
    else:
        summary = _run_generate(config, "demo attempts")
    out.print(f"demo finished in {time.perf_counter() - started:.0f}s")
    if summary.kept == 0:
        cause = nothing_kept_cause(summary)
        console.print(
            f"[yellow]no gold record this time: {escape(why_nothing_kept(summary))}. {cause}; rerun with --no-fresh"
            " to add attempts or use a stronger model via `failforge generate` (docs/OWN_MODEL.md)[/]"
        )
