"""``failforge proxy``: serve the run API and model routes on loopback until interrupted."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from failforge.cli._app import app, out


@app.command()
def proxy(
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port on loopback (0: any free port)")] = 8765,
    host: Annotated[
        str, typer.Option("--host", help="loopback address to bind (127.0.0.1, ::1, localhost)")
    ] = "127.0.0.1",
    upstream: Annotated[
        Optional[str],
        typer.Option("--upstream", help="OpenAI-compatible base URL that record and branch runs forward to"),
    ] = None,
    api_key_env: Annotated[
        Optional[str],
        typer.Option("--api-key-env", help="environment variable holding the upstream's key (never stored)"),
    ] = "OPENAI_API_KEY",
    model: Annotated[
        Optional[str], typer.Option("--model", help="model name sent upstream (default: the request's)")
    ] = None,
    seeds: Annotated[
        Optional[list[Path]], typer.Option("--seeds", help="seed file(s) that replay and branch runs name by seed_id")
    ] = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="append each finished run here the moment it finishes (failed runs: OUTPUT.failed.jsonl)",
        ),
    ] = None,
    max_body_mb: Annotated[float, typer.Option("--max-body-mb", help="largest request body accepted")] = 8.0,
) -> None:
    """An OpenAI-compatible proxy on loopback: record, replay and branch runs of any framework in any process."""
    from failforge.errors import ConfigError
    from failforge.llm import HttpUpstream
    from failforge.proxy import Proxy, ProxyServer, failed_path
    from failforge.secrets import Redactor
    from failforge.trajectory import Trajectory, load_jsonl

    loaded: list[Trajectory] = []
    for path in seeds or ():
        good, bad = load_jsonl(path)
        if bad:
            raise ConfigError(str(bad[0]))
        loaded.extend(good)
    if output is not None and output.is_dir():
        raise ConfigError(f"--output {output} is a directory; give a JSONL file path")
    live = HttpUpstream(upstream, api_key_env=api_key_env, model=model) if upstream else None
    redactor = Redactor.for_run([api_key_env], [upstream] if upstream else [])
    the_proxy = Proxy(
        upstream=live, seeds=loaded, max_body=int(max_body_mb * 1024 * 1024), output=output, redactor=redactor
    )
    for problem in the_proxy.store.problems:
        out.print(f"[yellow]skipped a malformed earlier run[/] {problem}")
    server = ProxyServer(the_proxy, host=host, port=port)
    signal.signal(signal.SIGTERM, _interrupt)  # stop as on Ctrl-C: the server closes; finished runs are already on disk
    try:
        with server:
            where = (
                f"; finished runs go to {output} (failed: {failed_path(output)})"
                if output is not None
                else "; finished runs are kept in memory only (no --output)"
            )
            known = len(the_proxy.store.trajectories)
            out.print(
                f"failforge proxy on {server.base_url} ({len(loaded)} seeds, {known} earlier runs; upstream:"
                f" {live.name if live else 'none (replay only)'}){where}; Ctrl-C stops it"
            )
            the_proxy.gateway.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            live.close()
    out.print(f"{len(the_proxy.finished)} runs finished")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
