"""The attribution commands end to end in a subprocess: import, attribute (no-model methods), score, export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_import_every_format_and_report_what_was_skipped(tmp_path):
    ww = _cli(
        "import",
        str(FIXTURES / "who_and_when"),
        "--format",
        "whowhen",
        "-o",
        "ww.jsonl",
        "--summary",
        "s.json",
        cwd=tmp_path,
    )
    assert ww.returncode == 0, ww.stderr
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["read"], summary["imported"], summary["skipped"]) == (184, 184, 0)
    assert len((tmp_path / "ww.jsonl").read_text().splitlines()) == 184
    bad = _cli("import", str(FIXTURES / "whowhen_pro_bad"), "--format", "whowhen-pro", "-o", "bad.jsonl", cwd=tmp_path)
    assert (
        bad.returncode == 1 and "Traceback" not in bad.stderr
    )  # written, but 5 rows skipped: exit 1 (docs: exit codes)
    skipped = [line for line in bad.stderr.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 5 and all("text.jsonl:" in line and "field '" in line for line in skipped)
    assert "records read" in bad.stdout and "5" in bad.stdout
    for fmt, path in (
        ("tracertraj", FIXTURES / "tracertraj" / "sample.jsonl"),
        ("failforge", FIXTURES / "failforge_gold.jsonl"),
    ):
        result = _cli("import", str(path), "--format", fmt, "-o", f"{fmt}.jsonl", cwd=tmp_path)
        assert result.returncode == 0, result.stderr


def test_bad_input_is_one_line_never_a_traceback(tmp_path):
    missing = _cli("import", "nowhere", "--format", "whowhen", cwd=tmp_path)
    assert (
        missing.returncode == 2
        and "Traceback" not in missing.stderr
        and "nowhere: no such file or folder" in missing.stderr
    )
    unknown = _cli("import", str(FIXTURES / "who_and_when"), "--format", "csv", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown importer 'csv'" in unknown.stderr and "whowhen-pro" in unknown.stderr
    method = _cli("attribute", str(FIXTURES / "metrics" / "records.jsonl"), "--method", "oracle", cwd=tmp_path)
    assert (
        method.returncode == 2
        and "unknown attribution method 'oracle'" in method.stderr
        and "Traceback" not in method.stderr
    )
    (tmp_path / "broken.jsonl").write_text("{broken\n")
    broken = _cli("score", "broken.jsonl", "broken.jsonl", cwd=tmp_path)
    assert (
        broken.returncode == 2
        and "broken.jsonl:1: field '<json>'" in broken.stderr
        and "Traceback" not in broken.stderr
    )
    only_bad = _cli("import", str(FIXTURES / "tracertraj_bad.jsonl"), "--format", "whowhen", cwd=tmp_path)
    assert only_bad.returncode == 1 and "Traceback" not in only_bad.stderr


def test_baselines_then_score_with_bootstrap(tmp_path):
    assert (
        _cli("import", str(FIXTURES / "who_and_when"), "--format", "whowhen", "-o", "ww.jsonl", cwd=tmp_path).returncode
        == 0
    )
    for method in ("random", "last-step"):
        result = _cli("attribute", "ww.jsonl", "--method", method, "-o", method, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    result = _cli(
        "score",
        "random",
        "random",
        "--json",
        "report.json",
        "--compare",
        "last-step",
        "--resamples",
        "500",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["overall"]["n"] == 184 and report["counts"]["missing"] == 0
    assert set(report["by_source"]) == {"who_and_when/hand_crafted", "who_and_when/algorithm_generated"}
    assert report["compare"]["step_exact"]["resamples"] == 500
    assert "evaluate.py substring rule" in result.stdout


def test_export_writes_each_public_layout(tmp_path):
    gold = str(FIXTURES / "failforge_gold.jsonl")
    wwp = _cli("export", gold, "--format", "whowhen-pro", "-o", "wwp", cwd=tmp_path)
    assert wwp.returncode == 0, wwp.stderr
    assert (tmp_path / "wwp" / "taxonomy.yaml").exists() and len(
        (tmp_path / "wwp" / "data" / "text.jsonl").read_text().splitlines()
    ) == 6
    ww = _cli("export", gold, "--format", "whowhen", "-o", "ww", cwd=tmp_path)
    assert ww.returncode == 0 and sorted(p.name for p in (tmp_path / "ww").iterdir()) == sorted(
        f"{i}.json" for i in range(1, 7)
    )
    tt = _cli("export", gold, "--format", "tracertraj", "-o", "tt.jsonl", cwd=tmp_path)
    assert tt.returncode == 0 and len((tmp_path / "tt.jsonl").read_text().splitlines()) == 6
    # records (not failforge gold) export too: Who&When logs re-exported as TracerTraj rows
    assert (
        _cli("import", str(FIXTURES / "who_and_when"), "--format", "whowhen", "-o", "ww.jsonl", cwd=tmp_path).returncode
        == 0
    )
    again = _cli("export", "ww.jsonl", "--format", "tracertraj", "-o", "ww_tt.jsonl", cwd=tmp_path)
    assert again.returncode == 0 and len((tmp_path / "ww_tt.jsonl").read_text().splitlines()) == 184
    back = _cli("import", "ww_tt.jsonl", "--format", "tracertraj", "-o", "back.jsonl", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    original = [json.loads(line)["gold"] for line in (tmp_path / "ww.jsonl").read_text().splitlines()]
    returned = [json.loads(line)["gold"] for line in (tmp_path / "back.jsonl").read_text().splitlines()]
    assert [(g["agent"], g["step"]) for g in original] == [(g["agent"], g["step"]) for g in returned]
