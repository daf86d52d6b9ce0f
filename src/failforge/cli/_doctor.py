"""``failforge doctor``: preflight an OpenAI-compatible endpoint (what works, what each failure disables)."""

from __future__ import annotations

import typer
from rich.table import Table

from failforge.cli._app import out


def endpoint_doctor(base_url: str, model: str, api_key_env: str | None, timeout: float, skip_context: bool) -> None:
    """Preflight an endpoint: chat, tool calls (one, several in a reply), streaming, structured output,
    repeatability at temperature 0, context length and latency. Exit 1 when a campaign cannot run on it."""
    from failforge.llm import ModelEndpoint, campaign_ready, diagnose
    from failforge.secrets import strip_userinfo

    endpoint = ModelEndpoint(base_url=base_url, model=model, api_key_env=api_key_env, timeout=timeout, max_attempts=1)
    checks = diagnose(endpoint, context=not skip_context)
    table = Table(title=f"failforge doctor: {strip_userinfo(base_url)} model {model}")
    for column in ("check", "result", "seconds", "detail", "if it fails, this is disabled"):
        table.add_column(column, overflow="fold")
    for check in checks:
        mark = "[green]works[/]" if check.ok else ("[red]FAILS (required)[/]" if check.required else "[yellow]fails[/]")
        table.add_row(check.name, mark, f"{check.seconds:.1f}", check.detail, check.disables or "-")
    out.print(table)
    if not campaign_ready(checks):
        out.print("[red]a campaign cannot run on this endpoint[/]: it needs chat and tool calls")
        raise typer.Exit(1)
    failed = [c.name for c in checks if not c.ok]
    out.print("a campaign can run on this endpoint" + (f"; narrowed by: {', '.join(failed)}" if failed else ""))
