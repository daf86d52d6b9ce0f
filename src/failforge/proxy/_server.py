"""``failforge proxy``: an OpenAI-compatible server on loopback that records, replays and branches runs
of any framework, in any process or language, into failforge's trajectory schema.

Routes (a run is opened first, and every model call names its run in the path or the header
``X-Failforge-Run``; the agent in the path ``/agents/{name}/...`` or the header ``X-Failforge-Agent``):

- ``POST /runs`` (:class:`RunRequest`) → ``{"run_id", "base_url"}``; ``GET /runs/{id}``; ``DELETE /runs/{id}``
- ``POST /runs/{id}/v1/chat/completions``, ``POST /runs/{id}/agents/{name}/v1/chat/completions``
  (``stream=True`` is answered as server-sent events, the usage chunk included when asked)
- ``POST /runs/{id}/tools`` (:class:`ToolReport`): a tool call the framework ran, and its observation
- ``POST /runs/{id}/finish`` (:class:`FinishRequest`) → the trajectory, whether it reproduced the seed, the failure

It binds to loopback only: it forwards to an upstream with a key read from an environment variable,
and serves recorded conversations, so it must never be reachable from the network. Every error is
an OpenAI-style JSON body (``{"error": {"message", "type", "code"}}``) with ``x-should-retry: false``;
malformed JSON, bodies over the limit and other content types are refused with a 4xx before anything
is recorded, and one run's failure never stops the others.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, ValidationError

from failforge.errors import ConfigError, FailforgeError
from failforge.llm import Reply, Responder
from failforge.proxy._runs import FinishRequest, ProxyRun, RunRequest, ToolReport
from failforge.trajectory import Trajectory

RUN_HEADER = "X-Failforge-Run"
DEFAULT_MAX_BODY = 8 * 1024 * 1024
_RUN_PATH = re.compile(r"^/runs/(?P<run>[^/]+)(?P<rest>/.*)?$")


class ProxyError(Exception):
    """An HTTP-level refusal: status, OpenAI-style error type and a message naming what was expected."""

    def __init__(self, status: int, message: str, code: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def error_reply(status: int, message: str, code: str, kind: str = "invalid_request_error") -> Reply:
    payload = {"error": {"message": message, "type": kind, "code": code, "param": None}}
    return Reply(status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(payload).encode())


def json_reply(payload: Any, status: int = 200) -> Reply:
    return Reply(status, {"content-type": "application/json"}, json.dumps(payload).encode())


def require_loopback(host: str) -> str:
    """The proxy serves recorded conversations and spends an upstream key: loopback only."""
    if host == "localhost":
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ConfigError(f"failforge proxy listens on loopback only (127.0.0.1, ::1 or localhost), not {host!r}")


@dataclass(frozen=True)
class _Url:
    path: str


@dataclass(frozen=True)
class _Request:
    """What the model boundary reads of a request (path and headers), from the proxy's own parsing."""

    url: _Url
    headers: Any


class Proxy:
    """The runs and their routing, independent of the HTTP server (so tests and benchmarks can see both)."""

    def __init__(self, *, upstream: Responder | None = None, seeds: list[Trajectory] | None = None, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.upstream = upstream
        self.seeds = {s.id: s for s in seeds or []}
        self.max_body = max_body
        self.runs: dict[str, ProxyRun] = {}
        self.finished: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.base_url = ""

    # --- dispatch -------------------------------------------------------------------------------

    def dispatch(self, method: str, path: str, headers: Any, raw: bytes) -> Reply:
        try:
            return self._route(method, path.split("?", 1)[0], headers, raw)
        except ProxyError as exc:
            return error_reply(exc.status, str(exc), exc.code)
        except FailforgeError as exc:
            return error_reply(400, str(exc), type(exc).__name__, "failforge_boundary")

    def _route(self, method: str, path: str, headers: Any, raw: bytes) -> Reply:
        if path in ("/healthz", "/health") and method == "GET":
            return json_reply({"ok": True, "runs": len(self.runs)})
        if path == "/runs" and method == "POST":
            return self._open_run(_parse(raw, RunRequest))
        match = _RUN_PATH.match(path)
        if match is not None:
            run_id, rest = match.group("run"), match.group("rest") or ""
        else:
            run_id, rest = headers.get(RUN_HEADER), path
            if not run_id:
                raise ProxyError(404, f"no route {method} {path}: model calls go to /runs/{{run}}/v1/chat/completions (or carry the header {RUN_HEADER}); open a run with POST /runs", "unknown_route")
        run = self._run(run_id)
        if rest == "" and method == "GET":
            return json_reply(run.status())
        if rest == "" and method == "DELETE":
            with self._lock:
                self.runs.pop(run.id, None)
            return json_reply({"deleted": run.id})
        if method != "POST":
            raise ProxyError(405, f"{method} {path} is not served; model calls, tool reports and finish are POST", "method_not_allowed")
        if rest == "/tools":
            step = run.tool(_parse(raw, ToolReport))
            return json_reply({"step": step.index, "state_fingerprint": step.state_fingerprint})
        if rest == "/finish":
            result = run.finish(_parse(raw, FinishRequest))
            with self._lock:
                self.runs.pop(run.id, None)
                self.finished.append(result)
            return json_reply(result)
        if rest.startswith("/v1/") or rest.startswith("/agents/"):
            return run.answer(_Request(_Url(rest), headers), raw)
        raise ProxyError(404, f"run {run.id!r} has no route {rest!r}: use /v1/chat/completions, /agents/{{name}}/v1/chat/completions, /tools or /finish", "unknown_route")

    def _open_run(self, request: RunRequest) -> Reply:
        seed = None
        if request.seed_id is not None:
            seed = self.seeds.get(request.seed_id)
            if seed is None:
                known = ", ".join(sorted(self.seeds)[:10]) or "none: start the proxy with --seeds"
                raise ProxyError(404, f"unknown seed {request.seed_id!r} (the proxy has: {known})", "unknown_seed")
        elif request.seed is not None:
            try:
                seed = Trajectory.model_validate(request.seed)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise ProxyError(400, f"the seed is not a trajectory: field '{'.'.join(str(p) for p in first['loc'])}': {first['msg']}", "invalid_seed") from None
        run = ProxyRun(request, seed=seed, upstream=self.upstream)
        with self._lock:
            if run.id in self.runs:
                raise ProxyError(409, f"run {run.id!r} is already open", "run_exists")
            self.runs[run.id] = run
        return json_reply({"run_id": run.id, "base_url": f"{self.base_url}/runs/{run.id}/v1", "mode": run.mode, "replay_until": run.log.replay_until})

    def _run(self, run_id: str) -> ProxyRun:
        with self._lock:
            run = self.runs.get(run_id)
        if run is None:
            raise ProxyError(404, f"unknown run {run_id!r}: open one with POST /runs (open runs: {', '.join(sorted(self.runs)[:10]) or 'none'})", "unknown_run")
        return run


def _parse(raw: bytes, model: type[Any]) -> Any:
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise ProxyError(400, f"the body is not JSON: {exc}", "invalid_json") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        fields = ", ".join(model.model_fields) if issubclass(model, BaseModel) else ""
        raise ProxyError(400, f"field '{'.'.join(str(p) for p in first['loc']) or '<body>'}': {first['msg']} (fields: {fields})", "invalid_body") from None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog (5) resets connections when a framework opens a dozen at once.
    request_queue_size = 128


class _IPv6Server(_Server):
    address_family = socket.AF_INET6


class ProxyServer:
    """Context manager: a threaded HTTP server around a :class:`Proxy`; ``base_url`` is valid inside."""

    def __init__(self, proxy: Proxy, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.proxy = proxy
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body are written separately: with Nagle's algorithm on, a keep-alive client's
            # delayed ACK holds the body back ~40 ms on every call.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_DELETE(self) -> None:  # noqa: N802
                self._serve("DELETE")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def _serve(self, method: str) -> None:
                try:
                    raw = self._body(method)
                except ProxyError as exc:
                    self.close_connection = True  # the unread body must not be parsed as the next request
                    self._send(error_reply(exc.status, str(exc), exc.code))
                    return
                self._send(server.proxy.dispatch(method, self.path, self.headers, raw))

            def _body(self, method: str) -> bytes:
                if method != "POST":
                    return b""
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    raise ProxyError(411, "send the body with a Content-Length (chunked bodies are not accepted)", "length_required")
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    raise ProxyError(400, "Content-Length is not a number", "invalid_length") from None
                if length > server.proxy.max_body:
                    raise ProxyError(413, f"the body is {length} bytes; the proxy accepts at most {server.proxy.max_body}", "body_too_large")
                kind = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
                if length and kind != "application/json":
                    raise ProxyError(415, f"the body must be application/json, not {kind or 'untyped'}", "unsupported_media_type")
                return self.rfile.read(length) if length else b""

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

        try:
            server_class = _IPv6Server if ":" in require_loopback(host) else _Server
            self._httpd = server_class((host, port), Handler)
        except OSError as exc:
            raise ConfigError(f"failforge proxy cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name="failforge-proxy")
        proxy.base_url = self.base_url

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name if ':' not in name else f'[{name}]'}:{port}"

    def __enter__(self) -> ProxyServer:
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


__all__ = ["DEFAULT_MAX_BODY", "RUN_HEADER", "Proxy", "ProxyError", "ProxyServer", "require_loopback"]
