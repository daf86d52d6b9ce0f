"""The model boundary: an httpx transport that sits between any OpenAI-client harness and the model.

Every agent step is one chat-completions call through this transport. The run's plan
(:class:`failforge.runlog.Plan`, on the run log) says what happens to the call at each index: served
from the seed (after its request hash is checked), answered by the branch's change, the end of a
prefix replay (the run stops there), or forwarded live. Running out of recorded responses while
replaying is an error, never a silent live call. The boundary only routes; it never decides the mode.

One boundary serves every agent of a run. Each call is attributed to an agent (and, when it is not
that agent's turn proper, a purpose) by :mod:`failforge.llm._identity`; the agent's calls form its
stream (``model_call.stream``, ``ordinal`` counting within it). In replay each agent is served its
own recorded responses in its own order, and the global order is checked too: the call at step t
must come from the agent that made the recorded call at step t, else :class:`AgentDrift` names the
step and both agents.

A failforge error at the boundary (a drift, an exhausted recording, a live call that failed) is kept
as the run log's ``failure`` (the first one wins, whichever boundary met it) so the runner can re-raise
the typed error, and the harness gets :func:`refusal`: an HTTP answer no client retries. Every later
call of a failed run is refused the same way, so nothing more is recorded or spent. The end of a
prefix replay is not a failure: the log is marked ``stopped`` and the call refused with
``prefix_complete``. A drift names the recording's id (not the run's), the step, the agent, and the
recorded requests nearest to the one that matched none.

:meth:`ModelBoundary.answer` is the one entry point every carrier uses (sync and async transports for
httpx and httpx2 in :mod:`failforge.llm._transports`, the stand-alone proxy): a ``stream=True``
request is answered as server-sent events cut from the same completion (:mod:`failforge.llm._stream`),
and a request to any API but chat completions (the Responses API) is refused with
:class:`UnsupportedAPI`, which says how to switch the framework over.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from failforge.canonical import canonical_hash, readable_diff
from failforge.errors import (
    AgentDrift,
    ConfigError,
    FailforgeError,
    InfrastructureError,
    PromptDrift,
    RecordingExhausted,
    SeedIntegrityError,
)
from failforge.images import externalise
from failforge.llm._identity import AgentIdentity, AgentResolver, RequestLike, resolve_identity, route_of
from failforge.llm._request import canonical_request, request_hash
from failforge.llm._stream import SSE_CONTENT_TYPE, sse_body, wants_stream, wants_usage
from failforge.llm._upstream import Responder
from failforge.roster import AgentProfile
from failforge.runlog import RunLog
from failforge.trajectory import ModelCallRef, Step, ToolCall

Injector = Callable[[dict[str, Any]], dict[str, Any]]


class UnsupportedAPI(ConfigError):
    """A request to an API the boundary does not serve (the Responses API, embeddings): refused with an
    explanation of how to switch the framework to chat completions, never answered wrongly."""


@dataclass(frozen=True)
class Reply:
    """An HTTP answer independent of the HTTP library that will carry it."""

    status: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


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
    """The transport every agent's client goes through. ``resolver``: a framework adapter's in-process
    identity source (see :mod:`failforge.llm._identity`); the roster comes from ``log``."""

    def __init__(
        self,
        log: RunLog,
        *,
        upstream: Responder | None = None,
        injector: Injector | None = None,
        strict: bool = True,
        source: str = "model",
        resolver: AgentResolver | None = None,
    ) -> None:
        self.log = log
        self.upstream = upstream
        self.injector = injector
        self.strict = strict
        self.source = source
        self.resolver = resolver
        self.divergences: list[PromptDrift] = []
        self.live_calls = 0
        self.calls_by_agent: Counter[str] = Counter()
        self._lock = threading.RLock()
        self._alock: asyncio.Lock | None = None

    @property
    def failure(self) -> FailforgeError | None:
        """The run's first failure (kept on the run log, shared with the tool boundary)."""
        return self.log.failure

    @property
    def calls(self) -> int:
        """Model calls answered so far (replayed, changed or live)."""
        return sum(self.calls_by_agent.values())

    # --- transport ------------------------------------------------------------------------------

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.handle(request, explicit=None)

    def handle(self, request: httpx.Request, *, explicit: AgentIdentity | None) -> httpx.Response:
        """Serve one HTTP request; ``explicit`` is the identity of a per-agent client, if it came through one."""
        reply = self.answer(request, request.read(), explicit=explicit)
        return httpx.Response(reply.status, headers=reply.headers, content=reply.content, request=request)

    def answer(
        self, request: RequestLike, raw: bytes, *, explicit: AgentIdentity | None, bad_requests_fail_run: bool = True
    ) -> Reply:
        """The reply to one request, independent of the HTTP stack that carried it (httpx, httpx2, the
        run gateway): every transport, sync or async, and every served route answer through here.

        ``bad_requests_fail_run``: whether a request the run cannot place (another API, a body that is
        not JSON, an agent outside a closed roster) fails the run. In process it does (the harness is
        wrong); over HTTP (the gateway, the proxy) it is refused alone and nothing is kept of it.
        """
        reply = self._answer(request, raw, explicit, bad_requests_fail_run, quick=False)
        assert reply is not None
        return reply

    def answer_if_quick(
        self, request: RequestLike, raw: bytes, *, explicit: AgentIdentity | None, bad_requests_fail_run: bool = True
    ) -> Reply | None:
        """:meth:`answer`, but only if the answer needs no model and no wait (a replayed call, a refusal,
        the end of a prefix); None when it would call a model or wait for another call of the run. An
        event loop answers such calls in place instead of handing every one to a worker thread."""
        return self._answer(request, raw, explicit, bad_requests_fail_run, quick=True)

    def _answer(
        self,
        request: RequestLike,
        raw: bytes,
        explicit: AgentIdentity | None,
        bad_requests_fail_run: bool,
        *,
        quick: bool,
    ) -> Reply | None:
        _, path = route_of(request.url.path)
        try:
            if not path.rstrip("/").endswith("/chat/completions"):
                raise UnsupportedAPI(unsupported_message(request.url.path))
            identity = resolve_identity(
                request,
                explicit=explicit,
                resolver=self.resolver,
                default=self._default_agent(),
                known=self.log.agent_names(),
            )
            try:
                body = json.loads(raw or b"{}")
            except ValueError as exc:
                raise ConfigError(f"the model request to {request.url.path} is not JSON: {exc}") from None
            if not isinstance(body, dict):
                raise ConfigError(f"the model request to {request.url.path} is not a JSON object")
        except ConfigError as exc:
            if bad_requests_fail_run:
                self.log.fail(exc)
            return refusal_reply(exc)
        if not self._lock.acquire(blocking=not quick):
            return None  # another call of this run holds the boundary (a live call): wait in a thread, not here
        try:
            if self.log.failure is not None:
                return refusal_reply(self.log.failure)
            action = self.log.plan.action(self.log.next_index)
            if self.log.stopped or action == "stop":
                self._admit(identity)
                self._check_agent(self.log.next_index, identity, self.calls_by_agent[identity.agent], at_branch=True)
                self.log.stopped = True
                return stop_reply(self.log)
            if quick and action in ("live", "change"):
                return None
            response = self.complete(body, identity)
        except ConfigError as exc:
            if bad_requests_fail_run:
                self.log.fail(exc)
            return refusal_reply(exc)
        except FailforgeError as exc:
            return refusal_reply(self.log.fail(exc))
        finally:
            self._lock.release()
        if wants_stream(body):
            return Reply(200, {"content-type": SSE_CONTENT_TYPE}, sse_body(response, include_usage=wants_usage(body)))
        return Reply(200, {"content-type": "application/json"}, json.dumps(response).encode())

    def _default_agent(self) -> str | None:
        names = self.log.agent_names()
        return names[0] if len(names) == 1 else None

    def _admit(self, identity: AgentIdentity) -> None:
        """A closed roster admits only its agents; an open one lets a new agent join."""
        names = self.log.agent_names()
        if identity.agent in names:
            return
        if not self.log.open_roster:
            raise ConfigError(
                f"a model call came from agent {identity.agent!r} (named by {identity.via}), which the harness's roster"
                f" does not have ({', '.join(names)})"
            )
        self.log.join(AgentProfile(name=identity.agent))

    # --- one call -------------------------------------------------------------------------------

    def complete(self, body: dict[str, Any], identity: AgentIdentity | None = None) -> dict[str, Any]:
        """One model call, under the boundary's lock: async transports and served routes call from worker
        threads, and a step's index, the agent's ordinal and the log append must stay one unit."""
        with self._lock:
            return self._complete(body, identity)

    def _complete(self, body: dict[str, Any], identity: AgentIdentity | None) -> dict[str, Any]:
        identity = identity or AgentIdentity(self._default_agent() or "agent", None, "default")
        self._admit(identity)
        log = self.log
        index = log.next_index
        agent = identity.agent
        ordinal = self.calls_by_agent[agent]
        source = self.source
        body_hash = request_hash(body)
        response_hash: str | None = None
        action = log.plan.action(index)
        if action == "replay":
            response, source, response_hash = self._serve_recorded(index, body, body_hash, identity, ordinal)
            phase = "replayed"
        elif action == "change" and self.injector is not None:
            self._check_agent(index, identity, ordinal, at_branch=True)
            # the change answers as the calling agent (a stage-2 injection asks that agent's own model)
            change = (
                self.injector.for_agent(agent, identity.purpose)
                if hasattr(self.injector, "for_agent")
                else self.injector
            )
            response = change(body)
            phase = "injected"
            self.live_calls += 1
        elif action in ("exhausted", "stop") or self.upstream is None:
            raise RecordingExhausted(
                f"agent {agent!r} asked the model for another response but the recording has none and no live model is"
                " allowed",
                trajectory_id=log.seed_id or log.trajectory_id,
                step=index,
                expected=f"{len(log.expected)} recorded steps",
                actual=f"model call #{ordinal} of {agent!r}",
                agent=agent,
            )
        else:
            response = self._responder(identity)(body)
            phase = log.record_phase
            self.live_calls += 1
        self._record(identity, ordinal, body, body_hash, response, response_hash, phase, source)
        return response

    def _responder(self, identity: AgentIdentity) -> Any:
        upstream = self.upstream
        assert upstream is not None
        return upstream.for_agent(identity.agent, identity.purpose) if hasattr(upstream, "for_agent") else upstream

    def _record(
        self,
        identity: AgentIdentity,
        ordinal: int,
        body: dict[str, Any],
        body_hash: str,
        response: dict[str, Any],
        response_hash: str | None,
        phase: str,
        source: str,
    ) -> None:
        agent = identity.agent
        self.calls_by_agent[agent] += 1
        ref = ModelCallRef(
            stream=agent,
            ordinal=ordinal,
            purpose=identity.purpose,
            request=externalise(_without_secrets(body)),  # images stored once by sha256, referenced here
            request_hash=body_hash,
            response=response,
            response_hash=response_hash or canonical_hash(response),
            source=source,  # type: ignore[arg-type]
        )
        self.log.append(agent_step_from_response(self.log.next_index, agent, response, ref, phase))

    # --- the same, on an event loop ---------------------------------------------------------------

    async def answer_async(
        self,
        request: RequestLike,
        raw: bytes,
        *,
        explicit: AgentIdentity | None = None,
        bad_requests_fail_run: bool = True,
    ) -> Reply:
        """:meth:`answer` for an event loop (the run gateway): a replayed call or a refusal is answered in
        place; a live call to an upstream that can be awaited (``acall``: :class:`HttpUpstream`) is awaited,
        so it needs no thread; anything else (a branch's change, a scripted responder) runs in a worker
        thread. The calls of one run are answered one at a time, in the order they arrive."""
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            quick = self._answer(request, raw, explicit, bad_requests_fail_run, quick=True)
            if quick is not None:
                return quick
            pending = self._live(request, raw, explicit)
            if pending is None:
                return await asyncio.to_thread(
                    self.answer, request, raw, explicit=explicit, bad_requests_fail_run=bad_requests_fail_run
                )
            identity, body, responder = pending
            try:
                response = await responder.acall(body)
                with self._lock:
                    ordinal = self.calls_by_agent[identity.agent]
                    self.live_calls += 1
                    self._record(
                        identity, ordinal, body, request_hash(body), response, None, self.log.record_phase, self.source
                    )
            except FailforgeError as exc:
                return refusal_reply(self.log.fail(exc))
            if wants_stream(body):
                return Reply(
                    200, {"content-type": SSE_CONTENT_TYPE}, sse_body(response, include_usage=wants_usage(body))
                )
            return Reply(200, {"content-type": "application/json"}, json.dumps(response).encode())

    def _live(
        self, request: RequestLike, raw: bytes, explicit: AgentIdentity | None
    ) -> tuple[AgentIdentity, dict[str, Any], Any] | None:
        """The (identity, body, responder) of a call that goes to an awaitable live upstream, else None."""
        if self.upstream is None:
            return None
        try:
            identity = resolve_identity(
                request,
                explicit=explicit,
                resolver=self.resolver,
                default=self._default_agent(),
                known=self.log.agent_names(),
            )
            body = json.loads(raw or b"{}")
        except (ConfigError, ValueError):
            return None  # the thread path refuses it with the reason
        with self._lock:
            if (
                not isinstance(body, dict)
                or self.log.failure is not None
                or self.log.plan.action(self.log.next_index) != "live"
            ):
                return None
            try:
                self._admit(identity)
            except ConfigError:
                return None
            responder = self._responder(identity)
        return (identity, body, responder) if hasattr(responder, "acall") else None

    def _check_agent(
        self, index: int, identity: AgentIdentity, ordinal: int, *, at_branch: bool = False
    ) -> Step | None:
        """The call at ``index`` must come from the agent (and purpose) recorded there, as that agent's next call."""
        log = self.log
        expected = log.expected_step(index)
        if expected is None or expected.kind != "agent" or expected.model_call is None:
            if at_branch:
                return None
            what = "nothing" if expected is None else f"a {expected.kind} step"
            raise PromptDrift(
                f"agent {identity.agent!r} called the model where the seed has {what}",
                trajectory_id=log.error_id,
                step=index,
                expected=what,
                actual=f"model call from {identity.agent!r}",
                agent=identity.agent,
            )
        recorded = expected.model_call
        where: dict[str, Any] = {"trajectory_id": log.error_id, "step": index, "agent": identity.agent}
        if identity.agent != expected.agent or identity.agent != recorded.stream:
            later = self._next_recorded(identity.agent, index)
            hint = (
                f"; {identity.agent!r}'s next recorded call is step {later}"
                if later is not None
                else f"; {identity.agent!r} has no later recorded call"
            )
            raise AgentDrift(
                f"step {index} was recorded as a call from agent {expected.agent!r} (stream {recorded.stream!r}), but"
                f" agent {identity.agent!r} called the model here{hint}",
                expected=expected.agent,
                actual=identity.agent,
                diff=f"- agent: {expected.agent}\n+ agent: {identity.agent}",
                **where,
            )
        if recorded.ordinal != ordinal:
            raise AgentDrift(
                f"call #{ordinal} of agent {identity.agent!r} is recorded at step {index} as its call"
                f" #{recorded.ordinal}: this agent's calls are out of their recorded order",
                expected=recorded.ordinal,
                actual=ordinal,
                **where,
            )
        if (recorded.purpose or None) != (identity.purpose or None):
            raise AgentDrift(
                f"agent {identity.agent!r} called the model with purpose {identity.purpose!r} at step {index}, recorded"
                f" with purpose {recorded.purpose!r}",
                expected=recorded.purpose,
                actual=identity.purpose,
                **where,
            )
        return expected

    def _next_recorded(self, agent: str, index: int) -> int | None:
        for step in self.log.expected[index:]:
            if step.kind == "agent" and step.agent == agent:
                return step.index
        return None

    def _serve_recorded(
        self, index: int, body: dict[str, Any], got: str, identity: AgentIdentity, ordinal: int
    ) -> tuple[dict[str, Any], str, str]:
        """The recorded response, its source and its (checked) hash; ``got`` is the request hash of ``body``."""
        expected = self._check_agent(index, identity, ordinal)
        assert expected is not None and expected.model_call is not None
        recorded = expected.model_call
        served_hash = canonical_hash(recorded.response)
        if recorded.response_hash is not None and served_hash != recorded.response_hash:
            raise SeedIntegrityError(
                f"the recorded response of agent {identity.agent!r} at step {index} is not the one recorded (its hash"
                " differs): the record was edited after it was made",
                trajectory_id=self.log.error_id,
                step=index,
                expected=recorded.response_hash,
                actual=served_hash,
                agent=identity.agent,
            )
        want = request_hash(recorded.request)
        if want != got:
            err = PromptDrift(
                f"the model request of agent {identity.agent!r} differs from the recorded one",
                trajectory_id=self.log.error_id,
                step=index,
                expected=want,
                actual=got,
                diff=readable_diff(canonical_request(recorded.request), canonical_request(body)),
                agent=identity.agent,
                nearest=nearest_requests(self.log.expected, body),
            )
            if self.strict:
                raise err
            self.divergences.append(err)
        return recorded.response, recorded.source, served_hash

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
    reply = refusal_reply(exc)
    return httpx.Response(reply.status, headers=reply.headers, content=reply.content, request=request)


def refusal_reply(exc: FailforgeError, status: int = 400, *, note: str = "") -> Reply:
    """:func:`refusal` as a :class:`Reply`: an OpenAI-style JSON error naming the typed error (``note``: more to
    say)."""
    message = explained(exc) + (f"\n{note}" if note else "")
    payload = {"error": {"message": message, "type": "failforge_boundary", "code": type(exc).__name__, "param": None}}
    return Reply(status, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(payload).encode())


def explained(exc: FailforgeError, limit: int = 4000) -> str:
    """The error's message (a drift's already carries its diff and the nearest recorded requests) plus
    what was expected and what came, so a client that only sees the HTTP answer can act on it."""
    text = str(exc)
    expected, actual, diff = getattr(exc, "expected", None), getattr(exc, "actual", None), getattr(exc, "diff", "")
    if expected is not None or actual is not None:
        head, sep, rest = text.partition("\n")
        text = f"{head} (expected: {_short(expected)}; got: {_short(actual)}){sep}{rest}"
    if diff and diff not in text:
        text += f"\n{diff}"
    return text[:limit]


def _short(value: Any, limit: int = 300) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + " ..."


def stop_reply(log: RunLog) -> Reply:
    """The answer to the model call that ends a prefix replay: not a failure, and never retried."""
    message = (
        f"failforge: the replay of {log.seed_id or log.trajectory_id} ends before step {log.plan.until}; this run is"
        " complete and takes no more calls"
    )
    payload = {"error": {"message": message, "type": "failforge_boundary", "code": "prefix_complete", "param": None}}
    return Reply(400, {"content-type": "application/json", "x-should-retry": "false"}, json.dumps(payload).encode())


def nearest_requests(expected: Sequence[Step], body: dict[str, Any], limit: int = 3) -> list[dict[str, Any]]:
    """The recorded requests closest to ``body``, for a request that matched none: ``[{"step", "agent",
    "similarity"}]``, most similar first (ties: the earlier step)."""
    lines = _lines(body)
    scored = []
    for step in expected:
        if step.kind == "agent" and step.model_call is not None:
            scored.append((-round(similarity(lines, _lines(step.model_call.request)), 4), step.index, step.agent))
    return [{"step": i, "agent": agent, "similarity": -score} for score, i, agent in sorted(scored)[:limit]]


def similarity(a: list[str], b: list[str]) -> float:
    """How alike two canonical requests are, by their lines (one JSON value per line), a changed line
    counting by how much of its text changed: one edited word costs less than a rewritten message."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    same = 0.0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            same += 2 * (i2 - i1)
        elif tag == "replace":
            left, right = "\n".join(a[i1:i2]), "\n".join(b[j1:j2])
            same += (i2 - i1 + j2 - j1) * difflib.SequenceMatcher(
                None, left[:4000], right[:4000], autojunk=False
            ).ratio()
    total = len(a) + len(b)
    return same / total if total else 1.0


def _lines(body: dict[str, Any]) -> list[str]:
    return json.dumps(canonical_request(body), sort_keys=True, indent=0, ensure_ascii=False).splitlines()


def unsupported_message(path: str) -> str:
    if path.rstrip("/").endswith("/responses"):
        return (
            f"failforge serves the chat-completions API only, and this request went to the Responses API ({path}): "
            "switch the framework to chat completions (OpenAI Agents SDK: OpenAIChatCompletionsModel or "
            "set_default_openai_api('chat_completions'); langchain-openai: use_responses_api=False; "
            "pydantic-ai: an 'openai-chat:' model)"
        )
    return f"failforge serves POST .../chat/completions only, not {path}"


def _without_secrets(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k.lower() not in {"api_key", "authorization", "extra_headers"}}
