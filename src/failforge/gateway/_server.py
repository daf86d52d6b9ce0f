"""An ASGI app served by uvicorn on loopback, in a thread of this process.

failforge's servers (the run gateway, the proxy) serve recorded conversations and spend upstream keys,
so they bind to loopback only (:func:`require_loopback`), and they live exactly as long as the
command that started them: the server thread is stopped by :meth:`LoopbackServer.stop` (and at exit).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from typing import Any

from failforge.errors import ConfigError, InfrastructureError


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
        config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False, timeout_keep_alive=60, server_header=False, proxy_headers=False,
                                date_header=False, ws="none")
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


__all__ = ["LoopbackServer", "require_loopback"]
