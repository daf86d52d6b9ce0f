"""Which agent made a model call: one boundary serves every agent of a run and must tell them apart.

An identity is an agent name plus, for calls that are not the agent's turn proper (a plan, a progress
ledger, a speaker choice), a purpose. It is resolved in this order, the first source that names an
agent winning:

1. an **explicit per-agent client** (:meth:`failforge.llm.BoundaryClient.for_agent`): the client was
   made for that agent, so its transport carries the identity;
2. a **per-agent route**: the request goes to ``/agents/{name}/v1/chat/completions`` (a framework
   that takes a base URL per agent, or a process talking to the proxy);
3. the header ``X-Failforge-Agent`` (and ``X-Failforge-Purpose``) on the request;
4. an **in-process resolver** a framework adapter supplies (for frameworks whose agents share one
   client, e.g. AutoGen's Magentic-One: the adapter reads the message-handler context);
5. otherwise the run's only agent; with several agents that is an error, never a guess.

The purpose comes from the explicit client, else the request's ``X-Failforge-Purpose`` header, else the
resolver when it names the same agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

from failforge.errors import ConfigError

AGENT_HEADER = "X-Failforge-Agent"
PURPOSE_HEADER = "X-Failforge-Purpose"
_ROUTE = re.compile(r"^/agents/(?P<agent>[^/]+)(?P<rest>/.*)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclass(frozen=True)
class AgentIdentity:
    agent: str
    purpose: str | None = None
    via: str = "explicit"
    """Which source named the agent: explicit, route, header, resolver or default (kept for error messages)."""


class RequestLike(Protocol):
    """What identity resolution and the boundary read of a request: an httpx or httpx2 request, or the proxy's own."""

    @property
    def url(self) -> Any: ...

    @property
    def headers(self) -> Any: ...


#: Supplied by a framework adapter: the identity of the agent whose code is running now, or None.
AgentResolver = Callable[[], "AgentIdentity | None"]


def route_of(path: str) -> tuple[str | None, str]:
    """``(agent, rest)`` for ``/agents/{agent}/v1/...``; ``(None, path)`` for any other path."""
    match = _ROUTE.match(path)
    if match is None:
        return None, path
    return unquote(match.group("agent")), match.group("rest")


def agent_route(base_url: str, agent: str) -> str:
    """The per-agent base URL under a boundary or proxy root: ``http://host/agents/{agent}/v1``."""
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return f"{root}/agents/{agent}/v1"


def valid_name(agent: str) -> str:
    if not _NAME.match(agent):
        # never a hostile name echoed whole
        shown = repr(agent) if len(agent) <= 64 else f"{agent[:64]!r}... ({len(agent)} characters)"
        raise ConfigError(f"{shown} is not a usable agent name (letters, digits, and _ . : - only, at most 128)")
    return agent


def resolve_identity(
    request: RequestLike,
    *,
    explicit: AgentIdentity | None,
    resolver: AgentResolver | None,
    default: str | None,
    known: list[str],
) -> AgentIdentity:
    """The identity of the agent behind ``request`` (see the module docstring for the order)."""
    header_agent = request.headers.get(AGENT_HEADER) or None
    header_purpose = request.headers.get(PURPOSE_HEADER) or None
    from_resolver = resolver() if resolver is not None else None
    route_agent, _ = route_of(request.url.path)
    if explicit is not None:
        agent, via = explicit.agent, "explicit"
    elif route_agent is not None:
        agent, via = route_agent, "route"
    elif header_agent is not None:
        agent, via = header_agent, "header"
    elif from_resolver is not None:
        agent, via = from_resolver.agent, "resolver"
    elif default is not None:
        agent, via = default, "default"
    else:
        agent = via = ""
    if agent:
        # A purpose belongs to the request (header) or to a source that names this same agent.
        purpose = (
            (explicit.purpose if explicit is not None else None)
            or header_purpose
            or (from_resolver.purpose if from_resolver is not None and from_resolver.agent == agent else None)
        )
        return AgentIdentity(valid_name(agent) if via != "default" else agent, purpose, via)
    raise ConfigError(
        f"a model call came from an unidentified agent, and this run has several ({', '.join(known)}): give each agent "
        f"its own client (BoundaryClient.for_agent), the route /agents/{{name}}/v1, or the header {AGENT_HEADER}"
    )


__all__ = [
    "AGENT_HEADER",
    "PURPOSE_HEADER",
    "AgentIdentity",
    "AgentResolver",
    "RequestLike",
    "agent_route",
    "resolve_identity",
    "route_of",
]
