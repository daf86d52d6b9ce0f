"""What the gateway checks before any route runs: who is asking (Host, Origin), and what they send (depth).

A page in a browser can reach a loopback server through DNS rebinding (a name that resolves to the
attacker's address first and to 127.0.0.1 next): the browser then sends the attacker's name as
``Host`` and its page's ``Origin``. :class:`HostGuard` answers only requests whose ``Host`` is a
loopback name or the bound address, on the bound port, and whose ``Origin`` (when sent) is the same,
before anything else sees them; a request without ``Host`` is refused too. :class:`Shield` is the
outermost layer: an exception that escapes the app (a client that hung up, a bug) is one log line, and
if nothing was answered yet, the documented JSON error is. :func:`depth_problem` bounds how deeply a
JSON body nests, so a 50,000-deep body is a 400 instead of a recursion error somewhere downstream.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The deepest nesting of arrays and objects a JSON body may have.
MAX_JSON_DEPTH = 400
#: The names every loopback server answers to, whatever address it is bound to.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: How much of a client-given value (a run id, a Host header) a message quotes.
QUOTE_LIMIT = 64

log = logging.getLogger("failforge.gateway")
#: A run's capability token in a path segment (``/runs/{id}~{token}/...``).
_TOKEN = re.compile(r"~[^/]*")


def quoted(value: str, limit: int = QUOTE_LIMIT) -> str:
    """``value`` for a message: repr'd, and cut after ``limit`` characters (a run id may be 100,000 long)."""
    if len(value) <= limit:
        return repr(value)
    return repr(value[:limit]) + f"... ({len(value)} characters)"


def split_host(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (``[v6]:port`` for IPv6) as (lowercased host, port or None); None when malformed."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/@\\ \t?#"):
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text_ = value.partition(":")
        if ":" in port_text_:
            return None
        port_text = port_text_ if sep else None
    if port_text is None:
        return host, None
    if not port_text.isdigit() or len(port_text) > 5:
        return None
    return host, int(port_text)


class HostGuard:
    """Refuses (421 for ``Host``, 403 for ``Origin``) every request not addressed to this loopback server.

    ``bound`` gives the (host, port) the server listens on, or None before it is started (then any port
    of a loopback name is accepted: an app not served on a socket has no port of its own).
    """

    def __init__(
        self, app: ASGIApp, bound: Callable[[], tuple[str, int] | None], refuse: Callable[[int, str, str], Any]
    ) -> None:
        self.app = app
        self.bound = bound
        self.refuse = refuse

    def problem(self, host_header: str | None, origin: str | None) -> tuple[int, str, str] | None:
        """Why a request with these headers is refused (status, message, code), or None."""
        bound = self.bound()
        names = set(LOOPBACK_NAMES)
        port = None
        if bound is not None:
            host, port = bound
            names.add(f"[{host}]" if ":" in host else host)
        if host_header is None:
            return (
                421,
                "the request has no Host header; failforge answers only requests addressed to its own loopback address",
                "host_refused",
            )
        parsed = split_host(host_header)
        if parsed is None or not self._ours(parsed, names, port, default=80):
            return (
                421,
                (
                    f"Host {quoted(host_header)} is not this server: failforge answers only its own loopback address "
                    f"({', '.join(sorted(names))}{f' on port {port}' if port else ''})"
                ),
                "host_refused",
            )
        if origin is not None:
            scheme, sep, rest = origin.partition("://")
            parsed_origin = split_host(rest) if sep and scheme.lower() == "http" else None
            if parsed_origin is None or not self._ours(parsed_origin, names, port, default=80):
                return (
                    403,
                    f"Origin {quoted(origin)} is not this server's own origin: a web page cannot use failforge's API",
                    "origin_refused",
                )
        return None

    @staticmethod
    def _ours(parsed: tuple[str, int | None], names: set[str], port: int | None, *, default: int) -> bool:
        host, given = parsed
        if host not in names:
            return False
        return port is None or (given if given is not None else default) == port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = None
        hosts = 0
        for name, value in scope.get("headers", ()):
            if name == b"host":
                hosts += 1
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1")
        problem = (
            (421, "the request has more than one Host header", "host_refused")
            if hosts > 1
            else self.problem(host, origin)
        )
        if problem is not None:
            await self.refuse(*problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class Shield:
    """The outermost layer: nothing escapes as a traceback; a request not yet answered gets the JSON 500.

    A client that hung up mid-request (a dropped connection, a cancelled agent) is one log line at
    INFO; any other escaping exception is one line at ERROR naming its type and message.
    """

    def __init__(self, app: ASGIApp, refuse: Callable[[int, str, str], Any]) -> None:
        self.app = app
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the app's last word: one line, and an answer if none was given
            path = _TOKEN.sub("~***", str(scope.get("path", "")))  # a log line never holds a run's token
            where = f"{scope.get('method', '?')} {quoted(path)}"
            if _dropped(exc):
                log.info("failforge gateway: the client of %s hung up before its answer", where)
                return
            first = (str(exc).splitlines() or [""])[0][:300]
            log.error("failforge gateway: %s failed: %s: %s", where, type(exc).__name__, first)
            if not started:
                try:
                    await self.refuse(
                        500, f"failforge could not answer this request: {type(exc).__name__}", "internal_error"
                    )(scope, receive, send)
                except Exception:  # the client is gone too
                    return


def _dropped(exc: BaseException) -> bool:
    import anyio

    if isinstance(
        exc,
        (ClientDisconnect, ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream),
    ):
        return True
    group = exc.exceptions if isinstance(exc, BaseExceptionGroup) else ()
    return bool(group) and all(_dropped(e) for e in group)


def depth_problem(raw: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Why ``raw`` (a JSON body) nests too deeply, or None. Cheap for ordinary bodies: one that holds
    fewer brackets than ``limit`` cannot nest deeper, and only a body with more is parsed and walked."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return None
    try:
        data = json.loads(raw)
    except RecursionError:
        return f"the JSON body nests deeper than {limit} levels"
    except ValueError:
        return None  # not JSON: the route says so in its own words
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return f"the JSON body nests deeper than {limit} levels"
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return None


__all__ = ["LOOPBACK_NAMES", "MAX_JSON_DEPTH", "HostGuard", "Shield", "depth_problem", "quoted", "split_host"]
