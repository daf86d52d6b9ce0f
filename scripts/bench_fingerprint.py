#!/usr/bin/env python3
"""Benchmark: what one DOM fingerprint costs next to one browser action (MiniWoB++, headless Chromium).

The fingerprint is taken after every tool call during record and replay, so it must stay cheap next to
the action itself (target: <= 30 ms, and a small fraction of an action). Measured per task:

* fingerprint: ``MiniWoBEpisode.fingerprint()`` = one page.evaluate that stamps bids and normalises the
  DOM, plus hashing in Python (median of --repeat runs);
* action: one full tool call as the agent makes it: a click (Playwright actionability checks + trusted
  mouse events), the settle time in virtual ms, and the page reading (median of --repeat clicks on an
  element that toggles, so the episode never ends).

Usage: python scripts/bench_fingerprint.py [--repeat 30] [--tasks click-checkboxes email-inbox-reply ...]
Needs Chromium (bash scripts/install_browser.sh) and the browser extra (playwright, miniwob).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from failforge.environments.miniwob import MiniWoBEpisode, parse_observation

#: task -> how to find an element whose click does not end the episode.
TOGGLES = {
    "click-checkboxes": lambda nodes: next(n for n in nodes if n.tag == "input" and n.attrs.get("type") == "checkbox"),
    "click-collapsible-2": lambda nodes: next(n for n in nodes if n.tag == "h3"),
    "use-spinner": lambda nodes: next(n for n in nodes if "ui-spinner-up" in n.classes),
    "email-inbox-reply": lambda nodes: next(n for n in nodes if n.tag == "span" and "star" in n.classes),
    "click-tab-2": lambda nodes: next(n for n in nodes if n.tag == "a" and n.text == "Tab #2"),
}


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def bench(task: str, repeat: int, cache_dir: str) -> dict[str, float]:
    with MiniWoBEpisode(task, 1, cache_dir=cache_dir) as episode:
        episode.fingerprint()  # warm up (first evaluate compiles the script)
        fp_times, snapshot_parts = [], 0
        for _ in range(repeat):
            started = time.perf_counter()
            fp = episode.fingerprint()
            fp_times.append(time.perf_counter() - started)
            snapshot_parts = len(fp.parts)
        # Benchmark only: cancel MiniWoB's episode timer, so --repeat clicks never run past its time limit.
        episode.page.evaluate("() => clearTimeout(core.EP_TIMER)")
        target = TOGGLES[task](parse_observation(episode.observe()))
        action_times = []
        for _ in range(repeat):
            started = time.perf_counter()
            result = episode.act("click", {"bid": target.bid})
            action_times.append(time.perf_counter() - started)
            if result.error:
                raise SystemExit(f"{task}: the benchmark click failed: {result.error}")
        fp_ms, act_ms = _ms(fp_times), _ms(action_times)
        return {
            "fingerprint_ms": fp_ms,
            "action_ms": act_ms,
            "ratio": fp_ms / act_ms,
            "nodes": float(snapshot_parts),
            "settle_ms": float(episode.config.settle_ms),
        }


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--tasks", nargs="*", default=list(TOGGLES))
    return parser


def main() -> None:
    args = arguments().parse_args()
    unknown = [t for t in args.tasks if t not in TOGGLES]
    if unknown:
        raise SystemExit(f"no benchmark action for {unknown}; choose from {', '.join(TOGGLES)}")
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        for task in args.tasks:
            row = bench(task, args.repeat, cache_dir)
            rows.append(row)
            print(
                f"{task:22s} parts={int(row['nodes']):4d}  fingerprint {row['fingerprint_ms']:6.2f} ms   action"
                f" {row['action_ms']:7.2f} ms   ratio {row['ratio']:.3f}",
                flush=True,
            )
    fp = statistics.median(r["fingerprint_ms"] for r in rows)
    act = statistics.median(r["action_ms"] for r in rows)
    print(
        f"median over tasks: fingerprint {fp:.2f} ms, action {act:.2f} ms (settle {rows[0]['settle_ms']:.0f} virtual"
        f" ms), ratio {fp / act:.3f}"
    )
    print(
        "target: fingerprint <= 30 ms and small next to the action:",
        "MET" if fp <= 30 and fp / act <= 0.5 else "NOT MET",
    )


if __name__ == "__main__":
    main()
