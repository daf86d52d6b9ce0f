"""The main job, as a user runs it: `failforge demo` on the bundled seeds with the real local model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.exporters import RELEASE_CODES
from failforge.injection import step_context
from failforge.taxonomy import get_mode
from failforge.trajectory import load_jsonl

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


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
    assert totals["kept"] + totals["rejected"] + totals["failed"] == manifest["planned_attempts"] and totals["unfinished"] == 0
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
        assert all(v.passed for v in label.filter_verdicts) and len(label.filter_verdicts) == 5
        assert label.steering_note in json.dumps(label.agent_request)
        assert label.steering_note not in json.dumps([s.model_call.request for s in record.steps[t:] if s.model_call])
        assert record.provenance["config_hash"] and record.provenance["failforge_version"]


def test_export_whowhen_pro(demo_output, tmp_path):
    target = tmp_path / "wwp.jsonl"
    result = _cli("export", str(demo_output / "gold.jsonl"), "--format", "whowhen-pro", "-o", str(target), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    gold, _ = load_jsonl(demo_output / "gold.jsonl")
    assert len(rows) == len(gold)
    for row, record in zip(rows, gold, strict=False):
        gt = row["ground_truth"]
        assert gt["step"] == record.label.decisive_step
        assert gt["mode"] == RELEASE_CODES.get(record.label.mode_code, record.label.mode_code)
        injected = [e for e in row["trajectory"] if "injected" in e.get("phase", [])]
        assert len(injected) == 1 and injected[0]["step"] == gt["step"] and injected[0]["agent"] == gt["agent"]
        assert all("replayed" in e["phase"] for e in row["trajectory"][1 : gt["step"]])


def test_demo_resumes_without_redoing_work(demo_output, tmp_path):
    before = {name: (demo_output / name).read_text() for name in ("gold.jsonl", "rejected.jsonl")}
    result = _cli("demo", "--output", str(demo_output), "--no-fresh", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert {name: (demo_output / name).read_text() for name in before} == before
    manifest = json.loads((demo_output / "manifest.json").read_text())
    assert manifest["result"]["this_run"]["attempts"] == 0 and manifest["result"]["this_run"]["skipped"] == manifest["planned_attempts"]
