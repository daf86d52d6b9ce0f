"""`failforge report` and `failforge show` on a dataset folder made of real records.

The folder holds the demo records of tests/fixtures/labels as gold (as the demo wrote them), one of
them again as a filter rejection with its verdicts, a guide-stage rejection and a failed attempt,
written through the campaign's own ``Rejection`` model; the seeds are the bundled demo seeds.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from failforge.campaign import Rejection
from failforge.errors import ConfigError
from failforge.judgement import deterministic_verdict
from failforge.report import load_dataset, prefix_hash, render_record, render_report, summarise
from failforge.trajectory import FilterVerdict, append_jsonl, load_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "labels"
BUNDLED = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


def make_dataset(out: Path, *, seeds: Path | None = BUNDLED) -> Path:
    gold, _ = load_jsonl(FIXTURES / "demo_gold_agentdojo.jsonl")
    parents = {s.id: s for s in load_jsonl(BUNDLED)[0]}
    for record in gold:
        label = record.label
        record.provenance["guide_kind"] = "model"
        record.provenance["conformance"] = deterministic_verdict(
            parents[record.parent_id], record.steps[label.decisive_step], label.decisive_step, label.mode_code
        ).model_dump(mode="json")
    append_jsonl(out / "gold.jsonl", gold)
    first = gold[0].model_copy(deep=True)
    label = first.label
    first.label = None
    rejected = Rejection(
        attempt_id="seed@1:V.2#9",
        seed_id=label.seed_id,
        step=label.decisive_step,
        mode=label.mode_code,
        sample=9,
        status="rejected",
        stage="filters",
        reasons=["note_leak: step 1 speaks of the agent in the third person"],
        verdicts=[
            FilterVerdict(name="evaluator_failure", passed=True, reason="failed"),
            FilterVerdict(name="note_leak", passed=False, reason="step 1 speaks of the agent in the third person"),
        ],
        note=label.steering_note,
        trajectory=first.model_copy(update={"id": "gold-rejected00001"}),
        provenance={"guide_kind": "model"},
    )
    guide_stage = Rejection(
        attempt_id="seed@3:A.6#0",
        seed_id=label.seed_id,
        step=3,
        mode="A.6",
        sample=0,
        status="rejected",
        stage="guide",
        reasons=["rule guide: the agent made no earlier call"],
        provenance={"guide_kind": "rules"},
    )
    failed = Rejection(
        attempt_id="seed@1:R.1#0",
        seed_id=label.seed_id,
        step=1,
        mode="R.1",
        sample=0,
        status="failed",
        stage="continuation",
        reasons=["ModelUnavailable: down"],
        error={"type": "ModelUnavailable", "message": "down"},
    )
    append_jsonl(out / "rejected.jsonl", [rejected, guide_stage])
    append_jsonl(out / "failed.jsonl", [failed])
    manifest = {
        "config_hash": "abc123",
        "created_at": "2026-11-30T00:00:00+00:00",
        "planned_attempts": 9,
        "config": {"seeds": [str(seeds)] if seeds else []},
        "models": {"agent": {"name": "smollm2"}, "guide": {"name": "smollm2"}},
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.fixture()
def dataset(tmp_path) -> Path:
    return make_dataset(tmp_path / "ds")


def _embedded(page: str) -> dict:
    match = re.search(r'<script type="application/json" id="failforge-data">(.*?)</script>', page, re.S)
    assert match
    return json.loads(match.group(1))


def test_summary_counts_everything(dataset):
    s = summarise(load_dataset(dataset))
    assert s["totals"] == {"kept": 5, "rejected": 2, "failed": 1, "planned": 9}
    assert s["rejection_reasons"] == {"note_leak": 1, "guide": 1} and s["failed_by"] == {"ModelUnavailable": 1}
    assert s["gold_by_mode"] == {"V.2": 1, "R.4": 1, "R.3": 1, "PL.1": 1, "R.2": 1}
    assert (
        s["gold_by_step"] == {"1": 4, "3": 1}
        and s["gold_by_environment"] == {"agentdojo": 5}
        and s["gold_by_agent"] == {"agent": 5}
    )
    conf = s["conformance"]
    assert conf["kept"] == 5 and conf["kept_conformant"] == 0  # none of the five shows its mode
    assert conf["by_mode"]["R.3"]["not_exhibited"] == 1 and conf["by_mode"]["R.4"]["unverified"] == 1
    assert (
        conf["by_mode"]["V.2"]["candidates"] == 2 and conf["by_mode"]["V.2"]["not_exhibited"] == 2
    )  # gold and its rejected copy
    assert "A.6" not in conf["by_mode"]  # a guide-stage rejection has no step to judge
    # the five kept answers are prose where the seeds called tools: a surface detector spots them all
    assert (
        s["realism"]["gold"]["auc"] > 0.9
        and s["realism"]["gold"]["n_injected"] == 5
        and s["realism"]["gold"]["n_natural"] == 5
    )


def test_report_is_self_contained_and_embeds_every_record(dataset):
    ds = load_dataset(dataset)
    page = render_report(ds)
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', page), (
        "the report must not load anything from the network"
    )
    assert "<link" not in page and "@import" not in page
    data = _embedded(page)
    assert len(data["records"]) == 8
    assert {r["status"] for r in data["records"]} == {"gold", "rejected", "failed"}
    v2 = next(r for r in data["records"] if r["id"] == "gold-b6a94873f8f3")
    assert v2["prefix"]["same"] and v2["prefix"]["n"] == 1
    seed = next(s for s in ds.seeds.values() if s.id == v2["seed"])
    assert v2["prefix"]["branch_hash"] == prefix_hash(seed.steps[:1])
    assert v2["original"]["calls"][0][0] == "search_calendar_events" and v2["branch"][0]["c"].startswith(
        "The agent is not allowed"
    )
    assert v2["conf"]["exhibited"] is False and v2["seed_key"] in data["seeds"]
    guide_stage = next(r for r in data["records"] if r["attempt"] == "seed@3:A.6#0")
    assert guide_stage["branch"] is None and guide_stage["guide"] == "rules"
    assert "<svg" in page and 'data-chart="mode"' in page and 'id="conformance-table"' in page


def test_a_script_closing_tag_in_a_record_cannot_break_the_page(tmp_path):
    out = make_dataset(tmp_path / "ds")
    rows = (out / "gold.jsonl").read_text().splitlines()
    first = json.loads(rows[0])
    first["steps"][1]["content"] = "</script><script>alert(1)</script>"
    rows[0] = json.dumps(first)
    (out / "gold.jsonl").write_text("\n".join(rows) + "\n")
    page = render_report(load_dataset(out))
    assert page.count("</script>") == 2  # the data block's and the viewer's
    assert any("alert(1)" in (r["branch"] or [{}])[0].get("c", "") for r in _embedded(page)["records"])


def test_missing_seed_files_fall_back_to_the_records_prefix(tmp_path):
    out = make_dataset(tmp_path / "ds", seeds=tmp_path / "gone.jsonl")
    ds = load_dataset(out)
    assert ds.seeds == {} and "not found" in ds.problems[0]
    data = _embedded(render_report(ds))
    v2 = next(r for r in data["records"] if r["id"] == "gold-b6a94873f8f3")
    assert v2["prefix"]["same"] and v2["seed_key"].endswith("#prefix")


def test_audit_is_read_when_present(dataset):
    audit = {
        "environments": [
            {
                "environment": "agentdojo",
                "seeds": 6,
                "identical": 6,
                "drift_by_type": {},
                "cache_misses": 0,
                "infrastructure_errors": 0,
                "evaluator_success_on_replay": 6,
            }
        ],
        "seeds": [],
    }
    (dataset / "audit.json").write_text(json.dumps(audit))
    page = render_report(load_dataset(dataset))
    assert 'id="audit-table"' in page and "6/6" in page


def test_show_renders_one_record(dataset):
    from rich.console import Console

    ds = load_dataset(dataset)
    console = Console(width=200, record=True)
    console.print(render_record(ds, ds.find("gold-b6a9")))
    text = console.export_text()
    assert "gold-b6a94873f8f3" in text and "V.2 (Verification)" in text
    assert (
        "shared prefix, 1 steps: identical" in text
        and prefix_hash(ds.seeds["agentdojo-workspace-user_task_0-oracle"].steps[:1])[:16] in text
    )
    assert "search_calendar_events" in text and "The agent is not allowed" in text
    assert (
        "steering note:" in text
        and "not exhibited" in text
        and "evaluator_failure" in text
        and "agentdojo.utility" in text
    )


def test_find_explains_unknown_and_ambiguous_ids(dataset):
    ds = load_dataset(dataset)
    with pytest.raises(ConfigError, match="no record"):
        ds.find("nope")
    with pytest.raises(ConfigError, match="matches"):
        ds.find("gold-")
    assert ds.find("seed@1:R.1#0").status == "failed"


def test_not_a_dataset_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no such directory"):
        load_dataset(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a campaign output folder"):
        load_dataset(tmp_path)


def test_cli_report_and_show(dataset, tmp_path):
    from typer.testing import CliRunner

    from failforge.cli import app

    runner = CliRunner()
    target = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(dataset), "-o", str(target)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert target.exists() and "5 kept, 2 rejected, 1 failed" in result.output
    shown = runner.invoke(app, ["show", "gold-0cf396fb841d", "--dataset", str(dataset)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "R.4" in shown.output and "identical" in shown.output


def test_cli_unknown_record_is_a_one_line_error(dataset, monkeypatch, capsys):
    from failforge.cli import main

    monkeypatch.setenv("FAILFORGE_NO_REEXEC", "1")
    monkeypatch.setattr(sys, "argv", ["failforge", "show", "nope", "--dataset", str(dataset)])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "no record 'nope'" in err and "Traceback" not in err
