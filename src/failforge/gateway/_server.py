"""An ASGI app served by uvicorn on loopback, in a thread of this process.

failforge's servers (the run gateway, the proxy) serve recorded conversations and spend upstream keys,
so they bind to loopback only (:func:`require_loopback`), and they live exactly as long as the
command that started them: the server thread is stopped by :meth:`LoopbackServer.stop` (and at exit).
A client holds a connection only within bounds: its headers within :data:`HEADER_TIMEOUT` seconds, its
body within the gateway's body timeout, and an idle keep-alive connection :data:`IDLE_TIMEOUT` seconds.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from typing import Any

from failforge.errors import ConfigError, InfrastructureError

#: Seconds a connection may stay open between requests (keep-alive), and with no request at all.
IDLE_TIMEOUT = 60
#: Seconds a client has to send a request's headers, from its connection (or the request's first byte).
HEADER_TIMEOUT = 10.0
#: Bytes of request line and headers a request may have (h11; httptools caps them itself).
MAX_HEADER_BYTES = 64 * 1024


def _protocol() -> Any:
    """uvicorn's HTTP protocol, with a deadline on a request's headers: uvicorn bounds the idle time after a
    response (keep-alive) but not a client that connects and then sends its headers a byte at a time, or
    never; that client's connection is closed after :data:`HEADER_TIMEOUT` seconds."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as Base
    except ImportError:  # no httptools: h11, whose incomplete-event size limit bounds the headers' size only
        return "h11"

    class HeaderDeadlineProtocol(Base):  # type: ignore[misc, valid-type]
        _header_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._header_deadline = self.loop.call_later(HEADER_TIMEOUT, self._headers_too_slow)

        def _disarm(self) -> None:
            if self._header_deadline is not None:
                self._header_deadline.cancel()
                self._header_deadline = None

        def _headers_too_slow(self) -> None:
            self._header_deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadlineProtocol


def require_loopback(host: str) -> str:
    """A failforge server listens on loopback only (127.0.0.1, ::1, localhost)."""
    if host == "localhost":
        return host
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ConfigError(f"failforge serves on loopback only (127.0.0.1, ::1 or localhost), not {host!r}")


class LoopbackServer:
    """uvicorn serving ``app`` on a loopback socket bound before start (port 0: any free port)."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0, name: str = "failforge-server") -> None:
        import uvicorn

        host = require_loopback(host)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
        # without it a keep-alive client's delayed ACK holds every response body back about 40 ms.
        self._socket = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self._socket.bind((host, port))
        except OSError as exc:
            self._socket.close()
            raise ConfigError(f"failforge cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self._socket.listen(2048)
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_keep_alive=IDLE_TIMEOUT,
            server_header=False,
            proxy_headers=False,
            date_header=False,
            ws="none",
            http=_protocol(),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._error: BaseException | None = None

    def _serve(self) -> None:
        try:
            # uvloop and httptools when installed (uvicorn's "auto"), as uvicorn's own run() would choose
            with asyncio.Runner(loop_factory=self._server.config.get_loop_factory()) as runner:
                runner.run(self._server.serve(sockets=[self._socket]))
        except BaseException as exc:  # surfaced by start()
            self._error = exc

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server is bound to."""
        host, port = self._socket.getsockname()[:2]
        return host, port

    @property
    def base_url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host if ':' not in host else f'[{host}]'}:{port}"

    def start(self, timeout: float = 30.0) -> LoopbackServer:
        self._thread.start()
        end = time.monotonic() + timeout
        while not self._server.started:
            if self._error is not None or not self._thread.is_alive():
                raise InfrastructureError(f"the loopback server did not start: {self._error!r}")
            if time.monotonic() > end:
                raise InfrastructureError(f"the loopback server did not start within {timeout:.0f} s")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout)
        self._socket.close()

    def wait(self) -> None:
        """Block until the server stops (a foreground ``failforge proxy``)."""
        while self._thread.is_alive():
            self._thread.join(0.2)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = ["HEADER_TIMEOUT", "IDLE_TIMEOUT", "LoopbackServer", "require_loopback"]
