"""Headless Chromium through Playwright's sync API, with everything the page could vary on pinned.

ONE fresh browser context per episode: nothing (cookies, storage, HTTP cache, bid counter) leaks from
one run into the next. The Chromium process itself is reused by later episodes of the same thread
(launching one costs about a second, more than a whole MiniWoB episode); a browser that crashed or was
killed is dropped and the next episode launches a new one. The context pins viewport, device scale,
locale, timezone, colour
scheme and reduced motion; Playwright's fake clock is installed and paused at the recorded instant,
so ``Date``, ``performance.now``, ``setTimeout``/``setInterval`` and ``requestAnimationFrame`` move
only when the episode runs virtual time (:meth:`BrowserSession.run_for`); an init script replaces
``Math.random`` with a seeded generator before any page script runs. All of it comes from
:class:`~failforge.environments.miniwob._config.MiniWoBConfig`, which the trajectory records.

Infrastructure is told apart from agent mistakes here: a crashed renderer, a dead browser process or
a call that outlives the watchdog becomes :class:`~failforge.errors.InfrastructureError`; anything
else a Playwright call raises is left to the caller to report to the agent as a tool error.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from failforge.environments.miniwob._config import MiniWoBConfig
from failforge.errors import ConfigError, InfrastructureError

#: Messages Playwright uses when the browser side is gone (crash, kill, disconnect).
_DEAD_BROWSER_MARKERS = (
    "target crashed",
    "page crashed",
    "has been closed",
    "browser closed",
    "browser has disconnected",
    "connection closed",
    "target closed",
    "websocket closed",
    "pipe closed",
)

_SEEDED_RANDOM_JS = """
(() => {
  let s = %d >>> 0;
  // mulberry32: a tiny seeded PRNG, so scripts that draw before MiniWoB's Math.seedrandom() are reproducible too.
  const random = function () {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  Object.defineProperty(Math, 'random', {value: random, writable: true, configurable: true, enumerable: false});
})();
"""


def playwright_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("playwright")
    except PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _clock_instant(text: str) -> _dt.datetime:
    try:
        instant = _dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ConfigError(
            f"miniwob clock {text!r} is not an ISO-8601 instant (e.g. 2024-05-15T10:00:00+00:00)"
        ) from exc
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=_dt.UTC)


class _SharedBrowser:
    """A Playwright driver + Chromium process owned by one thread, reused across that thread's episodes."""

    def __init__(self, executable: str, args: tuple[str, ...], launch_timeout_s: float) -> None:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright

        self.token = uuid.uuid4().hex
        self.thread = threading.get_ident()
        self.disconnected = False
        try:
            self.pw = sync_playwright().start()
        except PlaywrightError as exc:
            raise InfrastructureError(f"Playwright's driver did not start: {exc}") from exc
        except RuntimeError as exc:  # "using Playwright Sync API inside the asyncio loop"
            raise ConfigError(
                f"Playwright's sync API cannot run here: {exc}. Run MiniWoB episodes in a worker thread without an"
                " event loop."
            ) from exc
        try:
            self.browser = self.pw.chromium.launch(
                executable_path=executable,
                headless=True,
                args=[*args, f"--failforge-session={self.token}"],
                timeout=launch_timeout_s * 1000,
            )
        except PlaywrightError as exc:
            with contextlib.suppress(Exception):
                self.pw.stop()
            kill_marked(self.token)
            raise InfrastructureError(f"Chromium ({executable}) did not start: {str(exc).splitlines()[0]}") from exc
        self.browser.on("disconnected", lambda *_: setattr(self, "disconnected", True))

    def alive(self) -> bool:
        try:
            return not self.disconnected and self.browser.is_connected()
        except Exception:
            return False

    def close(self) -> None:
        if threading.get_ident() == self.thread:
            with contextlib.suppress(Exception):
                self.browser.close()
            with contextlib.suppress(Exception):
                self.pw.stop()
        kill_marked(self.token)


_local = threading.local()
_all_shared: list[_SharedBrowser] = []
_all_lock = threading.Lock()


def _acquire(executable: str, args: tuple[str, ...], launch_timeout_s: float) -> _SharedBrowser:
    pool: dict[tuple[str, tuple[str, ...]], _SharedBrowser] = getattr(_local, "pool", None) or {}
    _local.pool = pool
    key = (executable, args)
    shared = pool.get(key)
    if shared is not None and not shared.alive():
        shared.close()
        shared = None
    if shared is None:
        shared = _SharedBrowser(executable, args, launch_timeout_s)
        pool[key] = shared
        with _all_lock:
            _all_shared.append(shared)
    return shared


def _discard(shared: _SharedBrowser) -> None:
    pool = getattr(_local, "pool", None) or {}
    for key, value in list(pool.items()):
        if value is shared:
            del pool[key]
    shared.close()


def close_browsers() -> None:
    """Close the Chromium processes this thread keeps for reuse (they are also closed at exit)."""
    for shared in list((getattr(_local, "pool", None) or {}).values()):
        _discard(shared)


@atexit.register
def _close_all_at_exit() -> None:
    with _all_lock:
        for shared in _all_shared:
            shared.close()
        _all_shared.clear()


def kill_marked(token: str) -> None:
    """SIGKILL the Chromium processes launched with ``--failforge-session=<token>`` (ours only)."""
    for pid in marked_pids(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def marked_pids(token: str) -> list[int]:
    """PIDs whose command line carries ``--failforge-session=<token>``: exactly the processes we launched."""
    marker = f"--failforge-session={token}".encode()
    pids: list[int] = []
    proc = Path("/proc")
    for entry in proc.iterdir() if proc.is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


class BrowserSession:
    """One pinned context + page on this thread's shared Chromium. Not thread-safe: one per episode."""

    def __init__(self, config: MiniWoBConfig) -> None:
        self.config = config
        self._shared: _SharedBrowser | None = None
        self.context: Any = None
        self.page: Any = None
        self.crashed = False
        self._expired: str | None = None

    @property
    def token(self) -> str:
        return self._shared.token if self._shared is not None else "none"

    @property
    def browser(self) -> Any:
        return self._shared.browser if self._shared is not None else None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Any:
        """Open the pinned context and page (launching Chromium if this thread has none); returns the page."""
        cfg = self.config
        if not Path(cfg.chromium).exists():
            raise ConfigError(f"Chromium not found at {cfg.chromium}; install it with: bash scripts/install_browser.sh")
        try:
            from playwright.sync_api import Error as PlaywrightError
        except ImportError as exc:
            raise ConfigError(
                "the MiniWoB++ environment needs Playwright: pip install 'failforge[browser]' (Chromium comes from"
                " Debian, not `playwright install`)"
            ) from exc
        instant = _clock_instant(cfg.clock)
        self._shared = _acquire(cfg.chromium, tuple(cfg.chromium_args), cfg.operation_timeout_s)
        try:
            self.context = self._shared.browser.new_context(
                viewport={"width": cfg.viewport.width, "height": cfg.viewport.height},
                device_scale_factor=cfg.device_scale_factor,
                locale=cfg.locale,
                timezone_id=cfg.timezone,
                color_scheme="light",
                reduced_motion="reduce",
                service_workers="block",
                accept_downloads=False,
            )
            self.context.set_default_timeout(cfg.action_timeout_ms)
            self.context.set_default_navigation_timeout(cfg.operation_timeout_s * 1000)
            self.context.clock.install(time=instant)
            self.context.clock.pause_at(instant)
            self.context.add_init_script(_SEEDED_RANDOM_JS % (cfg.math_random_seed & 0xFFFFFFFF))
            self.page = self.context.new_page()
            self.page.on("crash", lambda *_: setattr(self, "crashed", True))
        except PlaywrightError as exc:
            shared, self._shared = self._shared, None
            _discard(shared)
            raise InfrastructureError(
                f"Chromium ({cfg.chromium}) could not open a page: {str(exc).splitlines()[0]}"
            ) from exc
        return self.page

    @property
    def version(self) -> str:
        return str(self.browser.version) if self.browser is not None else "unknown"

    def close(self) -> None:
        """Close this episode's context; drop the shared browser too if it crashed or was killed."""
        shared, context = self._shared, self.context
        self._shared = self.context = self.page = None
        if context is not None:
            with contextlib.suppress(Exception):
                context.close()
        if shared is not None and (self.crashed or self._expired is not None or not shared.alive()):
            _discard(shared)

    def own_pids(self) -> list[int]:
        """PIDs of the Chromium processes behind this session (found by the browser's command-line token)."""
        return marked_pids(self.token) if self._shared is not None else []

    # ------------------------------------------------------------------ time

    def run_for(self, ms: int) -> None:
        """Advance the paused virtual clock by ``ms``, firing timers and animation frames due in it."""
        if ms > 0:
            self.page.clock.run_for(ms)

    # ------------------------------------------------------------------ infrastructure

    @contextlib.contextmanager
    def guard(self, what: str, *, agent_errors: bool = False) -> Iterator[None]:
        """Run browser calls under the watchdog; a dead browser or an overrun is an InfrastructureError.

        With ``agent_errors`` (an agent's action), other Playwright errors pass through for the caller to
        report as tool errors; without it (failforge's own reading, settling, loading), any Playwright
        error means the browser misbehaved and is an InfrastructureError too.
        """
        from playwright.sync_api import Error as PlaywrightError

        timer = threading.Timer(self.config.operation_timeout_s, self._expire, args=(what,))
        timer.daemon = True
        timer.start()
        try:
            yield
        except PlaywrightError as exc:
            infra = self.infrastructure_error(exc, what)
            if infra is not None:
                raise infra from exc
            if agent_errors:
                raise
            first = str(exc).split("Call log:")[0].strip().splitlines()
            raise InfrastructureError(
                f"the browser failed while {what}: {first[0] if first else type(exc).__name__}"
            ) from exc
        finally:
            timer.cancel()
        if self._expired is not None:
            raise self._overrun()

    def _overrun(self) -> InfrastructureError:
        return InfrastructureError(
            f"the browser did not answer within {self.config.operation_timeout_s:g}s while {self._expired}; it was"
            " stopped"
        )

    def infrastructure_error(self, exc: BaseException, what: str) -> InfrastructureError | None:
        """The InfrastructureError ``exc`` stands for, or None when it is an ordinary (agent-level) failure."""
        if self._expired is not None:
            return self._overrun()
        message = str(exc).lower()
        page_closed = self.page is None or self._safe(lambda: self.page.is_closed(), True)
        browser_gone = self._shared is None or not self._shared.alive()
        if self.crashed or page_closed or browser_gone or any(m in message for m in _DEAD_BROWSER_MARKERS):
            cause = "the page crashed" if self.crashed or "crash" in message else "the browser is gone"
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return InfrastructureError(
                f"{cause} while {what} ({first}); the run says nothing about the seed and may be retried"
            )
        return None

    def check_alive(self, what: str) -> None:
        """Raise InfrastructureError if the browser or page died since the last call."""
        if (
            self.crashed
            or self.page is None
            or self._shared is None
            or not self._shared.alive()
            or self._safe(lambda: self.page.is_closed(), True)
        ):
            raise InfrastructureError(
                f"the browser is gone ({'the page crashed' if self.crashed else 'disconnected'}) before {what}; the run"
                " says nothing about the seed and may be retried"
            )

    @staticmethod
    def _safe(fn: Any, default: Any) -> Any:
        try:
            return fn()
        except Exception:
            return default

    def _expire(self, what: str) -> None:
        self._expired = what
        if self._shared is not None:
            kill_marked(self._shared.token)
