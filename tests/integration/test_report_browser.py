"""The HTML report in real headless Chromium: it loads from disk with no network, and its record viewer
shows what a reviewer needs (seed vs branch, identical prefix with its hash, decisive step, note,
verdicts, evaluator). The records are the demo records of tests/fixtures/labels, with the bundled seeds.
Set FAILFORGE_REPORT_SCREENSHOT=path to keep the record-view screenshot somewhere else than tmp.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from _required import require
from failforge.campaign import Rejection
from failforge.judgement import deterministic_verdict
from failforge.report import load_dataset, prefix_hash, summarise, write_report
from failforge.trajectory import FilterVerdict, append_jsonl, load_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "labels"
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.slow


@pytest.fixture()
def report_file(tmp_path) -> tuple[Path, Path]:
    out = tmp_path / "ds"
    gold, _ = load_jsonl(FIXTURES / "demo_gold_agentdojo.jsonl")
    parents = {s.id: s for s in load_jsonl(BUNDLED)[0]}
    for record in gold:
        t = record.label.decisive_step
        record.provenance["conformance"] = deterministic_verdict(
            parents[record.parent_id], record.steps[t], t, record.label.mode_code
        ).model_dump(mode="json")
    append_jsonl(out / "gold.jsonl", gold)
    copy = gold[2].model_copy(deep=True)
    label = copy.label
    copy.label = None
    append_jsonl(
        out / "rejected.jsonl",
        [
            Rejection(
                attempt_id="rejected@1:R.3#1",
                seed_id=label.seed_id,
                step=label.decisive_step,
                mode="R.3",
                sample=1,
                status="rejected",
                stage="filters",
                reasons=["mode_conformance: R.3 not exhibited"],
                verdicts=[FilterVerdict(name="mode_conformance", passed=False, reason="R.3 not exhibited")],
                note=label.steering_note,
                trajectory=copy.model_copy(update={"id": "gold-rejectedcopy1"}),
            )
        ],
    )
    (out / "manifest.json").write_text(
        json.dumps({"config_hash": "h", "planned_attempts": 6, "config": {"seeds": [str(BUNDLED)]}})
    )
    ds = load_dataset(out)
    return write_report(ds, tmp_path / "report.html", summarise(ds)), out


def test_report_opens_offline_and_shows_a_record(report_file, tmp_path):
    # Playwright's sync API allows one instance per thread, and the MiniWoB++ environment keeps a browser
    # alive per thread once a test has used it: the report is looked at from a thread of its own.
    failures: list[BaseException] = []

    def look() -> None:
        try:
            _look_at_the_report(report_file, tmp_path)
        except BaseException as exc:  # re-raised in the test's own thread below
            failures.append(exc)

    viewer = threading.Thread(target=look, name="report-viewer")
    viewer.start()
    viewer.join()
    if failures:
        raise failures[0]


def _look_at_the_report(report_file, tmp_path):
    require("chromium")
    import playwright.sync_api as sync_api

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}; install it with: bash scripts/install_browser.sh")
    path, out = report_file
    seed = {s.id: s for s in load_jsonl(BUNDLED)[0]}["agentdojo-workspace-user_task_0-oracle"]
    outside: list[str] = []
    errors: list[str] = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--headless"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on(
                "request",
                lambda r: outside.append(r.url) if not r.url.startswith(("file:", "data:", "about:")) else None,
            )
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            assert page.inner_text("[data-stat=kept] .num") == "5"
            assert page.inner_text("[data-stat=kept-conformant] .num") == "0 / 5"
            assert "V.2" in page.inner_text("#conformance-table")
            assert page.is_visible("figure[data-chart=mode] svg")

            page.click("#tab-records")
            page.select_option("#f-mode", "R.3")
            assert page.inner_text("#count") == "2 of 6 records"
            page.select_option("#f-status", "gold")
            assert page.inner_text("#count") == "1 of 6 records"
            page.select_option("#f-mode", "")
            page.select_option("#f-status", "")

            page.click("#record-list tr.row[data-id='gold-b6a94873f8f3']")
            page.wait_for_selector("#record-view:not([hidden])")
            assert page.inner_text("#rv-mode") == "V.2" and page.inner_text("#rv-step") == "1"
            assert page.inner_text("#rv-identical") == "identical"
            assert page.inner_text("#rv-hash") == prefix_hash(seed.steps[:1])[:16]
            assert "search_calendar_events" in page.inner_text("#rv-original")
            assert page.inner_text("#rv-injected").startswith("The agent is not allowed to send a payment")
            assert "decisive" in (page.get_attribute("#rv-injected", "class") or "")
            assert "send a payment now with amount 100.0" in page.inner_text("#rv-note")
            verdicts = page.inner_text("#rv-verdicts")
            for name in ("evaluator_failure", "note_leak", "gold_exposure", "differs", "well_formed"):
                assert name in verdicts
            assert "not exhibited" in page.inner_text("#rv-conformance")
            assert "agentdojo.utility" in page.inner_text("#rv-evaluator")
            page.click("#rv-prefix summary")
            assert "Networking event" in page.inner_text("#rv-prefix")
            shot = Path(os.environ.get("FAILFORGE_REPORT_SCREENSHOT") or tmp_path / "record_view.png")
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            page.goto(path.as_uri() + "#record=gold-0cf396fb841d")  # a deep link opens that record
            page.wait_for_selector("#record-view:not([hidden])")
            assert page.inner_text("#rv-mode") == "R.4" and page.inner_text("#rv-step") == "3"
        finally:
            browser.close()
    assert outside == [], f"the report fetched from the network: {outside}"
    assert errors == []
