"""``failforge seeds ENV`` and ``failforge record ENV``: one subcommand per registered environment.

Both are generated from the environment registry and each plugin's ``Options`` model, so adding an
environment plugin adds its commands. ``seeds`` records the environment's oracle (no model needed);
``record`` records a model (the embedded one, or any endpoint by ``--base-url``) and keeps only runs the
benchmark's evaluator judged successful. Both take ``--harness``: a multi-agent harness
(``orchestrator-workers``, ``plan-execute-verify``) is set up for the environment's tool split, and
``seeds`` then records its team oracle.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from failforge.cli._app import _endpoint, _progress, app, console, out, seeds_app
from failforge.cli._options import SpreadTasks, given_options, option_parameters, with_signature
from failforge.errors import ConfigError, FailforgeError
from failforge.jsonl import read_json
from failforge.plugins import PluginInfo, environments, harnesses

record_app = typer.Typer(
    help="Record model-generated seeds in an environment; only evaluator successes are kept.", no_args_is_help=True
)
app.add_typer(record_app, name="record")


def select_tasks(all_tasks: list[str], wanted: list[str] | None) -> list[str]:
    """``--task`` values matched against the environment's task ids: the full id, or its last part
    (``user_task_3`` matches ``banking/user_task_3`` in every chosen suite). Unknown ids are an error."""
    if not wanted:
        return all_tasks
    chosen: list[str] = []
    for want in wanted:
        hits = [t for t in all_tasks if t == want or t.rsplit("/", 1)[-1] == want]
        if not hits:
            sample = ", ".join(all_tasks[:5]) + (", ..." if len(all_tasks) > 5 else "")
            raise ConfigError(f"no task {want!r} here; task ids look like: {sample}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def external_harness(kwargs: dict[str, Any], *, team_oracle: bool = False) -> Any:
    """The external harness the options describe (``--harness external --agent-cmd ...``), or None.

    ``team_oracle``: the seeds are the environment's oracle, which plays a single agent only."""
    name = kwargs.get("harness")
    command = kwargs.get("agent_cmd")
    if name is None or harnesses.canonical(name) != "external":
        if command is not None:
            raise ConfigError("--agent-cmd goes with --harness external")
        return None
    if not command:
        raise ConfigError("--harness external needs the agent's command: --agent-cmd 'python my_team.py'")
    from failforge.harnesses.external import ExternalAgent
    from failforge.roster import AgentProfile

    roster: list[AgentProfile] = []
    if kwargs.get("roster") is not None:
        path: Path = kwargs["roster"]
        try:
            data = read_json(path)
            roster = [AgentProfile.model_validate(entry) for entry in data]
        except (FailforgeError, ValueError, TypeError) as exc:
            raise ConfigError(
                f"--roster {path}: expected a JSON list of agents ({{name, role, tools, reports_to, handoffs}}):"
                f" {str(exc).splitlines()[0]}"
            ) from None
    if team_oracle and len(roster) > 1:
        raise ConfigError(
            "the environment's oracle plays one agent; record a team's seeds with `failforge record ... --harness"
            " external --base-url <team policy>`"
        )
    return ExternalAgent.for_command(command, framework=kwargs.get("framework"), roster=roster)


def _external_parameters() -> list[inspect.Parameter]:
    kw = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter(
            "agent_cmd",
            kw,
            default=None,
            annotation=Annotated[
                Optional[str],
                typer.Option(help="--harness external: the agent's command, run once per episode (shell-quoted)"),
            ],
        ),
        inspect.Parameter(
            "framework",
            kw,
            default=None,
            annotation=Annotated[
                Optional[str],
                typer.Option(
                    help=(
                        "--harness external: the framework's distribution name, or NAME==VERSION (recorded in the"
                        " seeds)"
                    )
                ),
            ],
        ),
        inspect.Parameter(
            "roster",
            kw,
            default=None,
            annotation=Annotated[
                Optional[Path],
                typer.Option(
                    help="--harness external: a JSON file listing the agents (name, role, tools, reports_to, handoffs)"
                ),
            ],
        ),
    ]


def _seeds_command(info: PluginInfo[Any]) -> Any:
    env = info.name
    options_model = info.obj.Options

    def command(**kwargs: Any) -> None:
        from failforge.seeds import env_spec, environment_options, oracle_seed

        options = environment_options(env, given_options(options_model, kwargs))
        harness = kwargs.get("harness")
        external = external_harness(kwargs, team_oracle=True)
        if harness is not None:
            harness = harnesses.canonical(harness)
            if env not in harnesses.info(harness).meta.get("environments", (env,)):
                raise ConfigError(f"--harness {harness!r} does not run in {env}")
        tasks = select_tasks(info.obj().tasks(options), kwargs.get("task"))
        if (
            harness is not None
            and harnesses.get(harness).splits_tools
            and tasks
            and info.obj().tool_domains(env_spec(env, tasks[0], options)) is None
        ):
            raise ConfigError(
                f"--harness {harness!r} splits the tools among its agents, but {env} does not say how to split them (no"
                " tool_domains)"
            )
        suffix = f"_{harness}" if harness else ""
        output: Path = kwargs.get("output") or Path(f"{env}{suffix}_oracle_seeds.jsonl")
        label = f"{env} oracle seeds" + (f" ({harness})" if harness else "")
        _write_seeds(
            output,
            label,
            tasks,
            lambda task: oracle_seed(env, task, options, model=kwargs["model"], harness=external or harness),
        )

    params = [
        inspect.Parameter(
            "harness",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                Optional[str],
                typer.Option(
                    help=(
                        "record through this harness (e.g. orchestrator-workers, plan-execute-verify; default: the"
                        " environment's)"
                    )
                ),
            ],
        ),
        inspect.Parameter(
            "output",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[Optional[Path], typer.Option("--output", "-o", help="JSONL file to write")],
        ),
        inspect.Parameter(
            "task",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                Optional[list[str]],
                typer.Option(help="task id(s), several after one flag or one per flag (default: every task)"),
            ],
        ),
        inspect.Parameter(
            "model",
            inspect.Parameter.KEYWORD_ONLY,
            default="smollm2-135m-instruct",
            annotation=Annotated[
                str, typer.Option(help="model name the seeds are recorded for (the agent that will branch them)")
            ],
        ),
        *_external_parameters(),
        *option_parameters(options_model),
    ]
    command.__doc__ = (
        f"Oracle seeds of {env}: {info.description}. The environment's oracle plays the model (no model needed)."
    )
    return with_signature(command, params)


def _write_seeds(output: Path, label: str, items: list[str], make: Any) -> None:
    """Record one seed per item; keep evaluator successes, report the rest (a bad item never stops the run)."""
    from failforge.trajectory import write_jsonl

    if output.is_dir():
        raise ConfigError(f"--output {output} is a directory; give a JSONL file path")
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
                    failed.append(f"{item}: the oracle's run did not pass the evaluator")
            progress.update(bar, advance=1, status=item)
    write_jsonl(output, made)
    out.print(f"wrote {len(made)} {label} to {output} ({len(failed)} failed)")
    for line in failed:
        console.print(f"[yellow]skipped[/] {escape(line)}")
    if not made:
        raise typer.Exit(1)


def _record_command(info: PluginInfo[Any]) -> Any:
    env = info.name
    options_model = info.obj.Options
    usable = [h.name for h in harnesses if env in h.meta.get("environments", (env,))]
    aliases = [a for h in harnesses if h.name in usable for a in h.aliases]

    def command(**kwargs: Any) -> None:
        from failforge.campaign import Models, open_models
        from failforge.secrets import Redactor
        from failforge.seeds import env_spec, environment_options, harness_for, record
        from failforge.trajectory import append_jsonl

        options = environment_options(env, given_options(options_model, kwargs))
        plugin = info.obj()
        tasks = select_tasks(plugin.tasks(options), kwargs["task"])
        harness_name = kwargs["harness"]
        if harness_name is not None and harnesses.canonical(harness_name) not in usable:
            raise ConfigError(f"--harness {harness_name!r} does not run in {env}; usable here: {', '.join(usable)}")
        external = external_harness(kwargs)
        output: Path = kwargs["output"]
        kept = failed = 0
        endpoint = _endpoint(kwargs["base_url"], kwargs["model"], kwargs["api_key_env"])
        # what an upstream echoes (the key quoted in a completion) never reaches a record
        redactor = Redactor.for_run([kwargs["api_key_env"]], [kwargs["base_url"]] if kwargs["base_url"] else [])
        with open_models(endpoint, None) as resolved:
            models = Models(resolved)
            for task_id in tasks:
                try:
                    spec = env_spec(env, task_id, options)
                    harness = external or harness_for(harness_name, spec)
                    traj = record(env_spec=spec, harness=harness, model=models.agent_spec, upstream=models.agent())
                except FailforgeError as exc:
                    console.print(f"[red]{escape(task_id)}: {escape(str(exc))}[/]")
                    failed += 1
                    continue
                ok = bool(traj.outcome and traj.outcome.success)
                if ok:
                    append_jsonl(output, [traj], redact=redactor.text)
                    kept += 1
                else:
                    failed += 1
                    if kwargs["keep_failures"]:
                        append_jsonl(output.with_suffix(".failures.jsonl"), [traj], redact=redactor.text)
                out.print(f"{task_id}: {'success' if ok else 'failed'} in {len(traj.steps)} steps")
        out.print(f"kept {kept} successful seed(s) in {output}; {failed} run(s) did not succeed")
        if kept == 0 and not kwargs["keep_failures"]:
            raise typer.Exit(1)

    kw = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter(
            "task",
            kw,
            default=None,
            annotation=Annotated[
                Optional[list[str]],
                typer.Option(
                    help=(
                        "task id(s) to record, several after one flag or one per flag (default: every task the options"
                        " select, e.g. a --suite)"
                    )
                ),
            ],
        ),
        inspect.Parameter(
            "output",
            kw,
            default=Path("recorded_seeds.jsonl"),
            annotation=Annotated[Path, typer.Option("--output", "-o")],
        ),
        inspect.Parameter(
            "base_url",
            kw,
            default=None,
            annotation=Annotated[
                Optional[str], typer.Option(help="OpenAI-compatible endpoint (default: embedded local model)")
            ],
        ),
        inspect.Parameter(
            "model",
            kw,
            default=None,
            annotation=Annotated[Optional[str], typer.Option(help="model name at --base-url")],
        ),
        inspect.Parameter(
            "api_key_env",
            kw,
            default="OPENAI_API_KEY",
            annotation=Annotated[Optional[str], typer.Option(help="environment variable holding the API key")],
        ),
        inspect.Parameter(
            "harness",
            kw,
            default=None,
            annotation=Annotated[
                Optional[str], typer.Option(help=f"harness: {', '.join(usable + aliases)} (default: the environment's)")
            ],
        ),
        inspect.Parameter(
            "keep_failures",
            kw,
            default=False,
            annotation=Annotated[
                bool, typer.Option(help="also write runs the evaluator judged failed (to OUTPUT.failures.jsonl)")
            ],
        ),
        *_external_parameters(),
        *option_parameters(options_model),
    ]
    command.__doc__ = f"Record model seeds in {env}: {info.description}."
    return with_signature(command, params)


for _info in environments:
    seeds_app.command(_info.name, cls=SpreadTasks)(_seeds_command(_info))
    record_app.command(_info.name, cls=SpreadTasks)(_record_command(_info))
