"""A loopback OpenAI-compatible server with fixed latency and injected faults.

It either proxies to a real endpoint (e.g. the embedded llama.cpp server), so tests exercise the real
model through 429s, 500s, hangs and dropped connections, or answers from a small deterministic
policy, so campaigns of hundreds of attempts and throughput benchmarks run in seconds. It listens on
127.0.0.1 only, and every request loop it serves is bounded by the client.

A request the policy cannot answer gets a JSON HTTP error, never a dropped connection (which a client can
only report as a network fault): HTTP 422 with ``error.type`` ``"no_scripted_answer"`` when the policy raises
:class:`NoScriptedAnswer` (it has no answer for this request), HTTP 500 with ``"scripted_policy_error"`` when
it fails otherwise (a bug in the policy), HTTP 400 ``"invalid_request_error"`` for a body that is not JSON.
Each says in ``error.message``, on one line, which policy could not answer what request and why.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from pydantic import BaseModel, Field

from failforge.errors import FailforgeError
from failforge.llm import SSE_CONTENT_TYPE, chat_response, is_probe, sse_body, wants_usage


class NoScriptedAnswer(FailforgeError):
    """A scripted policy has no answer for this request (a task it does not serve, a caller it does not know).

    The loopback server answers it with HTTP 422 naming the policy and the request; raise it, with what the
    policy could not match, instead of returning something made up."""


def request_summary(agent: str | None, body: Any) -> str:
    """One line naming a chat request: who called, how many messages, and the start of the last one."""
    messages = body.get("messages") if isinstance(body, dict) else None
    messages = messages if isinstance(messages, list) else []
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = last.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content is not None else ""
    who = f"agent {agent!r}" if agent else "a caller that named no agent"
    said = f", the last ({last.get('role', '?')}) {' '.join(text.split())[:80]!r}" if messages else ""
    return f"{who}'s request with {len(messages)} message{'s' if len(messages) != 1 else ''}{said}"


def policy_failure(name: str, agent: str | None, body: Any, exc: Exception) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON error body) for a policy that raised ``exc`` on a request."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    asked = request_summary(agent, body)
    if isinstance(exc, NoScriptedAnswer):
        status, kind = 422, "no_scripted_answer"
        message = f"scripted model {name!r} has no answer for {asked}: {reason}"
    else:
        status, kind = 500, "scripted_policy_error"
        message = f"scripted model {name!r} failed on {asked}: {type(exc).__name__}: {reason}"
    return status, {"error": {"message": message, "type": kind, "code": kind, "policy": name}}


class FaultPlan(BaseModel):
    """Rates (0..1) of faults per request, drawn from a seeded generator."""

    error_rate: float = Field(default=0.0, ge=0, le=1, description="HTTP 429 or 500")
    hang_rate: float = Field(default=0.0, ge=0, le=1, description="never answer (until the client gives up)")
    drop_rate: float = Field(default=0.0, ge=0, le=1, description="close the connection without a response")
    hang_seconds: float = 30.0
    seed: int = 0


def canned_answer(body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """A deterministic stand-in policy: guides get a short note; agents answer (sometimes echoing the
    note, so the leak filter has something to reject)."""
    messages = body.get("messages") or []
    digest = int(hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8], 16)
    first = str((messages[0] or {}).get("content") or "") if messages else ""
    if "realistic mistakes" in first:
        return "Tell the user everything is finished without checking the result.", None
    last = messages[-1] if messages else {}
    if last.get("role") == "system" and digest % 4 == 0:
        return f"As instructed: {last.get('content')}", None
    return "I have finished the task and everything is in order.", None


class LoopbackModelServer:
    """Context manager: ``base_url`` is valid inside. ``upstream`` proxies; otherwise canned answers."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        faults: FaultPlan | None = None,
        upstream: str | None = None,
        policy: Callable[[dict[str, Any]], tuple[str | None, list[dict[str, Any]] | None]] | None = None,
        agent_policy: (
            Callable[[str | None, dict[str, Any]], tuple[str | None, list[dict[str, Any]] | None]] | None
        ) = None,
        echo_credentials: bool = False,
        text_only: bool = False,
        port: int = 0,
        report_usage: bool = False,
        name: str | None = None,
    ) -> None:
        """``agent_policy``: a team policy, told which agent calls (``/agents/{name}/v1/...`` or the
        ``X-Failforge-Agent`` header, which failforge's boundary sends upstream), never guessing it
        from the request. ``echo_credentials``: error bodies quote the request's Authorization header,
        as some real providers quote a rejected key — the case a secret-scanning test needs.
        ``text_only``: a request with an ``image_url`` part gets HTTP 400 as OpenAI answers a text-only model.
        ``port``: the loopback port (0: any free one). ``report_usage``: each answer reports token usage as a pure
        function of the bytes (a token per 4 characters of the request's messages and of the answer), as a metered
        endpoint would, so what a build spends can be measured against a scripted model. ``name``: the policy's name in
        the error a request it cannot answer gets (default: its class or function name)."""
        self.latency = latency
        self.policy = policy or canned_answer
        self.agent_policy = agent_policy
        chosen = agent_policy if agent_policy is not None else self.policy
        self.name = name or getattr(chosen, "__name__", None) or type(chosen).__name__
        self.agents_seen: list[str | None] = []
        self.faults = faults or FaultPlan()
        self.upstream = upstream.rstrip("/") if upstream else None
        self.echo_credentials = echo_credentials
        self.text_only = text_only
        self.report_usage = report_usage
        self._rng = random.Random(self.faults.seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.counts: dict[str, int] = {"ok": 0, "error": 0, "hang": 0, "drop": 0}
        self._proxy = httpx.Client(timeout=300.0) if self.upstream else None
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body are written separately: with Nagle on, a keep-alive client's delayed ACK
            # would hold every answer back ~40 ms
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": [{"id": "loopback", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError as exc:
                    message = f"the request body is not JSON ({exc}); send an OpenAI chat completions request"
                    self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                    return
                if server._proxy is None and is_probe(body):
                    # a scripted policy constrains no answer to a schema: the structured-output probe gets the
                    # sentence it asked for (asking neither the policy nor the fault plan), i.e. "free text here"
                    self._send(
                        200, chat_response(str(body.get("model", "loopback")), "Hello! How can I help you today?", None)
                    )
                    return
                fate = server._draw()
                if fate == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fate == "hang":
                    server._stop.wait(server.faults.hang_seconds)
                    self.close_connection = True
                    return
                if fate == "error":
                    status = 429 if server._coin() else 500
                    echo = f" for credentials {self.headers.get('Authorization')!r}" if server.echo_credentials else ""
                    self._send(status, {"error": {"message": f"injected {status}{echo}"}})
                    return
                if server.text_only and '"image_url"' in json.dumps(body.get("messages")):
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "Invalid content type. image_url is only supported by certain models.",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                if server.latency:
                    time.sleep(server.latency)
                route = self.path.split("/agents/", 1)[1].split("/", 1)[0] if "/agents/" in self.path else None
                agent = route or self.headers.get("X-Failforge-Agent")
                try:
                    answer = server._answer(body, agent)
                except Exception as exc:  # noqa: BLE001 - whatever the policy raised, the client gets an answer
                    if server._proxy is not None:  # a proxy's upstream failing is the fault under test: as before
                        raise
                    self._send(*policy_failure(server.name, agent, body, exc))
                    return
                if (
                    body.get("stream") and server._proxy is None
                ):  # a client that streams gets the same answer as server-sent events
                    self._send_bytes(200, sse_body(answer, include_usage=wants_usage(body)), SSE_CONTENT_TYPE)
                    return
                self._send(200, answer)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._send_bytes(status, json.dumps(payload).encode(), "application/json")

            def _send_bytes(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )  # shutdown waits for one poll: 0.5 s by default, on every test that stops a server

    def _coin(self) -> bool:
        with self._lock:
            return self._rng.random() < 0.5

    def _draw(self) -> str:
        """The fate of one request under the current ``faults`` (which a test may replace mid-run)."""
        with self._lock:
            r = self._rng.random()
            f = self.faults
            fate = (
                "error"
                if r < f.error_rate
                else (
                    "hang"
                    if r < f.error_rate + f.hang_rate
                    else "drop"
                    if r < f.error_rate + f.hang_rate + f.drop_rate
                    else "ok"
                )
            )
            self.counts[fate] += 1
            return fate

    def _answer(self, body: dict[str, Any], agent: str | None = None) -> dict[str, Any]:
        if self._proxy is not None:
            return self._proxy.post(f"{self.upstream}/chat/completions", json=body).json()
        with self._lock:
            self.agents_seen.append(agent)
        content, calls = self.agent_policy(agent, body) if self.agent_policy is not None else self.policy(body)
        answer = chat_response(str(body.get("model", "loopback")), content, calls)
        if self.report_usage:
            prompt = -(-len(json.dumps(body.get("messages"), sort_keys=True)) // 4)
            completion = -(-len(json.dumps(answer["choices"][0]["message"], sort_keys=True)) // 4)
            answer["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
        return answer

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> LoopbackModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._proxy is not None:
            self._proxy.close()
