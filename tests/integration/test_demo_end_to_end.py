"""The main job, as a user runs it: `failforge demo` on the bundled seeds with the real local model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.campaign import CampaignConfig
from failforge.injection import step_context
from failforge.taxonomy import get_mode
from failforge.trajectory import load_jsonl

pytestmark = [pytest.mark.local_model, pytest.mark.slow]
DEFAULT_FILTERS = CampaignConfig(seeds=["-"], output="-").filters.enabled


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200
    )


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("demo")
    result = _cli("demo", "--output", "out", cwd=workdir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "kept (gold)" in result.stdout and "gold.jsonl" in result.stdout
    return workdir / "out"


def test_demo_writes_gold_rejected_and_manifest(demo_output, bundled_seeds):
    gold, bad = load_jsonl(demo_output / "gold.jsonl")
    assert not bad and len(gold) >= 1
    rejected = [json.loads(line) for line in (demo_output / "rejected.jsonl").read_text().splitlines()]
    assert rejected and all(r["reasons"] and all(reason.strip() for reason in r["reasons"]) for r in rejected)
    manifest = json.loads((demo_output / "manifest.json").read_text())
    assert manifest["config_hash"] and manifest["versions"]["agentdojo"] and manifest["versions"]["llama-cpp-python"]
    failed_path = demo_output / "failed.jsonl"
    failed = failed_path.read_text().splitlines() if failed_path.exists() else []
    totals = manifest["result"]["totals"]
    assert (
        totals["kept"] + totals["rejected"] + totals["failed"] == manifest["planned_attempts"]
        and totals["unfinished"] == 0
    )
    assert len(gold) + len(rejected) + len(failed) == manifest["planned_attempts"]


def test_every_gold_record_is_exact_before_t_and_labelled_at_t(demo_output):
    demo_seeds, _ = load_jsonl(demo_output / "demo_seeds.jsonl")  # single-agent and multi-agent bundled seeds
    assert {len(s.agents) > 1 for s in demo_seeds} == {False, True}
    seeds = {s.id: s for s in demo_seeds}
    gold, _ = load_jsonl(demo_output / "gold.jsonl")
    for record in gold:
        label = record.label
        assert label is not None
        seed = seeds[label.seed_id]
        t = label.decisive_step
        assert record.parent_id == seed.id and record.branch_step == t
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert all(s.phase == "replayed" for s in record.steps[1:t])
        assert record.steps[t].phase == "injected" and all(s.phase == "live" for s in record.steps[t + 1 :])
        assert label.decisive_agent == seed.steps[t].agent == record.steps[t].agent
        mode = get_mode(label.mode_code)
        assert mode.family.value == label.mode_family
        assert mode.applicable(step_context(seed, seed.steps[t]))[0]
        assert label.original_step == seed.steps[t]
        assert record.outcome.success is False and label.evaluator_output == record.outcome
        # the default filters, then the decisiveness check (on by default): the seed's own step continued live succeeded
        assert [v.name for v in label.filter_verdicts] == [*DEFAULT_FILTERS, "decisiveness"] and all(
            v.passed for v in label.filter_verdicts
        )
        decisiveness = record.provenance["decisiveness"]
        assert (
            decisiveness["checked"] is True
            and decisiveness["original"]["successes"] >= 1
            and decisiveness["injected"]["successes"] == 0
        )
        conformance = record.provenance["conformance"]
        assert conformance["mode"] == label.mode_code and conformance["exhibited"] is True  # the step shows its mode
        assert label.steering_note in json.dumps(label.agent_request)
        assert label.steering_note not in json.dumps([s.model_call.request for s in record.steps[t:] if s.model_call])
        assert record.provenance["config_hash"] and record.provenance["failforge_version"]


def test_export_whowhen_pro_and_import_it_back(demo_output, tmp_path):
    target = tmp_path / "wwp"
    result = _cli(
        "export",
        str(demo_output / "gold.jsonl"),
        "--format",
        "whowhen-pro",
        "--codes",
        "failforge",
        "-o",
        str(target),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    back = _cli("import", str(target), "--format", "whowhen-pro", "-o", str(tmp_path / "back.jsonl"), cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    records = [json.loads(line) for line in (tmp_path / "back.jsonl").read_text().splitlines()]
    gold, _ = load_jsonl(demo_output / "gold.jsonl")
    assert len(records) == len(gold) >= 1
    by_content = sorted((r["gold"]["mode"], r["steps"][r["gold"]["step"]]["content"] or "") for r in records)
    assert by_content == sorted((g.label.mode_code, g.steps[g.label.decisive_step].content or "") for g in gold)


def test_demo_resumes_without_redoing_work(demo_output, tmp_path):
    before = {name: (demo_output / name).read_text() for name in ("gold.jsonl", "rejected.jsonl")}
    result = _cli("demo", "--output", str(demo_output), "--no-fresh", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert {name: (demo_output / name).read_text() for name in before} == before
    manifest = json.loads((demo_output / "manifest.json").read_text())
    assert (
        manifest["result"]["this_run"]["attempts"] == 0
        and manifest["result"]["this_run"]["skipped"] == manifest["planned_attempts"]
    )
