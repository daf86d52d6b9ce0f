"""``failforge subset``, ``score --subset`` and ``subset-fidelity`` through the CLI, each a process of its own.

Moved from the unit layer: four ``failforge`` processes cost seconds, not milliseconds. The subset logic itself is
unit-tested in ``tests/unit/attribution/test_attribution_subset.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from failforge.attribution import load_records, write_records

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution" / "metrics"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_cli_subset_score_and_fidelity(tmp_path: Path) -> None:
    done = _cli(tmp_path, "subset", str(FIXTURES / "records.jsonl"), "--per-source", "2", "-o", "sub")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "sub" / "manifest.json").read_text())
    assert [m["id"] for m in manifest["members"]] == ["r1", "r2", "r5", "r7"] and manifest["seed"] == 0
    assert (tmp_path / "sub" / "ids.txt").read_text().split() == ["r1", "r2", "r5", "r7"]
    assert (
        _cli(tmp_path, "subset", str(FIXTURES / "records.jsonl"), "-o", "sub").returncode == 2
    )  # never redrawn over itself
    scored = _cli(
        tmp_path,
        "score",
        str(FIXTURES / "records.jsonl"),
        str(FIXTURES / "predictions.jsonl"),
        "--subset",
        "sub",
        "--json",
        "s.json",
    )
    assert scored.returncode == 0, scored.stderr
    assert json.loads((tmp_path / "s.json").read_text())["counts"]["records"] == 4
    fid = _cli(
        tmp_path,
        "subset-fidelity",
        str(FIXTURES / "records.jsonl"),
        str(FIXTURES / "predictions.jsonl"),
        "--subset",
        "sub",
        "--json",
        "f.json",
    )
    assert fid.returncode == 0, fid.stderr
    assert json.loads((tmp_path / "f.json").read_text())["max_deviation_pp"] == 25.0
    fewer = [r for r in load_records(FIXTURES / "records.jsonl")[0] if r.id != "r3"]
    write_records(tmp_path / "fewer.jsonl", fewer)
    refused = _cli(tmp_path, "score", "fewer.jsonl", str(FIXTURES / "predictions.jsonl"), "--subset", "sub")
    assert refused.returncode == 2 and "drawn from another dataset" in refused.stderr
