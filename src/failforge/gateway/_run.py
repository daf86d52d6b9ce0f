"""One run as the gateway serves it: its model boundary behind OpenAI routes, its tools behind MCP.

Tool calls that arrive over HTTP are run on the thread that owns the run (:class:`OwnerThread`): an
environment may be bound to the thread that opened it (Playwright's sync API, a thread's sandbox
pool), so the run's own thread executes every call while it waits for the agent, and no environment
needs code of its own to be served. A run with no owner thread (the proxy's) runs calls in the
worker thread that received them.
"""

from __future__ import annotations

import concurrent.futures
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from failforge.environments import Toolbox
from failforge.errors import FailforgeError, InfrastructureError
from failforge.llm import ModelBoundary, Reply
from failforge.runlog import RunLog

T = TypeVar("T")


class OwnerThread:
    """Jobs submitted from any thread, executed by the thread that calls :meth:`pump`."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = queue.Queue()
        self.closed = False

    def submit(self, job: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self.closed:
            future.set_exception(InfrastructureError("the run is over; its tools take no more calls"))
            return future
        self._jobs.put((job, future))
        return future

    def wake(self) -> None:
        """Make a waiting :meth:`pump` return at once (the agent process ended)."""
        self._jobs.put(None)

    def pump(self, timeout: float) -> bool:
        """Run the jobs that arrive within ``timeout`` seconds, one at a time; False once woken."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return True
            try:
                item = self._jobs.get(timeout=left)
            except queue.Empty:
                return True
            if item is None:
                return False
            job, future = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(job())
                except BaseException as exc:  # handed to the waiting request
                    future.set_exception(exc)

    def close(self) -> None:
        """Refuse every job still queued (the run is over)."""
        self.closed = True
        while True:
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1].set_exception(InfrastructureError("the run ended before this tool call could run"))


@dataclass(frozen=True)
class _Url:
    path: str


@dataclass(frozen=True)
class RoutedRequest:
    """What the model boundary reads of a served request: the path after the run's prefix, and the headers."""

    url: _Url
    headers: Any

    @classmethod
    def of(cls, path: str, headers: Any) -> RoutedRequest:
        return cls(_Url(path), headers)


class ServedRun:
    """A run the gateway serves: ``boundary`` answers its model routes, ``tools`` (optional) its MCP route;
    ``token`` is the capability a request must carry to reach it."""

    def __init__(
        self, run_id: str, boundary: ModelBoundary, tools: Toolbox | None = None, *, owner: OwnerThread | None = None
    ) -> None:
        self.id = run_id
        self.token = secrets.token_hex(16)
        """The run's capability: every request for the run carries it (in the URLs the gateway hands out, or a
        header), so knowing or guessing the id alone neither drives, finishes nor reads the run."""
        self.boundary = boundary
        self.tools = tools
        self.owner = owner
        self.model_calls = 0
        self._schemas: list[dict[str, Any]] | None = None
        self.validators: dict[str, Any] = {}
        """Per tool, its input schema's validator (built once per run, by the MCP server)."""
        self.first_call: float | None = None
        self.last_activity: float | None = None
        """``time.monotonic()`` of the first model call, and of the last answer to a model or tool call."""
        self._lock = threading.Lock()

    @property
    def log(self) -> RunLog:
        return self.boundary.log

    # --- models ---------------------------------------------------------------------------------

    def model_reply(self, path: str, headers: Any, raw: bytes, *, quick: bool = False) -> Reply | None:
        """One model call. A request the run cannot place is refused alone; a drift fails the run, and
        every later call is refused with it. ``quick``: answer only if no model and no wait is needed
        (a replayed call), else None — the caller then answers it in a worker thread (a live call blocks)."""
        with self._lock:
            if self.first_call is None:
                self.first_call = time.monotonic()
        request = RoutedRequest.of(path, headers)
        try:
            if quick:
                reply = self.boundary.answer_if_quick(request, raw, explicit=None, bad_requests_fail_run=False)
            else:
                reply = self.boundary.answer(request, raw, explicit=None, bad_requests_fail_run=False)
            if reply is not None:
                with self._lock:
                    self.model_calls += 1
            return reply
        finally:
            self.last_activity = time.monotonic()

    async def model_reply_async(self, path: str, headers: Any, raw: bytes) -> Reply:
        """One model call on the gateway's event loop (see :meth:`ModelBoundary.answer_async`)."""
        with self._lock:
            if self.first_call is None:
                self.first_call = time.monotonic()
            self.model_calls += 1
        try:
            return await self.boundary.answer_async(
                RoutedRequest.of(path, headers), raw, explicit=None, bad_requests_fail_run=False
            )
        finally:
            self.last_activity = time.monotonic()

    def model_reply_blocking(self, path: str, headers: Any, raw: bytes) -> Reply:
        reply = self.model_reply(path, headers, raw)
        assert reply is not None
        return reply

    # --- tools ----------------------------------------------------------------------------------

    def schemas(self) -> list[dict[str, Any]]:
        """The run's tool schemas, read once: they do not change during a run, and an environment may
        build them afresh on every request (AgentDojo generates each tool's JSON schema)."""
        if self._schemas is None:
            self._schemas = [] if self.tools is None else list(self.tools.schemas())
        return self._schemas

    def call_tool(self, name: str, arguments: dict[str, Any], problem: str | None) -> tuple[str, bool]:
        """Run one tool call here (a run with no owner thread); ``problem``: why the arguments do not fit
        the tool's schema, in which case the call is recorded as refused and never run."""
        try:
            return self._call(name, arguments, problem)
        finally:
            self.last_activity = time.monotonic()

    def submit_tool(
        self, name: str, arguments: dict[str, Any], problem: str | None
    ) -> concurrent.futures.Future[tuple[str, bool]]:
        """The tool call handed to the run's own thread (the caller awaits the future: one thread hop)."""
        assert self.owner is not None
        return self.owner.submit(lambda: self.call_tool(name, arguments, problem))

    def _call(self, name: str, arguments: dict[str, Any], problem: str | None) -> tuple[str, bool]:
        tools = self.tools
        assert tools is not None
        call_id = pending_call_id(self.log, name, arguments)
        try:
            refuse = getattr(tools, "refuse", None)
            if problem is not None and refuse is not None:
                refuse(name, arguments, call_id, problem)
                return problem, True
            text = tools.call(name, json.dumps(arguments), call_id)
        except FailforgeError as exc:  # the run's failure (the first one wins); the agent is told
            self.log.fail(exc)
            return f"failforge: {type(exc).__name__}: {exc.args[0] if exc.args else exc}".splitlines()[0], True
        last = self.log.steps[-1] if self.log.steps else None
        return text, bool(last is not None and last.kind == "tool" and last.error is not None)


def pending_call_id(log: RunLog, name: str, arguments: dict[str, Any], lookback: int = 4) -> str | None:
    """The id of the model's tool call this MCP call carries out: the latest call of ``name`` with these
    arguments that no tool step has answered yet, among the last ``lookback`` model calls that asked for
    tools (MCP does not carry the model's call id; the call being run belongs to one of them)."""
    answered: set[str] = set()
    seen = 0
    for step in reversed(log.steps):
        if step.kind == "tool":
            if step.tool_call_id:
                answered.add(step.tool_call_id)
            continue
        if step.kind != "agent" or not step.tool_calls:
            continue
        for call in step.tool_calls:
            if call.name == name and call.id not in answered and call.parsed_arguments() == arguments:
                return call.id
        seen += 1
        if seen >= lookback:
            return None
    return None


__all__ = ["OwnerThread", "RoutedRequest", "ServedRun", "pending_call_id"]
