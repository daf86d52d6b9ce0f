"""The run gateway: one ASGI app (Starlette) serving every open run's model routes and tool server.

Routes (``{run}`` is a run id the gateway was given with :meth:`Gateway.add`):

- ``POST /runs/{run}/agents/{agent}/v1/chat/completions``: a model call of ``agent`` (a per-agent base URL)
- ``POST /runs/{run}/v1/chat/completions``: a model call naming its agent by the ``X-Failforge-Agent``
  header (or the run's only agent); ``POST /v1/chat/completions`` with ``X-Failforge-Run`` as well
- ``/runs/{run}/mcp``: the run's tools, an MCP server over streamable HTTP (:mod:`failforge.gateway._mcp`)
- ``GET /healthz``

Every model call is answered by the run's :class:`~failforge.llm.ModelBoundary` in a worker thread (a
live call blocks), ``stream=True`` as server-sent events. Errors are OpenAI-style JSON
(``{"error": {"message", "type", "code", "param"}}``) with ``x-should-retry: false``: an unknown run or
route is a 404, a body over the limit a 413, another content type a 415, and nothing is recorded from a
refused request. The proxy adds its run API on the same app (:mod:`failforge.proxy`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from failforge.gateway._mcp import RUN_SCOPE_KEY, mcp_server, session_manager
from failforge.gateway._run import ServedRun
from failforge.gateway._server import LoopbackServer
from failforge.llm import Reply

RUN_HEADER = "X-Failforge-Run"
DEFAULT_MAX_BODY = 8 * 1024 * 1024


class HTTPRefusal(Exception):
    """A request refused at the HTTP level: status, error code and a message saying what was expected."""

    def __init__(self, status: int, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_reply(status: int, message: str, code: str, kind: str = "invalid_request_error", **extra: Any) -> Reply:
    payload = {"error": {"message": message, "type": kind, "code": code, "param": None, **extra}}
    return Reply(status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(payload).encode())


def json_reply(payload: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, json.dumps(payload).encode())


def response_of(reply: Reply) -> Response:
    headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
    return Response(reply.content, status_code=reply.status, headers=headers, media_type=reply.headers.get("content-type"))


async def read_body(request: Request, max_body: int) -> bytes:
    """The request body, refused before parsing when it is too large or not JSON."""
    length = request.headers.get("content-length")
    if length is not None:
        try:
            size = int(length)
        except ValueError:
            raise HTTPRefusal(400, "Content-Length is not a number", "invalid_length") from None
        if size > max_body:
            raise HTTPRefusal(413, f"the body is {size} bytes; at most {max_body} are accepted", "body_too_large")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > max_body:
            raise HTTPRefusal(413, f"the body is over {max_body} bytes; at most {max_body} are accepted", "body_too_large")
        chunks.append(chunk)
    raw = b"".join(chunks)
    kind = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if raw and kind != "application/json":
        raise HTTPRefusal(415, f"the body must be application/json, not {kind or 'untyped'}", "unsupported_media_type")
    return raw


@dataclass(frozen=True)
class RunUrls:
    """Where a served run's agent reaches its model and its tools."""

    base: str
    run_id: str

    @property
    def model(self) -> str:
        """The base URL for calls naming their agent by header (or a run with one agent)."""
        return f"{self.base}/runs/{self.run_id}/v1"

    def agent(self, name: str) -> str:
        """The per-agent base URL: every call through it is ``name``'s."""
        return f"{self.base}/runs/{self.run_id}/agents/{quote(name, safe='')}/v1"

    @property
    def agent_template(self) -> str:
        return f"{self.base}/runs/{self.run_id}/agents/{{agent}}/v1"

    @property
    def mcp(self) -> str:
        return f"{self.base}/runs/{self.run_id}/mcp"


class Gateway:
    """Open runs and the app that serves them; :meth:`start` serves it on loopback in this process."""

    def __init__(self, *, max_body: int = DEFAULT_MAX_BODY, routes: Sequence[BaseRoute] = ()) -> None:
        self.max_body = max_body
        self._runs: dict[str, ServedRun] = {}
        self._lock = threading.Lock()
        self._mcp = session_manager(mcp_server(), max_body=max_body)
        self._mcp_started = False
        self.app = Starlette(routes=[*routes, *self._routes()], lifespan=self._lifespan)
        self._server: LoopbackServer | None = None

    # --- the runs -------------------------------------------------------------------------------

    def add(self, run: ServedRun) -> RunUrls:
        with self._lock:
            if run.id in self._runs:
                raise HTTPRefusal(409, f"run {run.id!r} is already open", "run_exists")
            self._runs[run.id] = run
        return self.urls(run.id)

    def remove(self, run_id: str) -> ServedRun | None:
        with self._lock:
            return self._runs.pop(run_id, None)

    def get(self, run_id: str) -> ServedRun | None:
        with self._lock:
            return self._runs.get(run_id)

    def open_runs(self) -> list[str]:
        with self._lock:
            return sorted(self._runs)

    def run(self, run_id: str) -> ServedRun:
        found = self.get(run_id)
        if found is None:
            open_ = ", ".join(self.open_runs()[:10]) or "none"
            raise HTTPRefusal(404, f"unknown run {run_id!r}: it is not open here (open runs: {open_})", "unknown_run")
        return found

    def urls(self, run_id: str) -> RunUrls:
        return RunUrls(self.base_url, run_id)

    # --- serving --------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self._server.base_url if self._server is not None else ""

    def start(self, *, host: str = "127.0.0.1", port: int = 0) -> Gateway:
        if self._server is None:
            self._server = LoopbackServer(self.app, host=host, port=port, name="failforge-gateway").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def wait(self) -> None:
        if self._server is not None:
            self._server.wait()

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        if self._mcp_started:  # the SDK's session manager runs once: a restarted gateway gets a new one
            self._mcp = session_manager(mcp_server(), max_body=self.max_body)
        self._mcp_started = True
        async with self._mcp.run():
            yield

    def _routes(self) -> list[BaseRoute]:
        return [
            Route("/healthz", self._health, methods=["GET"]),
            Route("/runs/{run}/agents/{agent}/v1/{rest:path}", self._model_call, methods=["POST", "GET"]),
            Route("/runs/{run}/v1/{rest:path}", self._model_call, methods=["POST", "GET"]),
            Route("/v1/{rest:path}", self._model_call, methods=["POST", "GET"]),
            Route("/runs/{run}/mcp", _McpEndpoint(self), methods=["GET", "POST", "DELETE"]),
        ]

    async def _health(self, request: Request) -> Response:
        return response_of(json_reply({"ok": True, "runs": len(self.open_runs())}))

    async def _model_call(self, request: Request) -> Response:
        try:
            run_id = request.path_params.get("run") or request.headers.get(RUN_HEADER)
            if not run_id:
                raise HTTPRefusal(404, f"no route {request.method} {request.url.path}: model calls go to /runs/{{run}}/v1/chat/completions "
                                       f"(or carry the header {RUN_HEADER})", "unknown_route")
            run = self.run(run_id)
            if request.method != "POST":
                raise HTTPRefusal(405, f"{request.method} {request.url.path} is not served; model calls are POST", "method_not_allowed")
            raw = await read_body(request, self.max_body)
            agent = request.path_params.get("agent")
            path = f"/agents/{agent}/v1/{request.path_params['rest']}" if agent else f"/v1/{request.path_params['rest']}"
            # a replayed call answered in place, a live one awaited on this loop (no thread), a change in a thread
            reply = await run.model_reply_async(path, request.headers, raw)
        except HTTPRefusal as exc:
            reply = error_reply(exc.status, str(exc), exc.code)
        return response_of(reply)


class _McpEndpoint:
    """The MCP route: the run is looked up first (404 for an unknown run, nothing reaches the MCP SDK)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        run_id = scope.get("path_params", {}).get("run", "")
        run = self.gateway.get(run_id)
        if run is None or run.tools is None:
            why = f"unknown run {run_id!r}" if run is None else f"run {run_id!r} serves no tools (its process reports them to /runs/{run_id}/tools)"
            await response_of(error_reply(404, why, "unknown_run"))(scope, receive, send)
            return
        await self.gateway._mcp.handle_request({**scope, RUN_SCOPE_KEY: run}, receive, send)


_shared: Gateway | None = None
_shared_lock = threading.Lock()


def shared_gateway() -> Gateway:
    """The process's gateway for external agents, started on first use and stopped at exit.

    One per process, because starting a server per run would add its start to every attempt; runs are
    added and removed as they start and end, each under a fresh unguessable id.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Gateway().start()
            atexit.register(_stop_shared)
        return _shared


def _stop_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.stop()
            _shared = None


__all__ = ["DEFAULT_MAX_BODY", "RUN_HEADER", "Gateway", "HTTPRefusal", "RunUrls", "error_reply", "json_reply", "read_body", "response_of", "shared_gateway"]
