"""Everything that pins a MiniWoB++ episode, recorded in the trajectory's environment spec.

A browser run is reproducible only if the page sees the same world every time: the same task and
episode seed, the same viewport, locale and timezone, the same clock, the same ``Math.random`` before
MiniWoB seeds its own generator, the same pages (served from the tool cache) and the same amount of
virtual time between actions. All of that is one pydantic model, stored verbatim in
``Trajectory.environment.config``, so ``open_episode(spec)`` rebuilds the identical episode.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.environments.miniwob._dom import NORMALISER_VERSION

#: Debian's chromium (scripts/install_browser.sh); Playwright's own browser download is never used.
CHROMIUM_EXECUTABLE = "/usr/bin/chromium"
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Re-rasterising only the invalidated part of a tile anti-aliases a half-pixel-positioned element
    # (click-dialog's close button sits at y=79.5) differently depending on how many frames the page drew
    # before the screenshot, which varies with load: the same page gave two PNGs, 6 of 12 loads each.
    # Full-tile raster makes the pixels a function of the page alone (16 of 16 identical).
    "--disable-partial-raster",
)
#: A host that never resolves: pages are addressed under it so that URLs (in the DOM fingerprint and
#: in cache keys) do not depend on the loopback server's random port. Every request to it is answered
#: by the route handler, from the cache or from the loopback server.
VIRTUAL_ORIGIN = "http://miniwob.failforge"
DEFAULT_CLOCK = "2024-05-15T10:00:00+00:00"
DEFAULT_SETTLE_MS = 500
CacheModeName = Literal["record", "replay", "off"]


def default_cache_dir() -> str:
    """Where page loads are cached unless a spec says otherwise (``FAILFORGE_CACHE_DIR`` overrides)."""
    root = os.environ.get("FAILFORGE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "failforge")
    return str(Path(root) / "miniwob-http")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Viewport(_Model):
    width: int = Field(default=500, ge=100, description="MiniWoB's own window size (miniwob.constants.WINDOW_WIDTH)")
    height: int = Field(default=320, ge=100)


class DomFault(_Model):
    """A scripted page mutation, for fidelity self-tests only: proves that replay catches a changed node.

    ``after_action`` counts tool calls of this episode from 0; -1 means before the first observation.
    """

    after_action: int = Field(ge=-1)
    script: str = Field(
        min_length=1, description="JavaScript run in the page, e.g. document.querySelector('#subbtn').textContent = 'X'"
    )


class MiniWoBConfig(_Model):
    """The recorded, complete description of one MiniWoB++ episode."""

    task: str = Field(description="MiniWoB++ task name, e.g. 'click-button' (html/miniwob/<task>.html)")
    seed: int = Field(description="episode seed, passed to Math.seedrandom before core.startEpisodeReal()")
    data_mode: str = Field(default="train", description="core.setDataMode(...), as miniwob's own environment sets it")
    random_seed: int | None = Field(
        default=None, description="seed of the Math.random installed before any page script; None = seed"
    )
    viewport: Viewport = Field(default_factory=Viewport)
    device_scale_factor: float = 1.0
    locale: str = "en-US"
    timezone: str = "UTC"
    clock: str = Field(default=DEFAULT_CLOCK, description="ISO instant the fake clock starts (and stays paused) at")
    settle_ms: int = Field(
        default=DEFAULT_SETTLE_MS,
        ge=0,
        le=60_000,
        description="virtual ms run after every action so animations and timers finish",
    )
    action_timeout_ms: int = Field(
        default=1500, ge=100, description="real-time wait for an element to become actionable"
    )
    operation_timeout_s: float = Field(
        default=60.0, gt=0, description="watchdog: a browser call taking longer is an infrastructure failure"
    )
    origin: str = VIRTUAL_ORIGIN
    cache_dir: str = Field(default_factory=default_cache_dir)
    cache_mode: CacheModeName = Field(
        default="record",
        description=(
            "record: serve recorded pages, fetch and store the rest; replay: a request with no recording is a CacheMiss"
            " (except in the live steps after a branch point, which fetch and record); off: always fetch, never store"
        ),
    )
    screenshots: bool = False
    action_space: Literal["bid", "coordinate"] = Field(
        default="bid",
        description=(
            "bid: tools name elements by bid; coordinate: click(x, y), type, key, scroll on the screenshot (implies"
            " screenshots)"
        ),
    )
    screenshot_dir: str | None = Field(
        default=None, description="where screenshots are stored by sha256; default <cache_dir>/../screenshots"
    )
    chromium: str = CHROMIUM_EXECUTABLE
    chromium_args: tuple[str, ...] = CHROMIUM_ARGS
    normaliser: str = NORMALISER_VERSION
    dom_faults: tuple[DomFault, ...] = Field(
        default=(), description="fidelity self-tests only; empty on every real seed"
    )

    @property
    def math_random_seed(self) -> int:
        return self.seed if self.random_seed is None else self.random_seed

    @property
    def start_url(self) -> str:
        return f"{self.origin.rstrip('/')}/miniwob/{self.task}.html"

    def screenshot_directory(self) -> Path:
        if self.screenshot_dir:
            return Path(self.screenshot_dir)
        if (
            self.action_space == "coordinate"
        ):  # the screenshots the model sees: the boundary's image store, so each is stored once
            from failforge.images import default_image_dir

            return default_image_dir()
        return Path(self.cache_dir).parent / "screenshots"
