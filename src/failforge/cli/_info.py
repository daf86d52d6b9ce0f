"""``failforge version``, ``taxonomy``, ``plugins`` and ``doctor``: what this installation has and can do."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from failforge import __version__
from failforge.cli._app import app, out
from failforge.errors import FailforgeError


@app.command()
def version() -> None:
    """Print the failforge version."""
    out.print(__version__)


@app.command()
def taxonomy() -> None:
    """Print the 18 error modes with where each applies."""
    from failforge.taxonomy import taxonomy_table

    out.print(taxonomy_table())


@app.command()
def plugins() -> None:
    """List every registered plugin (environments, harnesses, filters, exporters, ...) and broken ones."""
    from failforge.plugins import REGISTRIES

    table = Table(title="failforge plugins")
    for col in ("kind", "name", "aliases", "from", "description"):
        table.add_column(col)
    for registry in REGISTRIES.values():
        for info in registry:
            table.add_row(registry.kind, info.name, ", ".join(info.aliases), info.module, info.description)
        for broken in registry.broken:
            table.add_row(
                registry.kind, f"[red]{broken.source}[/]", "", "entry point", f"[red]failed to load: {broken.error}[/]"
            )
    out.print(table)


@app.command()
def doctor(
    base_url: Annotated[
        Optional[str],
        typer.Option("--base-url", help="preflight this OpenAI-compatible endpoint instead (with --model)"),
    ] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="the endpoint's model name (with --base-url)")] = None,
    api_key_env: Annotated[
        Optional[str], typer.Option("--api-key-env", help="variable holding the endpoint's key (never stored or shown)")
    ] = "OPENAI_API_KEY",
    timeout: Annotated[float, typer.Option("--timeout", help="seconds one endpoint call may take")] = 180.0,
    skip_context: Annotated[
        bool, typer.Option("--skip-context", help="skip the endpoint's context-length check (up to ~15k tokens)")
    ] = False,
) -> None:
    """Which environments, sandbox backends and the model runtime work on this machine, and why not; with
    --base-url and --model, a preflight of that endpoint (chat, tool calls, streaming, structured output,
    repeatability, context, latency), exit 1 when a campaign cannot run on it."""
    if base_url is not None or model is not None:
        from failforge.cli._doctor import endpoint_doctor

        if base_url is None or model is None:
            raise typer.BadParameter("an endpoint preflight needs both --base-url and --model")
        endpoint_doctor(base_url, model, api_key_env, timeout, skip_context)
        return
    import importlib.util

    from failforge.plugins import REGISTRIES, environments

    table = Table(title="failforge doctor")
    for col in ("part", "works", "why"):
        table.add_column(col)
    for info in environments:
        try:
            works, why = info.obj().doctor()
        except Exception as exc:  # the doctor must report, never crash
            works, why = False, f"{type(exc).__name__}: {exc}"
        table.add_row(f"environment: {info.name}", "yes" if works else "NO", why)
    try:
        from failforge.environments.sandbox import sandbox_doctor

        for row in sandbox_doctor():
            table.add_row(f"sandbox: {row.backend}", "yes" if row.works else "NO", row.why)
    except Exception as exc:  # the doctor must report, never crash
        table.add_row("sandbox", "NO", f"{type(exc).__name__}: {exc}")
    try:
        from failforge.llm import LOCAL_N_CTX, default_threads, local_model_path

        model_ok = bool(importlib.util.find_spec("llama_cpp")) and local_model_path().exists()
        why = (
            f"{local_model_path()}; its server runs with a context of {LOCAL_N_CTX:,} tokens (--n_ctx) on"
            f" {default_threads()} thread(s)"
            if model_ok
            else "llama-cpp-python missing: bash scripts/install.sh"
        )
    except FailforgeError as exc:
        model_ok, why = False, str(exc)
    table.add_row("local model", "yes" if model_ok else "NO", why)
    for registry in REGISTRIES.values():
        for broken in registry.broken:
            table.add_row(f"{registry.kind} plugin {broken.source}", "NO", broken.error)
    out.print(table)
