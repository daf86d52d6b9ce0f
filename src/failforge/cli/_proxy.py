"""``failforge proxy``: serve the record/replay/branch proxy on loopback until interrupted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from failforge.cli._app import app, out


@app.command()
def proxy(
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port on loopback (0: any free port)")] = 8765,
    host: Annotated[str, typer.Option("--host", help="loopback address to bind (127.0.0.1, ::1, localhost)")] = "127.0.0.1",
    upstream: Annotated[Optional[str], typer.Option("--upstream", help="OpenAI-compatible base URL that record and branch runs forward to")] = None,
    api_key_env: Annotated[Optional[str], typer.Option("--api-key-env", help="environment variable holding the upstream's key (never stored)")] = "OPENAI_API_KEY",
    model: Annotated[Optional[str], typer.Option("--model", help="model name sent upstream (default: the request's)")] = None,
    seeds: Annotated[Optional[list[Path]], typer.Option("--seeds", help="seed file(s) that replay and branch runs name by seed_id")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="append every finished run's trajectory to this JSONL file")] = None,
    max_body_mb: Annotated[float, typer.Option("--max-body-mb", help="largest request body accepted")] = 8.0,
) -> None:
    """An OpenAI-compatible proxy on loopback: record, replay and branch runs of any framework in any process."""
    from failforge.errors import ConfigError
    from failforge.llm import HttpUpstream
    from failforge.proxy import Proxy, ProxyServer
    from failforge.trajectory import Trajectory, append_jsonl, load_jsonl

    loaded: list[Trajectory] = []
    for path in seeds or ():
        good, bad = load_jsonl(path)
        if bad:
            raise ConfigError(str(bad[0]))
        loaded.extend(good)
    live = HttpUpstream(upstream, api_key_env=api_key_env, model=model) if upstream else None
    the_proxy = Proxy(upstream=live, seeds=loaded, max_body=int(max_body_mb * 1024 * 1024))
    server = ProxyServer(the_proxy, host=host, port=port)
    out.print(f"failforge proxy on {server.base_url} ({len(loaded)} seeds; upstream: {live.name if live else 'none (replay only)'}); Ctrl-C stops it")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.__exit__(None, None, None)
        if output is not None and the_proxy.finished:
            append_jsonl(output, [Trajectory.model_validate(r["trajectory"]) for r in the_proxy.finished])
            out.print(f"{len(the_proxy.finished)} finished runs appended to {output}")
