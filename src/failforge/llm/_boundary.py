"""The model boundary: an httpx transport that sits between any OpenAI-client harness and the model.

Every agent step is one chat-completions call through this transport. Depending on where the run is
relative to its branch point (see :class:`failforge.runlog.RunLog`) a call is served from the seed
(after its request hash is checked), answered by the injector, or forwarded live. Running out of
recorded responses while replaying is an error, never a silent live call.

A failforge error at the boundary (a drift, an exhausted recording, the end of a prefix, a live call
that failed) is kept in ``failure`` (the first one wins) so the caller can re-raise the typed error,
and the harness gets :func:`refusal`: an HTTP answer no client retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from failforge.canonical import readable_diff
from failforge.errors import FailforgeError, InfrastructureError, PromptDrift, RecordingExhausted
from failforge.llm._request import canonical_request, request_hash
from failforge.llm._upstream import Responder
from failforge.runlog import RunLog
from failforge.trajectory import ModelCallRef, Step, ToolCall

Injector = Callable[[dict[str, Any]], dict[str, Any]]


def agent_step_from_response(index: int, agent: str, response: dict[str, Any], ref: ModelCallRef, phase: str) -> Step:
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise InfrastructureError(f"model response has no choices[0].message: {json.dumps(response)[:300]}") from exc
    calls = [
        ToolCall(
            id=str(c.get("id") or f"call_{i}"),
            name=str((c.get("function") or {}).get("name", "")),
            arguments=str((c.get("function") or {}).get("arguments") or ""),
        )
        for i, c in enumerate(message.get("tool_calls") or [])
    ]
    return Step(
        index=index,
        kind="agent",
        agent=agent,
        role="assistant",
        content=message.get("content"),
        tool_calls=calls,
        model_call=ref,
        phase=phase,  # type: ignore[arg-type]
    )


class ModelBoundary(httpx.BaseTransport):
    def __init__(
        self,
        log: RunLog,
        *,
        stream: str = "agent",
        upstream: Responder | None = None,
        injector: Injector | None = None,
        strict: bool = True,
        source: str = "model",
    ) -> None:
        self.log = log
        self.stream = stream
        self.upstream = upstream
        self.injector = injector
        self.strict = strict
        self.source = source
        self.failure: FailforgeError | None = None
        self.divergences: list[PromptDrift] = []
        self.live_calls = 0
        self._ordinal = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.rstrip("/").endswith("/chat/completions"):
            return httpx.Response(404, json={"error": {"message": f"failforge boundary serves chat completions only, not {request.url.path}"}}, request=request)
        try:
            body = json.loads(request.read() or b"{}")
            return httpx.Response(200, json=self.complete(body), request=request)
        except FailforgeError as exc:
            if self.failure is None:
                self.failure = exc
            return refusal(exc, request)

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        log = self.log
        index = log.next_index
        ordinal = self._ordinal
        self._ordinal += 1
        source = self.source
        if log.replaying(index):
            response, source = self._serve_recorded(index, body)
            phase = "replayed"
        elif index == log.replay_until and index > 0 and self.injector is not None:
            response = self.injector(body)
            phase = "injected"
            self.live_calls += 1
        elif self.upstream is None:
            raise RecordingExhausted(
                "the harness asked the model for another response but the recording has none and no live model is allowed",
                trajectory_id=log.trajectory_id,
                step=index,
                expected=f"{len(log.expected)} recorded steps",
                actual=f"model call #{ordinal}",
            )
        else:
            response = self.upstream(body)
            phase = log.record_phase
            self.live_calls += 1
        ref = ModelCallRef(
            stream=self.stream,
            ordinal=ordinal,
            request=_without_secrets(body),
            request_hash=request_hash(body),
            response=response,
            source=source,  # type: ignore[arg-type]
        )
        log.append(agent_step_from_response(index, self.stream, response, ref, phase))
        return response

    def _serve_recorded(self, index: int, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        log = self.log
        expected = log.expected_step(index)
        if expected is None or expected.kind != "agent" or expected.model_call is None:
            what = "nothing" if expected is None else f"a {expected.kind} step"
            raise PromptDrift(
                f"the harness called the model where the seed has {what}",
                trajectory_id=log.trajectory_id,
                step=index,
                expected=what,
                actual="model call",
            )
        recorded = expected.model_call
        want = request_hash(recorded.request)
        got = request_hash(body)
        if want != got:
            err = PromptDrift(
                "the model request differs from the recorded one",
                trajectory_id=log.trajectory_id,
                step=index,
                expected=want,
                actual=got,
                diff=readable_diff(canonical_request(recorded.request), canonical_request(body)),
            )
            if self.strict:
                raise err
            self.divergences.append(err)
        return recorded.response, recorded.source

    def close(self) -> None:
        """Nothing to release: the upstream belongs to whoever created it and outlives this run."""


def refusal(exc: FailforgeError, request: httpx.Request) -> httpx.Response:
    """The boundary's answer to a request it cannot serve: 400 with ``x-should-retry: false``.

    Raising from the transport instead would reach the harness as a connection error, which clients
    retry: the OpenAI SDK when its retries are on, and AgentDojo's ``OpenAILLM`` always (tenacity,
    three attempts, random exponential waits). Each retry sleeps seconds and sends the same request
    to the boundary again. A 400 is retried by neither (nor is a 422), and the OpenAI SDK obeys the
    header whatever the status, so the error surfaces at once, after exactly one request; the typed
    error is in ``failure`` for the caller to re-raise.
    """
    return httpx.Response(
        400,
        headers={"x-should-retry": "false"},
        json={"error": {"message": str(exc), "type": "failforge_boundary", "code": type(exc).__name__}},
        request=request,
    )


def _without_secrets(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k.lower() not in {"api_key", "authorization", "extra_headers"}}
