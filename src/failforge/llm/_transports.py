"""Transports that put a :class:`ModelBoundary` under any client: httpx or httpx2, sync or async.

Every transport reads the request body and asks :meth:`ModelBoundary.answer`, so all of them record,
replay, branch, stream and refuse identically. The async ones run the boundary in a worker thread
(``asyncio.to_thread``): a live upstream call is a blocking HTTP request with retries and backoff,
and an async framework (OpenAI Agents SDK, AutoGen) must keep its event loop running meanwhile. The
boundary's own lock keeps calls that arrive together in one order.

The OpenAI client's HTTP stack is httpx2; it still accepts legacy httpx clients, which is what
:class:`failforge.llm.BoundaryClient` gives it, while frameworks that build their own httpx2 client
get :func:`httpx2_transport` / :func:`httpx2_async_transport`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from failforge.llm._boundary import ModelBoundary
from failforge.llm._identity import AgentIdentity


class AgentTransport(httpx.BaseTransport):
    """Sync httpx: the boundary, with the identity of an explicit per-agent client (or none)."""

    def __init__(self, boundary: ModelBoundary, identity: AgentIdentity | None = None) -> None:
        self.boundary = boundary
        self.identity = identity

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.boundary.handle(request, explicit=self.identity)


class AsyncAgentTransport(httpx.AsyncBaseTransport):
    """Async httpx, for ``openai.AsyncOpenAI``: the boundary runs off the event loop."""

    def __init__(self, boundary: ModelBoundary, identity: AgentIdentity | None = None) -> None:
        self.boundary = boundary
        self.identity = identity

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raw = await request.aread()
        reply = await asyncio.to_thread(self.boundary.answer, request, raw, explicit=self.identity)
        return httpx.Response(reply.status, headers=reply.headers, content=reply.content, request=request)


def httpx2_transport(boundary: ModelBoundary, identity: AgentIdentity | None = None) -> Any:
    """A sync ``httpx2.BaseTransport`` over the boundary (for ``httpx2.Client(transport=...)``)."""
    import httpx2

    class _Httpx2Transport(httpx2.BaseTransport):
        def handle_request(self, request: Any) -> Any:
            reply = boundary.answer(request, request.read(), explicit=identity)
            return httpx2.Response(reply.status, headers=reply.headers, content=reply.content, request=request)

    return _Httpx2Transport()


def httpx2_async_transport(boundary: ModelBoundary, identity: AgentIdentity | None = None) -> Any:
    """An async ``httpx2.AsyncBaseTransport`` over the boundary, off the event loop."""
    import httpx2

    class _Httpx2AsyncTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            raw = await request.aread()
            reply = await asyncio.to_thread(boundary.answer, request, raw, explicit=identity)
            return httpx2.Response(reply.status, headers=reply.headers, content=reply.content, request=request)

    return _Httpx2AsyncTransport()


__all__ = ["AgentTransport", "AsyncAgentTransport", "httpx2_async_transport", "httpx2_transport"]
