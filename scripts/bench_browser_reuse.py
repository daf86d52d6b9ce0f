#!/usr/bin/env python3
"""Benchmark: can a MiniWoB++ episode's browser context be reset or made ahead instead of made fresh?

A fresh context + page is the largest fixed cost of a MiniWoB++ episode (``bench_attempt_cpu.py``:
about 270 of its 510 ms open). A warm pool would be worth having only if the page an episode gets
from it is indistinguishable from a fresh one and cheaper to get. This script measures both, in one
Chromium (Debian's, with failforge's pinned arguments), set up the way ``_browser.py`` sets up an
episode (context options, Playwright's clock installed and paused at the recorded instant, seeded
``Math.random`` init script), on a page served by a route handler as ``_network.py`` serves MiniWoB:

- ``fresh``: context and page made on the spot (today's episode), with the time of each call;
- ``made ahead``: the same calls made earlier, untouched until the episode; the navigation then;
- ``same context``: the previous episode's context kept (its page closed, a new page, routes and
  storage left to a reset through the public API: clear_cookies and a new page);
- ``reset (internal)``: Playwright's internal ``newContextForReuse`` (what its test runner's reuse
  mode calls: clock log removed, storage and cookies cleared, page sent to about:blank).

For each, the page a previous episode dirtied (localStorage, sessionStorage, a cookie, IndexedDB, a
second navigation, seconds of virtual time) is followed by the new episode's, and a probe of the
new page (Date.now and performance.now at load, the first Math.random draws, history.length, both
storages, cookies, IndexedDB databases, the DOM) is compared with a fresh page's. Keys that already
differ between two fresh pages (real-time noise) are reported apart. Medians in ms.

    python scripts/bench_browser_reuse.py [--rounds 8]
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from failforge.environments.miniwob._browser import _SEEDED_RANDOM_JS
from failforge.environments.miniwob._config import CHROMIUM_ARGS, CHROMIUM_EXECUTABLE, DEFAULT_CLOCK

OPTIONS: dict[str, Any] = {
    "viewport": {"width": 500, "height": 320},
    "device_scale_factor": 1.0,
    "locale": "en-US",
    "timezone_id": "UTC",
    "color_scheme": "light",
    "reduced_motion": "reduce",
    "service_workers": "block",
    "accept_downloads": False,
}
PAGE = (
    "<html><body><div id=task>click the button</div><button id=b>ok</button><script>window.atLoad = {now: Date.now(),"
    " perf: performance.now(), random: [Math.random(), Math.random()], history: history.length, local:"
    " localStorage.length, session: sessionStorage.length, cookie: document.cookie};</script></body></html>"
)
PROBE = """async () => ({
  atLoad: window.atLoad, now: Date.now(), history: history.length,
  local: JSON.stringify(Object.assign({}, localStorage)), session: JSON.stringify(Object.assign({}, sessionStorage)),
  cookie: document.cookie,
  databases: indexedDB.databases ? (await indexedDB.databases()).map(d => d.name).sort() : null,
  dom: document.documentElement.outerHTML,
})"""
DIRTY = """async () => {
  localStorage.setItem('left', 'over'); sessionStorage.setItem('left', 'over'); document.cookie = 'left=over';
  await new Promise(done => { const open = indexedDB.open('leftover'); open.onsuccess = open.onerror = () => done(); });
}"""
URL = "http://miniwob.failforge/miniwob/probe.html"
INSTANT = dt.datetime.fromisoformat(DEFAULT_CLOCK)


def _serve(route: Any) -> None:
    route.fulfill(body=PAGE, content_type="text/html")


class Bench:
    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.ms: dict[str, list[float]] = {}

    def timed(self, name: str, fn: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return fn()
        finally:
            self.ms.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    def fresh(self, label: str) -> tuple[Any, Any]:
        context = self.timed(f"{label}: new_context", lambda: self.browser.new_context(**OPTIONS))
        self.timed(
            f"{label}: clock + init script",
            lambda: (
                context.clock.install(time=INSTANT),
                context.clock.pause_at(INSTANT),
                context.add_init_script(_SEEDED_RANDOM_JS % 1),
            ),
        )
        page = self.timed(f"{label}: new_page", context.new_page)
        return context, page

    def episode(self, label: str, context: Any, page: Any) -> dict[str, Any]:
        page.route("**/*", _serve)
        self.timed(f"{label}: goto", lambda: page.goto(URL, wait_until="load"))
        context.clock.run_for(500)
        probe: dict[str, Any] = page.evaluate(PROBE)
        probe["context cookies"] = context.cookies()
        return probe

    def dirty(self, context: Any, page: Any) -> None:
        page.evaluate(DIRTY)
        page.goto(URL + "?second", wait_until="load")
        context.clock.run_for(3000)


def _reset_kept(context: Any) -> None:
    context.clear_cookies()
    context.new_page()


def _diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    keys = sorted(set(a) | set(b))
    out = {}
    for key in keys:
        if key == "atLoad":
            for sub in sorted(set(a[key]) | set(b[key])):
                if a[key].get(sub) != b[key].get(sub):
                    out[f"atLoad.{sub}"] = (a[key].get(sub), b[key].get(sub))
        elif a.get(key) != b.get(key):
            out[key] = (a.get(key), b.get(key))
    return out


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    from playwright._impl._sync_base import mapping
    from playwright.sync_api import sync_playwright

    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM_EXECUTABLE, headless=True, args=list(CHROMIUM_ARGS))
    bench = Bench(browser)
    impl = browser._impl_obj  # the internal API is what is being measured
    diffs: dict[str, dict[str, tuple[Any, Any]]] = {}
    try:
        for _ in range(args.rounds):
            # fresh, twice: the reference, and what differs between two fresh pages anyway
            context, page = bench.fresh("fresh")
            reference = bench.episode("fresh", context, page)
            bench.dirty(context, page)
            bench.timed("fresh: close", context.close)
            context, page = bench.fresh("fresh")
            diffs.setdefault("fresh vs fresh", {}).update(_diff(reference, bench.episode("fresh", context, page)))
            # same context, kept: new page, cookies cleared (what the public API can reset)
            bench.dirty(context, page)
            page.close()
            bench.timed("same context: clear_cookies + new_page", functools.partial(_reset_kept, context))
            page = context.pages[-1]
            diffs.setdefault("same context", {}).update(_diff(reference, bench.episode("same context", context, page)))
            context.close()
            # made ahead: a fresh context + page made before the previous episode ends, navigated later
            ahead = bench.fresh("made ahead")
            time.sleep(0.3)
            diffs.setdefault("made ahead", {}).update(_diff(reference, bench.episode("made ahead", *ahead)))
            ahead[0].close()
            # Playwright's internal reset (test runner reuse mode)
            context = mapping.from_impl(browser._sync(impl._new_context_for_reuse(dict(OPTIONS))))
            context.clock.install(time=INSTANT)
            context.clock.pause_at(INSTANT)
            context.add_init_script(_SEEDED_RANDOM_JS % 1)
            page = context.pages[0] if context.pages else context.new_page()
            bench.episode("reset (internal)", context, page)
            bench.dirty(context, page)
            page.unroute_all()
            context = bench.timed(
                "reset (internal): newContextForReuse",
                lambda: mapping.from_impl(browser._sync(impl._new_context_for_reuse(dict(OPTIONS)))),
            )
            try:
                context.clock.install(time=INSTANT)
                context.clock.pause_at(INSTANT)
                page = context.pages[0] if context.pages else context.new_page()
                diffs.setdefault("reset (internal)", {}).update(
                    _diff(reference, bench.episode("reset (internal)", context, page))
                )
            except Exception as exc:  # noqa: BLE001 - a reset that cannot even run an episode is a finding
                diffs.setdefault("reset (internal)", {})["error"] = (None, str(exc).splitlines()[0])
            browser._sync(impl._disconnect_from_reused_context("bench"))
    finally:
        browser.close()
        pw.stop()
    print(f"median ms over {args.rounds} rounds; load average {load} at start ({CHROMIUM_EXECUTABLE})")
    for name, samples in bench.ms.items():
        print(f"  {name:<44} {statistics.median(samples):>8.1f}")
    noise = set(diffs.get("fresh vs fresh", {}))
    print(
        "\nwhat a new episode's page sees that a fresh page's does not (vs a fresh page; * = differs between two fresh"
        " pages too):"
    )
    for name, diff in diffs.items():
        if name == "fresh vs fresh":
            continue
        shown = dict(diff)
        print(f"  {name}: " + ("identical" if not shown else ""))
        for key, (want, got) in shown.items():
            mark = "*" if key in noise else " "
            print(
                f"    {mark} {key}: fresh {json.dumps(want, default=str)[:90]} / here"
                f" {json.dumps(got, default=str)[:90]}"
            )
    print(f"  (between two fresh pages: {', '.join(sorted(noise)) or 'nothing'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
