"""Where live model responses come from: a real OpenAI-compatible endpoint, or a benchmark oracle.

Retries live here, at the real network edge, and nowhere else: a replayed call never touches the
network, so it never needs retrying, and a retry can never hide a drift.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx
from tenacity import AsyncRetrying, Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from failforge.errors import AttemptDeadlineExceeded, ConfigError, ModelUnavailable
from failforge.images import image_rejection
from failforge.secrets import redact_known, remember, remember_env, safe_url, userinfo_secrets

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def endpoint_url(base_url: str, route: str) -> str:
    """``route`` under ``base_url``, the URL otherwise used as given: ``https://h/v1?api-version=1`` and
    ``chat/completions`` make ``https://h/v1/chat/completions?api-version=1`` (a plain string join would
    put the route inside the query)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + route.lstrip("/")))


class Responder(Protocol):
    """Anything that turns a chat-completions request body into a response body."""

    name: str

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]: ...


class _Retryable(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)


class HttpUpstream:
    """Forwards chat-completions requests to an OpenAI-compatible endpoint, with tenacity retries.

    ``model`` (when set) replaces the request's model name, so a seed recorded under one model name can
    be continued by an endpoint that serves the same model under another.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        model: str | None = None,
        timeout: float = 120.0,
        max_attempts: int = 4,
        max_wait: float = 20.0,
        transport: httpx.BaseTransport | None = None,
        compat: bool = True,
    ) -> None:
        self.compat = compat
        self.base_url = base_url.rstrip("/")
        self.url = endpoint_url(base_url, "chat/completions")
        """Where requests go: the base URL as given (its query, e.g. ``?api-version=``, kept), the route
        appended to its path."""
        self.shown_url = safe_url(self.url)
        """:attr:`url` as messages show it: userinfo and credential-like query parameters masked."""
        self.model = model
        self.name = f"http:{safe_url(self.base_url)}"  # names end up in records: never with credentials
        self.max_attempts = max_attempts
        self.max_wait = max_wait
        self.timeout = timeout
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        remember([key, *userinfo_secrets(self.base_url)])  # never shown to a user, whatever an error body quotes
        remember_env([api_key_env])  # never inherited by an agent command failforge starts
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=self._headers, transport=transport)
        self._async_sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._keepers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._async_lock = threading.Lock()

    def for_agent(self, agent: str, purpose: str | None = None) -> _AgentUpstream:
        """This endpoint, with the calling agent (and purpose) named by the ``X-Failforge-Agent`` /
        ``X-Failforge-Purpose`` headers: a loopback team policy answers as that agent, and any other
        server ignores two unknown headers. The boundary knows who calls; the upstream never guesses."""
        return _AgentUpstream(self, agent, purpose)

    def __call__(
        self, body: dict[str, Any], *, deadline: float | None = None, headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """POST the request; retry 429/5xx/timeouts/dropped connections with jittered backoff.

        ``deadline`` (a ``time.monotonic()`` instant) caps every request's timeout and stops retrying
        once passed, so one attempt can never outlive its budget, even against a server that hangs.
        """
        url, payload = self._request(body)
        try:
            for attempt in Retrying(**self._retry_policy(deadline)):
                with attempt:
                    left = self._left(url, deadline)
                    try:
                        response = self._client.post(url, json=payload, timeout=self._timeout(left), headers=headers)
                    except (httpx.TimeoutException, httpx.TransportError) as exc:
                        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
                    return self._checked(url, response)
        except _Retryable as exc:
            raise self._gave_up(url, deadline, exc) from exc
        except ModelUnavailable as exc:  # a text-only model refusing screenshots: say so, and how to fall back
            rejected = image_rejection(exc, payload)
            if rejected is exc:
                raise
            raise rejected from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def acall(
        self, body: dict[str, Any], *, deadline: float | None = None, headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """:meth:`__call__` for an event loop (the run gateway): the same request, retries and deadline, on
        this loop's aiohttp session, so a live call needs no worker thread (and costs a fraction of the
        CPU an httpx async client spends per call: measured 0.32 ms against 1.35 ms)."""
        import aiohttp

        url, payload = self._request(body)
        session = await self._async_session()
        data = json.dumps(payload)
        try:
            async for attempt in AsyncRetrying(**self._retry_policy(deadline)):
                with attempt:
                    left = self._left(url, deadline)
                    try:
                        async with session.post(
                            url,
                            data=data,
                            headers={"content-type": "application/json", **(headers or {})},
                            timeout=aiohttp.ClientTimeout(total=self._timeout(left)),
                        ) as response:
                            status, text = response.status, await response.text()
                    except (aiohttp.ClientError, TimeoutError) as exc:
                        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
                    return self._parsed(url, status, text)
        except _Retryable as exc:
            raise self._gave_up(url, deadline, exc) from exc
        except ModelUnavailable as exc:  # as on the sync path: a text-only model refusing screenshots, and the fallback
            rejected = image_rejection(exc, payload)
            if rejected is exc:
                raise
            raise rejected from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        payload = _compatible(body) if self.compat else dict(body)
        payload.pop("stream", None)  # the boundary streams the whole completion itself (failforge.llm._stream)
        payload.pop("stream_options", None)
        if self.model:
            payload["model"] = self.model
        return self.url, payload

    def _retry_policy(self, deadline: float | None) -> dict[str, Any]:
        def past_deadline(_: Any) -> bool:
            return deadline is not None and deadline - time.monotonic() <= 0

        return {
            "retry": retry_if_exception(lambda e: isinstance(e, _Retryable)),
            "stop": stop_after_attempt(self.max_attempts) | past_deadline,  # type: ignore[operator]  # tenacity combines a stop with a plain callable at run time
            "wait": wait_random_exponential(multiplier=0.5, max=self.max_wait),
            "reraise": True,
        }

    @staticmethod
    def _left(url: str, deadline: float | None) -> float | None:
        url = safe_url(url)
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise AttemptDeadlineExceeded(f"the attempt's deadline passed before a call to {url} could complete")
        return left

    def _timeout(self, left: float | None) -> float:
        return self.timeout if left is None else max(0.05, min(self.timeout, left))

    @classmethod
    def _checked(cls, url: str, response: httpx.Response) -> dict[str, Any]:
        return cls._parsed(url, response.status_code, response.text)

    @staticmethod
    def _parsed(url: str, status: int, text: str) -> dict[str, Any]:
        url = safe_url(url)
        # Error text is masked before it is cut: a key cut in half has no key's shape left to mask.
        if status in RETRY_STATUS:
            raise _Retryable(f"HTTP {status}: {redact_known(text)[:200]}")
        if status >= 400:
            raise ModelUnavailable(
                f"model endpoint {url} refused the request with HTTP {status}: {redact_known(text)[:500]}"
            )
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise _Retryable(f"response was not JSON: {redact_known(text)[:200]}") from exc
        if not isinstance(data, dict) or not data.get("choices"):
            raise _Retryable(f"response has no choices: {redact_known(text)[:200]}")
        return data

    def _gave_up(self, url: str, deadline: float | None, exc: _Retryable) -> Exception:
        url = safe_url(url)
        if deadline is not None and deadline - time.monotonic() <= 0:
            return AttemptDeadlineExceeded(f"the attempt's deadline passed while retrying {url}: {exc}")
        return ModelUnavailable(f"model endpoint {url} kept failing after {self.max_attempts} attempts: {exc}")

    async def _async_session(self) -> Any:
        """This event loop's aiohttp session (a session belongs to the loop it was made on).

        A new session is closed by its loop's own shutdown: an async generator started on the loop, whose
        ``finally`` closes it, is finalised by ``loop.shutdown_asyncgens()`` (``asyncio.run``, ``asyncio.Runner``
        and uvicorn's server all call it) while the loop still runs. Without it a gateway's loop that ended before
        :meth:`close` left its session to the garbage collector, which prints aiohttp's "Unclosed client session"."""
        import asyncio

        import aiohttp

        loop = asyncio.get_running_loop()
        with self._async_lock:
            session = self._async_sessions.get(loop)
            if session is not None and not session.closed:
                return session
            session = self._async_sessions[loop] = aiohttp.ClientSession(headers=self._headers)
        keeper = _closed_with_loop(session)
        await keeper.__anext__()
        self._keepers[loop] = keeper
        return session

    def close(self) -> None:
        self._client.close()
        with self._async_lock:
            sessions = list(self._async_sessions.items())
            self._async_sessions.clear()
        for loop, session in sessions:
            _close_session(loop, session)


async def _closed_with_loop(session: Any) -> Any:
    """Suspended until the loop shuts its async generators down, then closes ``session`` on that loop."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _close_session(loop: Any, session: Any) -> None:
    """Close an aiohttp session on the loop it belongs to (running or not), so none is left open at exit."""
    import asyncio
    import contextlib

    if session.closed:
        return
    with contextlib.suppress(Exception):
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(timeout=5)
        elif not loop.is_closed():
            loop.run_until_complete(session.close())
        else:  # the loop is gone (its gateway stopped): close the connections directly
            connector = getattr(session, "_connector", None)
            closer = getattr(connector, "_close", None)
            if closer is not None:
                closer()
            session._connector = None


class _AgentUpstream:
    """One agent's view of an :class:`HttpUpstream` (see :meth:`HttpUpstream.for_agent`)."""

    def __init__(self, inner: HttpUpstream, agent: str, purpose: str | None, deadline: float | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.deadline = deadline
        self.headers = {"X-Failforge-Agent": agent, **({"X-Failforge-Purpose": purpose} if purpose else {})}

    def __call__(self, body: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        return self.inner(body, deadline=self.deadline if deadline is None else deadline, headers=self.headers)

    async def acall(self, body: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        return await self.inner.acall(
            body, deadline=self.deadline if deadline is None else deadline, headers=self.headers
        )


def _compatible(body: dict[str, Any]) -> dict[str, Any]:
    """Smooth over servers stricter than the OpenAI API, after hashing and recording, before sending.

    llama.cpp's server rejects three things the OpenAI API accepts and real harnesses send (AgentDojo's
    ``OpenAILLM`` sends all three): an assistant message whose ``content`` is null (it only calls
    tools), the ``developer`` role, and content given as a list of text parts. They become an empty
    string, ``system`` and the joined text. The request the harness sent, and its hash, are untouched:
    only the bytes on the wire to this endpoint change.
    """
    payload = dict(body)
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return payload
    fixed: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            fixed.append(message)
            continue
        m = dict(message)
        if m.get("role") == "developer":
            m["role"] = "system"
        content = m.get("content")
        if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
            m["content"] = "".join(str(p.get("text", "")) for p in content)
        elif content is None and m.get("role") == "assistant":
            m["content"] = ""
        fixed.append(m)
    payload["messages"] = fixed
    return payload


def chat_response(
    model: str,
    content: str | None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    response_id: str | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """A chat-completions response body, as an OpenAI-compatible server would return it.

    ``response_id`` / ``created`` pin what a real server would mint, so a scripted response is the same
    bytes every time it is produced (oracle seeds recorded twice are identical).
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": response_id or f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


OracleScript = Callable[[int, dict[str, Any]], tuple[str | None, list[dict[str, Any]] | None]]


def fixed_tool_calls(calls: list[tuple[str, dict[str, Any]]], final: str) -> OracleScript:
    """An oracle script for a known sequence: call k is the k-th (tool, arguments), one per message;
    the call after the last answers ``final``. Ground truths (AgentDojo) and canonical solutions
    (HumanEval) are such sequences."""

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        if ordinal < len(calls):
            name, args = calls[ordinal]
            return None, [
                {
                    "id": f"call_oracle_{ordinal}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        return final, None

    return script


class OracleResponder:
    """Answers model calls from a benchmark's ground truth, one scripted message per call.

    ``script(ordinal, body)`` returns (content, tool_calls) for the ordinal-th call. Used to turn ground
    truth into seeds that carry real model requests, exactly as a model-recorded seed does.
    """

    def __init__(
        self,
        script: Callable[[int, dict[str, Any]], tuple[str | None, list[dict[str, Any]] | None]],
        name: str = "oracle",
    ) -> None:
        self._script = script
        self._ordinal = 0
        self.name = name

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        ordinal = self._ordinal
        content, tool_calls = self._script(ordinal, body)
        self._ordinal += 1
        return chat_response(
            str(body.get("model", "oracle")), content, tool_calls, response_id=f"chatcmpl-oracle-{ordinal}", created=0
        )


AgentScript = Callable[[int, dict[str, Any], "str | None"], tuple[str | None, list[dict[str, Any]] | None]]


class TeamOracle:
    """Plays every agent of a team from a script per agent: ``script(ordinal, body, purpose)`` answers the
    agent's ordinal-th call (its own stream's order). The model boundary asks it for the responder of
    the calling agent (``for_agent``), so a scripted orchestrator and its scripted workers each answer
    their own calls, through the normal record path, exactly as a team of models would.
    """

    def __init__(self, scripts: dict[str, AgentScript], name: str = "team-oracle") -> None:
        self._scripts = scripts
        self._ordinals: dict[str, int] = {}
        self.name = name

    def for_agent(self, agent: str, purpose: str | None = None) -> Responder:
        script = self._scripts.get(agent)
        if script is None:
            raise ConfigError(f"{self.name} has no script for agent {agent!r} (it plays: {', '.join(self._scripts)})")

        def respond(body: dict[str, Any]) -> dict[str, Any]:
            ordinal = self._ordinals.get(agent, 0)
            self._ordinals[agent] = ordinal + 1
            content, tool_calls = script(ordinal, body, purpose)
            return chat_response(
                str(body.get("model", "oracle")),
                content,
                tool_calls,
                response_id=f"chatcmpl-oracle-{agent}-{ordinal}",
                created=0,
            )

        respond.name = f"{self.name}:{agent}"  # type: ignore[attr-defined]
        return respond  # type: ignore[return-value]

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        raise ConfigError(f"{self.name} plays several agents and must be asked through for_agent(agent)")


def oracle_tool_call(agent: str, ordinal: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One scripted tool call, with an id unique across the team's agents."""
    return {
        "id": f"call_{agent}_{ordinal}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


class CallMeter:
    """What one job spent on live endpoints, by role (agent, guide): calls, and the tokens each endpoint reported.

    Thread-safe (a team harness may call from several threads). Replayed calls never reach an endpoint and are not
    counted. An endpoint that reports no ``usage`` still counts its call, under ``unreported``, so a cost projected
    from tokens can say how many calls it could not see."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roles: dict[str, dict[str, int]] = {}

    def add(self, role: str, response: Any) -> None:
        usage = response.get("usage") if isinstance(response, dict) else None
        with self._lock:
            row = self._roles.setdefault(
                role, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "unreported": 0}
            )
            row["calls"] += 1
            if isinstance(usage, dict):
                row["prompt_tokens"] += int(usage.get("prompt_tokens") or 0)
                row["completion_tokens"] += int(usage.get("completion_tokens") or 0)
            else:
                row["unreported"] += 1

    def summary(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {role: dict(row) for role, row in sorted(self._roles.items())}


class BoundedResponder:
    """One attempt's view of a live endpoint: a deadline for every call, and optional sampling overrides.

    Overrides (temperature, seed) change only the bytes sent to the endpoint, never the request the
    harness built, so a replayed prefix stays byte-identical while re-runs sample differently. A ``meter``
    counts each call and its tokens under ``role``.
    """

    def __init__(
        self,
        inner: HttpUpstream,
        *,
        deadline: float | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        meter: CallMeter | None = None,
        role: str = "agent",
    ) -> None:
        self.inner = inner
        self.deadline = deadline
        self.temperature = temperature
        self.seed = seed
        self.meter = meter
        self.role = role
        self.name = inner.name
        self.base_url, self.model = (
            inner.base_url,
            inner.model,
        )  # the endpoint it views (probed for structured output as that endpoint)
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._send(body, None)

    def for_agent(self, agent: str, purpose: str | None = None) -> _BoundedAgent:
        """This attempt's view for one calling agent (named to the endpoint by header, see
        :meth:`HttpUpstream.for_agent`)."""
        return _BoundedAgent(
            self, {"X-Failforge-Agent": agent, **({"X-Failforge-Purpose": purpose} if purpose else {})}
        )

    async def acall(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        """:meth:`__call__` for an event loop (see :meth:`HttpUpstream.acall`)."""
        self.calls += 1
        response = await self.inner.acall(self._sampled(body), deadline=self.deadline, headers=headers)
        if self.meter is not None:
            self.meter.add(self.role, response)
        return response

    def _sampled(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.temperature is not None or self.seed is not None:
            body = dict(body)
            if self.temperature is not None:
                body["temperature"] = self.temperature
            if self.seed is not None:
                body["seed"] = self.seed
        return body

    def _send(self, body: dict[str, Any], headers: dict[str, str] | None) -> dict[str, Any]:
        self.calls += 1
        response = self.inner(self._sampled(body), deadline=self.deadline, headers=headers)
        if self.meter is not None:
            self.meter.add(self.role, response)
        return response


class _BoundedAgent:
    """One calling agent's view of a :class:`BoundedResponder`, sync and async."""

    def __init__(self, bounded: BoundedResponder, headers: dict[str, str]) -> None:
        self.bounded = bounded
        self.headers = headers
        self.name = bounded.name

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.bounded._send(body, self.headers)

    async def acall(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self.bounded.acall(body, self.headers)
