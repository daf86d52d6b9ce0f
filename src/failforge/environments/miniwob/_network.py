"""Every request the page makes goes through the SHA-256 tool cache (tool ``http``).

Page loads are the browser's stateless tool calls: the same URL always means the same bytes, so they
belong in the cache, not in the live world. A ``page.route("**/*")`` handler answers every request:

* requests to the episode's virtual origin are looked up in :class:`failforge.cache.ToolCache` under
  ``{"method", "url"}`` (plus a body hash for requests with a body). On a miss, in record mode the
  response is fetched from failforge's loopback server and stored; in strict mode the miss becomes a
  :class:`~failforge.errors.CacheMiss` naming the URL;
* any other URL is blocked: the episode is offline by construction, in record and replay alike.

A Playwright route handler cannot raise into the caller, and an unanswered request would hang the
page; so the handler aborts the request and parks the typed error, and the episode raises it right
after the browser call that triggered it (:meth:`PageNetwork.raise_pending`). The step then fails
with ``CacheMiss`` instead of timing out.
"""

from __future__ import annotations

import base64
import hashlib
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from failforge.cache import ToolCache
from failforge.environments.miniwob._server import LoopbackServer
from failforge.errors import CacheMiss, FailforgeError, InfrastructureError

TOOL_NAME = "http"
#: Bump when the stored response shape changes.
CACHE_VERSION = "miniwob-http/1"
_FETCH_TIMEOUT_S = 30.0


class PageNetwork:
    """The route handler of one page, plus the errors it could not raise itself."""

    def __init__(
        self, *, origin: str, cache: ToolCache | None, server: LoopbackServer, strict: Callable[[], bool]
    ) -> None:
        self.origin = origin.rstrip("/")
        self.cache = cache
        self.server = server
        self.strict = strict
        self.failures: list[FailforgeError] = []
        self.blocked: list[str] = []
        self.requests: list[str] = []
        # urllib honours *_proxy variables; the loopback server must never be reached through a proxy.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # ------------------------------------------------------------------ the handler

    def handle(self, route: Any) -> None:
        request = route.request
        url = str(request.url)
        try:
            if not self._ours(url):
                self.blocked.append(url)
                route.abort("blockedbyclient")
                return
            body = request.post_data_buffer
            response = self._lookup(str(request.method), url, body)
            route.fulfill(
                status=int(response["status"]),
                headers={"content-type": str(response["content_type"]), "cache-control": "no-store"},
                body=base64.b64decode(response["body_b64"]),
            )
        except FailforgeError as exc:
            self.failures.append(exc)
            self._abort(route)
        except Exception as exc:  # a bug or an I/O failure inside the handler must not hang the page
            self.failures.append(InfrastructureError(f"request {url} could not be served: {type(exc).__name__}: {exc}"))
            self._abort(route)

    @staticmethod
    def _abort(route: Any) -> None:
        try:
            route.abort("failed")
        except Exception:  # the page may already be gone; the parked error says what happened
            pass

    def _ours(self, url: str) -> bool:
        parts = urlsplit(url)
        mine = urlsplit(self.origin)
        return (parts.scheme, parts.netloc) == (mine.scheme, mine.netloc)

    # ------------------------------------------------------------------ cache

    def cache_args(self, method: str, url: str, body: bytes | None) -> dict[str, Any]:
        args: dict[str, Any] = {"method": method.upper(), "url": url}
        if body:
            args["body_sha256"] = hashlib.sha256(body).hexdigest()
        return args

    def _lookup(self, method: str, url: str, body: bytes | None) -> dict[str, Any]:
        self.requests.append(f"{method} {url}")
        args = self.cache_args(method, url, body)
        if self.cache is None:
            return self._fetch(method, url, body)
        self.cache.mode = "replay" if self.strict() else "record"
        try:
            result, _key, _hit = self.cache.call(
                TOOL_NAME, args, lambda: self._fetch(method, url, body), version=CACHE_VERSION
            )
        except CacheMiss as miss:
            raise CacheMiss(
                f"page request {method.upper()} {url} has no recording in the tool cache at {self.cache.directory} "
                "(cache_mode=replay). Replay it with the cache_dir it was recorded with, or record the seed again. "
                f"Cache says: {miss.message}",
                expected=miss.expected,
                actual=miss.actual,
                diff=miss.diff,
            ) from miss
        return result

    def _fetch(self, method: str, url: str, body: bytes | None) -> dict[str, Any]:
        """Fetch from the loopback server (started on first use): the only live network access."""
        self.server.start()
        parts = urlsplit(url)
        target = self.server.base_url + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request = urllib.request.Request(target, data=body, method=method.upper())
        try:
            with self._opener.open(request, timeout=_FETCH_TIMEOUT_S) as response:
                status, content_type, data = response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as exc:
            status, content_type, data = (
                exc.code,
                exc.headers.get("Content-Type", "") if exc.headers else "",
                exc.read(),
            )
        except (urllib.error.URLError, OSError) as exc:
            raise InfrastructureError(f"the loopback MiniWoB server did not answer {target}: {exc}") from exc
        return {
            "status": int(status),
            "content_type": content_type or "application/octet-stream",
            "body_b64": base64.b64encode(data).decode("ascii"),
        }

    # ------------------------------------------------------------------ errors

    def raise_pending(self) -> None:
        """Raise the first error the handler parked (then forget them all)."""
        if self.failures:
            first, self.failures = self.failures[0], []
            raise first

    def keys_used(self) -> list[str]:
        return self.cache.keys_used() if self.cache is not None else []
