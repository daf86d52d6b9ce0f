"""A loopback HTTP server for the ``miniwob`` package's ``html`` folder, owned by failforge.

MiniWoB++ pages load their scripts and styles by relative URL, so they must come from an HTTP origin
(``file://`` breaks some tasks). failforge starts this server itself: bound to 127.0.0.1 only, on a
port the OS picks (port 0), in a daemon thread, stopped when the episode closes. The browser never
talks to it directly: the route handler fetches from it on a cache miss in record mode (see
``_network.py``), so the port never leaks into a URL, a cache key or a fingerprint.
"""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from failforge.errors import ConfigError


def miniwob_html_dir() -> Path:
    """The ``html`` folder shipped inside the ``miniwob`` PyPI package."""
    try:
        import miniwob
    except ImportError as exc:
        raise ConfigError(
            "the MiniWoB++ environment needs the miniwob package: pip install 'failforge[browser]'"
        ) from exc
    path = Path(miniwob.__file__).resolve().parent / "html"
    if not (path / "miniwob").is_dir() or not (path / "core" / "core.js").is_file():
        raise ConfigError(
            f"the installed miniwob package has no html/miniwob folder at {path}; reinstall it: pip install"
            " --force-reinstall 'miniwob>=1.0'"
        )
    return path


def miniwob_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("miniwob")
    except PackageNotFoundError:  # pragma: no cover - depends on the install
        return "unknown"


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files, no access log on stderr (a test run would print one line per page asset)."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature fixed by the base class
        return


class LoopbackServer:
    """Serves one directory on 127.0.0.1:<random port> until :meth:`stop`. Context manager."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory is not None else miniwob_html_dir()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> LoopbackServer:
        if self._httpd is not None:
            return self
        handler = functools.partial(_QuietHandler, directory=str(self.directory))
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="failforge-miniwob-http", daemon=True
        )
        thread.start()
        self._httpd, self._thread = httpd, thread
        return self

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("LoopbackServer.base_url read before start()")
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
