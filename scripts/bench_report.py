#!/usr/bin/env python3
"""Benchmark: size and load time of `failforge report` for a 1,000-record dataset.

The records are synthesised from real ones: every record of a source dataset folder (default: the
demo records in tests/fixtures/labels with the bundled seeds) is copied with a new id and attempt id
until there are --records of them, two thirds gold and one third rejected, so step text, tool
outputs and verdicts are the real ones. Measured:

* build: reading the folder, the summary (realism probe included) and writing the HTML;
* size of the HTML file, in total and per record;
* load: headless Chromium, from navigation to the viewer's ready flag (median of --repeat loads);
* open: clicking one record in the list until its view is shown (median of --repeat clicks).

Usage: python scripts/bench_report.py [--records 1000] [--source OUT_FOLDER] [--repeat 5]
Needs Chromium (bash scripts/install_browser.sh) and playwright.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from failforge.report import load_dataset, summarise, write_report
from failforge.trajectory import append_jsonl, load_jsonl

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "labels" / "demo_gold_agentdojo.jsonl"
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
CHROMIUM = "/usr/bin/chromium"


def synthesise(target: Path, n: int, source: Path | None) -> Path:
    """Write a dataset folder of ``n`` records copied from real ones."""
    if source is not None:
        records, _ = load_jsonl(source / "gold.jsonl")
        seeds = json.loads((source / "manifest.json").read_text())["config"]["seeds"]
    else:
        records, _ = load_jsonl(FIXTURES)
        seeds = [str(BUNDLED)]
    if not records:
        raise SystemExit(f"no gold records to copy in {source or FIXTURES}")
    from failforge.campaign import Rejection

    gold, rejected = [], []
    for i in range(n):
        base = records[i % len(records)]
        copy = base.model_copy(deep=True, update={"id": f"gold-bench{i:06d}"})
        copy.provenance["attempt_id"] = f"{base.parent_id}@{copy.label.decisive_step}:{copy.label.mode_code}#{i}"
        if i % 3 == 2:
            label = copy.label
            copy.label = None
            rejected.append(
                Rejection(
                    attempt_id=copy.provenance["attempt_id"],
                    seed_id=label.seed_id,
                    step=label.decisive_step,
                    mode=label.mode_code,
                    sample=i,
                    status="rejected",
                    stage="filters",
                    reasons=["note_leak: synthesised rejection"],
                    verdicts=label.filter_verdicts,
                    note=label.steering_note,
                    trajectory=copy,
                )
            )
        else:
            gold.append(copy)
    append_jsonl(target / "gold.jsonl", gold)
    append_jsonl(target / "rejected.jsonl", rejected)
    (target / "manifest.json").write_text(
        json.dumps({"config_hash": "bench", "planned_attempts": n, "config": {"seeds": seeds}})
    )
    return target


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument(
        "--source", type=Path, default=None, help="a campaign output folder whose gold records are copied"
    )
    parser.add_argument("--repeat", type=int, default=5)
    return parser


def main() -> None:
    args = arguments().parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        folder = synthesise(Path(tmp) / "ds", args.records, args.source)
        started = time.perf_counter()
        ds = load_dataset(folder)
        path = write_report(ds, Path(tmp) / "report.html", summarise(ds))
        build = time.perf_counter() - started
        size = path.stat().st_size
        loads, opens = [], []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--headless"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                page.goto(path.as_uri())
                page.wait_for_selector("body[data-ready='1']")
                loads.append(time.perf_counter() - t0)
            page.click("#tab-records")
            rows = page.locator("#record-list tr.row")
            for k in range(args.repeat):
                t0 = time.perf_counter()
                rows.nth(k * 7).click()
                page.wait_for_function(
                    "id => document.querySelector('#rv-title') &&"
                    " document.querySelector('#rv-title').textContent.startsWith(id)",
                    arg=rows.nth(k * 7).get_attribute("data-id"),
                )
                opens.append(time.perf_counter() - t0)
            browser.close()
    n = len(ds.records)
    load, opened = statistics.median(loads), statistics.median(opens)
    print(
        f"records: {n} ({sum(r.status == 'gold' for r in ds.records)} gold,"
        f" {sum(r.status == 'rejected' for r in ds.records)} rejected)"
    )
    print(f"build (read + summary + HTML): {build:.2f} s = {build / n * 1000:.2f} ms per record")
    print(f"size: {size / 1024 / 1024:.2f} MiB = {size / n / 1024:.1f} KiB per record")
    print(
        f"load in headless Chromium (median of {args.repeat}): {load * 1000:.0f} ms = {load / n * 1000:.2f} ms per"
        " record"
    )
    print(f"open one record (median of {args.repeat}): {opened * 1000:.0f} ms; open / load = {opened / load:.2f}")


if __name__ == "__main__":
    main()
