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

The gateway trusts only what it started. ``Host`` and ``Origin`` must name this loopback server (421 /
403 otherwise, :class:`~failforge.gateway._guard.HostGuard`: no DNS rebinding). Each run has a
capability token (:attr:`ServedRun.token`): a request reaches the run only when it carries it, either in
the run's path segment as the URLs the gateway hands out do (``/runs/{id}~{token}/...``) or in a header
(``X-Failforge-Token: <token>`` or ``Authorization: Bearer <token>``) with ``/runs/{id}/...``; never in
the query string. An unknown run and a wrong token get the same 404, which lists no run ids and quotes
at most 64 characters of the id. A body is read within :data:`BODY_TIMEOUT` seconds (408 otherwise) and
may nest at most 400 levels deep (400 otherwise); every error, Starlette's own 404/405 included, is the
JSON above, and an exception escaping a route is one log line and a JSON 500
(:class:`~failforge.gateway._guard.Shield`).
"""

from __future__ import annotations

import atexit
import contextlib
import hmac
import json
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from failforge.gateway._guard import HostGuard, Shield, depth_problem, quoted
from failforge.gateway._mcp import RUN_SCOPE_KEY, mcp_server, session_manager
from failforge.gateway._run import ServedRun
from failforge.gateway._server import LoopbackServer
from failforge.llm import Reply
from failforge.secrets import redact_known

RUN_HEADER = "X-Failforge-Run"
#: The header that may carry a run's capability token (``Authorization: Bearer <token>`` does too).
TOKEN_HEADER = "X-Failforge-Token"
#: Between a run's id and its token in the path segment of the URLs the gateway hands out.
TOKEN_SEPARATOR = "~"
DEFAULT_MAX_BODY = 8 * 1024 * 1024
#: Seconds a client has to send a request's whole body once its headers are in.
BODY_TIMEOUT = 60.0


class HTTPRefusal(Exception):
    """A request refused at the HTTP level: status, error code and a message saying what was expected."""

    def __init__(self, status: int, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_reply(status: int, message: str, code: str, kind: str = "invalid_request_error", **extra: Any) -> Reply:
    # every secret this process uses is masked: an upstream's error may quote its URL's password or the key
    payload = {"error": {"message": redact_known(message), "type": kind, "code": code, "param": None, **extra}}
    return Reply(status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(payload).encode())


def json_reply(payload: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, json.dumps(payload).encode())


def response_of(reply: Reply) -> Response:
    headers = {k: v for k, v in reply.headers.items() if k.lower() != "content-type"}
    return Response(
        reply.content, status_code=reply.status, headers=headers, media_type=reply.headers.get("content-type")
    )


async def read_body(request: Request, max_body: int, timeout: float | None = None) -> bytes:
    """The request body, refused before parsing when it is too large, too slow (``timeout``, default
    :data:`BODY_TIMEOUT`), not JSON or nested too deeply."""
    timeout = BODY_TIMEOUT if timeout is None else timeout
    length = request.headers.get("content-length")
    if length is not None:
        try:
            size = int(length)
        except ValueError:
            raise HTTPRefusal(400, "Content-Length is not a number", "invalid_length") from None
        if size > max_body:
            raise HTTPRefusal(413, f"the body is {size} bytes; at most {max_body} are accepted", "body_too_large")
    chunks, total = [], 0
    try:
        with anyio.fail_after(timeout):
            async for chunk in request.stream():
                total += len(chunk)
                if total > max_body:
                    raise HTTPRefusal(
                        413, f"the body is over {max_body} bytes; at most {max_body} are accepted", "body_too_large"
                    )
                chunks.append(chunk)
    except TimeoutError:
        raise HTTPRefusal(408, f"the body did not arrive within {timeout:.0f} s", "body_timeout") from None
    raw = b"".join(chunks)
    kind = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if raw and kind != "application/json":
        raise HTTPRefusal(415, f"the body must be application/json, not {kind or 'untyped'}", "unsupported_media_type")
    too_deep = depth_problem(raw)
    if too_deep is not None:
        raise HTTPRefusal(400, too_deep, "too_deep")
    return raw


def token_of(segment: str, headers: Headers) -> tuple[str, str | None]:
    """The run id and the capability token a request carries: from the run's path segment (``id~token``),
    else from ``X-Failforge-Token``, else from ``Authorization: Bearer``. Never from the query string."""
    run_id, sep, token = segment.partition(TOKEN_SEPARATOR)
    if sep:
        return run_id, token
    given = headers.get(TOKEN_HEADER)
    if given:
        return run_id, given.strip()
    scheme, _, value = (headers.get("authorization") or "").partition(" ")
    return run_id, value.strip() if scheme.lower() == "bearer" and value.strip() else None


def token_matches(expected: str, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


@dataclass(frozen=True)
class RunUrls:
    """Where a served run's agent reaches its model and its tools."""

    base: str
    run_id: str
    token: str = ""
    """The run's capability token, carried in every URL's run segment (``id~token``)."""

    @property
    def segment(self) -> str:
        return f"{self.run_id}{TOKEN_SEPARATOR}{self.token}" if self.token else self.run_id

    @property
    def model(self) -> str:
        """The base URL for calls naming their agent by header (or a run with one agent)."""
        return f"{self.base}/runs/{self.segment}/v1"

    def agent(self, name: str) -> str:
        """The per-agent base URL: every call through it is ``name``'s."""
        return f"{self.base}/runs/{self.segment}/agents/{quote(name, safe='')}/v1"

    @property
    def agent_template(self) -> str:
        return f"{self.base}/runs/{self.segment}/agents/{{agent}}/v1"

    @property
    def mcp(self) -> str:
        return f"{self.base}/runs/{self.segment}/mcp"


class Gateway:
    """Open runs and the app that serves them; :meth:`start` serves it on loopback in this process."""

    def __init__(self, *, max_body: int = DEFAULT_MAX_BODY, routes: Sequence[BaseRoute] = ()) -> None:
        self.max_body = max_body
        self._runs: dict[str, ServedRun] = {}
        self._lock = threading.Lock()
        self._mcp = session_manager(mcp_server(), max_body=max_body)
        self._mcp_started = False
        handlers = {HTTPException: _http_error, Exception: _internal_error}
        self.routes = Starlette(routes=[*routes, *self._routes()], lifespan=self._lifespan, exception_handlers=handlers)  # type: ignore[arg-type]
        self._server: LoopbackServer | None = None
        self.app = Shield(HostGuard(self.routes, self._bound, _refusal), _refusal)
        """The ASGI app served: the routes behind the Host/Origin guard, behind the last-word shield."""

    # --- the runs -------------------------------------------------------------------------------

    def add(self, run: ServedRun) -> RunUrls:
        with self._lock:
            if run.id in self._runs:
                raise HTTPRefusal(409, f"run {quoted(run.id)} is already open", "run_exists")
            if TOKEN_SEPARATOR in run.id:
                raise HTTPRefusal(400, f"a run id may not contain {TOKEN_SEPARATOR!r}", "invalid_run_id")
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

    def run(self, segment: str, headers: Headers) -> ServedRun:
        """The open run a request names (its path segment) and may reach (its token); one 404 for an
        unknown run and a wrong token alike, naming no other run."""
        run_id, token = token_of(segment, headers)
        found = self.get(run_id)
        if found is None or not token_matches(found.token, token):
            raise HTTPRefusal(404, unknown_run(run_id, token), "unknown_run")
        return found

    def urls(self, run_id: str) -> RunUrls:
        found = self.get(run_id)
        return RunUrls(self.base_url, run_id, found.token if found is not None else "")

    def _bound(self) -> tuple[str, int] | None:
        return self._server.address if self._server is not None else None

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
                raise HTTPRefusal(
                    404,
                    f"no route {request.method} {quoted(request.url.path)}: "
                    "model calls go to /runs/{run}/v1/chat/completions "
                    f"(or carry the header {RUN_HEADER})",
                    "unknown_route",
                )
            run = self.run(run_id, request.headers)
            if request.method != "POST":
                where = f"{request.method} {quoted(request.url.path)}"
                raise HTTPRefusal(405, f"{where} is not served; model calls are POST", "method_not_allowed")
            raw = await read_body(request, self.max_body)
            agent = request.path_params.get("agent")
            path = (
                f"/agents/{agent}/v1/{request.path_params['rest']}" if agent else f"/v1/{request.path_params['rest']}"
            )
            # a replayed call answered in place, a live one awaited on this loop (no thread), a change in a thread
            reply = await run.model_reply_async(path, request.headers, raw)
        except HTTPRefusal as exc:
            reply = error_reply(exc.status, str(exc), exc.code)
        return response_of(reply)


class _McpEndpoint:
    """The MCP route: the run is looked up first (404 for an unknown run or a wrong token, nothing reaches
    the MCP SDK), a GET is a 405 (the MCP streamable-HTTP spec's answer of a server that offers no SSE
    stream: this one is stateless and never calls back), and a POST's body is read here, within the
    gateway's limits (413 over ``max_body``), before the SDK parses it."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            run = self.gateway.run(scope.get("path_params", {}).get("run", ""), request.headers)
            if run.tools is None:
                why = f"run {quoted(run.id)} serves no tools (its process reports them to /runs/{{run}}/tools)"
                raise HTTPRefusal(404, why, "unknown_run")
            if request.method == "GET":
                why = "this MCP server is stateless and offers no SSE stream: send requests with POST"
                reply = error_reply(405, why, "method_not_allowed")
                reply.headers["allow"] = "POST, DELETE"
                await response_of(reply)(scope, receive, send)
                return
            raw = await read_body(request, self.gateway.max_body) if request.method == "POST" else b""
        except HTTPRefusal as exc:
            await response_of(error_reply(exc.status, str(exc), exc.code))(scope, receive, send)
            return
        await self.gateway._mcp.handle_request({**scope, RUN_SCOPE_KEY: run}, _replayed(raw, receive), send)


def _replayed(raw: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body already read, then waits on the client (for its disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


def unknown_run(run_id: str, token: str | None) -> str:
    why = "this token"
    if token is None:
        why = "no token (in the run's URL segment id~token, or the X-Failforge-Token header)"
    return f"no open run {quoted(run_id)} for {why}: use the URLs the run was opened with"


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, a method a route does not serve) as the documented JSON."""
    assert isinstance(exc, HTTPException)
    code = {404: "unknown_route", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    where = f"{request.method} {quoted(request.url.path)}"
    message = f"no route {where}" if exc.status_code == 404 else f"{where}: {exc.detail}"
    reply = error_reply(exc.status_code, message, code)
    reply.headers.update(exc.headers or {})
    return response_of(reply)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """What Starlette answers for an exception a route let escape (the shield logs it, in one line)."""
    why = f"failforge could not answer this request: {type(exc).__name__}"
    return response_of(error_reply(500, why, "internal_error"))


def _refusal(status: int, message: str, code: str) -> Response:
    return response_of(error_reply(status, message, code))


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


__all__ = [
    "BODY_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "RUN_HEADER",
    "TOKEN_HEADER",
    "TOKEN_SEPARATOR",
    "Gateway",
    "HTTPRefusal",
    "RunUrls",
    "error_reply",
    "json_reply",
    "read_body",
    "response_of",
    "shared_gateway",
    "token_matches",
    "token_of",
    "unknown_run",
]
