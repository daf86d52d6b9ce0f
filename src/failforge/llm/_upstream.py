"""Where live model responses come from: a real OpenAI-compatible endpoint, or a benchmark oracle.

Retries live here, at the real network edge, and nowhere else: a replayed call never touches the
network, so it never needs retrying, and a retry can never hide a drift.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from failforge.errors import AttemptDeadlineExceeded, ConfigError, ModelUnavailable
from failforge.secrets import strip_userinfo

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


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
        self.model = model
        self.name = f"http:{strip_userinfo(self.base_url)}"  # names end up in records: never with credentials
        self.max_attempts = max_attempts
        self.max_wait = max_wait
        self.timeout = timeout
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)

    def for_agent(self, agent: str, purpose: str | None = None) -> _AgentUpstream:
        """This endpoint, with the calling agent (and purpose) named by the ``X-Failforge-Agent`` /
        ``X-Failforge-Purpose`` headers: a loopback team policy answers as that agent, and any other
        server ignores two unknown headers. The boundary knows who calls; the upstream never guesses."""
        return _AgentUpstream(self, agent, purpose)

    def __call__(self, body: dict[str, Any], *, deadline: float | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
        """POST the request; retry 429/5xx/timeouts/dropped connections with jittered backoff.

        ``deadline`` (a ``time.monotonic()`` instant) caps every request's timeout and stops retrying
        once passed, so one attempt can never outlive its budget, even against a server that hangs.
        """
        payload = _compatible(body) if self.compat else dict(body)
        payload.pop("stream", None)  # the boundary streams the whole completion itself (failforge.llm._stream)
        payload.pop("stream_options", None)
        if self.model:
            payload["model"] = self.model
        url = f"{self.base_url}/chat/completions"

        def remaining() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        def once() -> dict[str, Any]:
            left = remaining()
            if left is not None and left <= 0:
                raise AttemptDeadlineExceeded(f"the attempt's deadline passed before a call to {url} could complete")
            timeout = self.timeout if left is None else max(0.05, min(self.timeout, left))
            try:
                response = self._client.post(url, json=payload, timeout=timeout, headers=headers)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
            if response.status_code in RETRY_STATUS:
                raise _Retryable(f"HTTP {response.status_code}: {response.text[:200]}")
            if response.status_code >= 400:
                raise ModelUnavailable(
                    f"model endpoint {url} refused the request with HTTP {response.status_code}: {response.text[:500]}"
                )
            try:
                data = response.json()
            except ValueError as exc:
                raise _Retryable(f"response was not JSON: {response.text[:200]}") from exc
            if not isinstance(data, dict) or not data.get("choices"):
                raise _Retryable(f"response has no choices: {response.text[:200]}")
            return data

        def past_deadline(_: Any) -> bool:
            left = remaining()
            return left is not None and left <= 0

        try:
            for attempt in Retrying(
                retry=retry_if_exception(lambda e: isinstance(e, _Retryable)),
                stop=stop_after_attempt(self.max_attempts) | past_deadline,  # type: ignore[operator]  # tenacity combines a stop with a plain callable at run time
                wait=wait_random_exponential(multiplier=0.5, max=self.max_wait),
                reraise=True,
            ):
                with attempt:
                    return once()
        except _Retryable as exc:
            if past_deadline(None):
                raise AttemptDeadlineExceeded(f"the attempt's deadline passed while retrying {url}: {exc}") from exc
            raise ModelUnavailable(f"model endpoint {url} kept failing after {self.max_attempts} attempts: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self._client.close()


class _AgentUpstream:
    """One agent's view of an :class:`HttpUpstream` (see :meth:`HttpUpstream.for_agent`)."""

    def __init__(self, inner: HttpUpstream, agent: str, purpose: str | None, deadline: float | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.deadline = deadline
        self.headers = {"X-Failforge-Agent": agent, **({"X-Failforge-Purpose": purpose} if purpose else {})}

    def __call__(self, body: dict[str, Any], *, deadline: float | None = None) -> dict[str, Any]:
        return self.inner(body, deadline=self.deadline if deadline is None else deadline, headers=self.headers)


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
    model: str, content: str | None, tool_calls: list[dict[str, Any]] | None = None, *, response_id: str | None = None, created: int | None = None
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
            return None, [{"id": f"call_oracle_{ordinal}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]
        return final, None

    return script


class OracleResponder:
    """Answers model calls from a benchmark's ground truth, one scripted message per call.

    ``script(ordinal, body)`` returns (content, tool_calls) for the ordinal-th call. Used to turn ground
    truth into seeds that carry real model requests, exactly as a model-recorded seed does.
    """

    def __init__(self, script: Callable[[int, dict[str, Any]], tuple[str | None, list[dict[str, Any]] | None]], name: str = "oracle") -> None:
        self._script = script
        self._ordinal = 0
        self.name = name

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        ordinal = self._ordinal
        content, tool_calls = self._script(ordinal, body)
        self._ordinal += 1
        return chat_response(str(body.get("model", "oracle")), content, tool_calls, response_id=f"chatcmpl-oracle-{ordinal}", created=0)


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
            return chat_response(str(body.get("model", "oracle")), content, tool_calls,
                                 response_id=f"chatcmpl-oracle-{agent}-{ordinal}", created=0)

        respond.name = f"{self.name}:{agent}"  # type: ignore[attr-defined]
        return respond  # type: ignore[return-value]

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        raise ConfigError(f"{self.name} plays several agents and must be asked through for_agent(agent)")


def oracle_tool_call(agent: str, ordinal: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One scripted tool call, with an id unique across the team's agents."""
    return {"id": f"call_{agent}_{ordinal}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class BoundedResponder:
    """One attempt's view of a live endpoint: a deadline for every call, and optional sampling overrides.

    Overrides (temperature, seed) change only the bytes sent to the endpoint, never the request the
    harness built, so a replayed prefix stays byte-identical while re-runs sample differently.
    """

    def __init__(self, inner: HttpUpstream, *, deadline: float | None = None, temperature: float | None = None, seed: int | None = None) -> None:
        self.inner = inner
        self.deadline = deadline
        self.temperature = temperature
        self.seed = seed
        self.name = inner.name
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._send(body, None)

    def for_agent(self, agent: str, purpose: str | None = None) -> Responder:
        """This attempt's view for one calling agent (named to the endpoint by header, see :meth:`HttpUpstream.for_agent`)."""
        headers = {"X-Failforge-Agent": agent, **({"X-Failforge-Purpose": purpose} if purpose else {})}

        def respond(body: dict[str, Any]) -> dict[str, Any]:
            return self._send(body, headers)

        respond.name = self.name  # type: ignore[attr-defined]
        return respond  # type: ignore[return-value]

    def _send(self, body: dict[str, Any], headers: dict[str, str] | None) -> dict[str, Any]:
        if self.temperature is not None or self.seed is not None:
            body = dict(body)
            if self.temperature is not None:
                body["temperature"] = self.temperature
            if self.seed is not None:
                body["seed"] = self.seed
        self.calls += 1
        return self.inner(body, deadline=self.deadline, headers=headers)
