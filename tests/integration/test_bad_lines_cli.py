"""One bad line costs that line only, through the CLI: a non-UTF-8 byte in a Who&When Pro release file, a
TracerTraj JSONL or a failforge gold file, and a 5,000-digit integer in a seed line (``replay``,
``generate``). Each is a one-line message naming the file and line, the other lines are used, and the
exit status says a line was skipped (docs/ARCHITECTURE.md, "Reading JSONL"). An export that leaves a
record out exits 1 and says how many and why."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.testing import LoopbackModelServer
from failforge.trajectory import write_jsonl

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "attribution"
BAD_BYTE = b"\xff"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", PYTHONHASHSEED="0", PYTHONPATH=str(ROOT / "src"))
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _spoil(path: Path, line: int) -> None:
    """Put one byte that is not UTF-8 into ``line`` (1-based) of ``path``, inside a JSON string."""
    lines = path.read_bytes().splitlines(keepends=True)
    at = lines[line - 1].index(b'"', 1) + 1
    lines[line - 1] = lines[line - 1][:at] + BAD_BYTE + lines[line - 1][at:]
    path.write_bytes(b"".join(lines))


def _messages(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if "field '<" in line]


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]


def test_a_bad_byte_in_a_whowhen_pro_release_file(tmp_path):
    shutil.copytree(FIXTURES / "whowhen_pro", tmp_path / "wwp")
    text = tmp_path / "wwp" / "data" / "text.jsonl"
    rows = len(text.read_text().splitlines())
    _spoil(text, 2)
    result = _cli("import", "wwp", "--format", "whowhen-pro", "-o", "r.jsonl", cwd=tmp_path)
    _no_traceback(result)
    print("\n".join(_messages(result)))
    assert result.returncode == 1
    assert _messages(result) == [
        "skipped wwp/data/text.jsonl:2: field '<encoding>': not UTF-8 text (byte 0xff at offset 2 of the line)"
    ]
    total = sum(len(p.read_text(errors="replace").splitlines()) for p in (tmp_path / "wwp" / "data").glob("*.jsonl"))
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == total - 1 and rows > 1


def test_a_bad_byte_in_a_tracertraj_jsonl(tmp_path):
    path = tmp_path / "tt.jsonl"
    shutil.copy(FIXTURES / "tracertraj" / "sample.jsonl", path)
    _spoil(path, 3)
    result = _cli("import", "tt.jsonl", "--format", "tracertraj", "-o", "r.jsonl", cwd=tmp_path)
    _no_traceback(result)
    print("\n".join(_messages(result)))
    assert result.returncode == 1 and _messages(result) == [
        "skipped tt.jsonl:3: field '<encoding>': not UTF-8 text (byte 0xff at offset 2 of the line)"
    ]
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 3


def test_a_bad_byte_in_a_failforge_gold_file_on_import_and_export(tmp_path):
    path = tmp_path / "gold.jsonl"
    shutil.copy(FIXTURES / "failforge_gold.jsonl", path)
    _spoil(path, 4)
    imported = _cli("import", "gold.jsonl", "--format", "failforge", "-o", "r.jsonl", cwd=tmp_path)
    _no_traceback(imported)
    line = "gold.jsonl:4: field '<encoding>': not UTF-8 text (byte 0xff at offset 2 of the line)"
    print("\n".join(_messages(imported)))
    assert imported.returncode == 1 and _messages(imported) == [f"skipped {line}"]
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 5
    for fmt, out in (("whowhen-pro", "wwp"), ("whowhen", "ww"), ("tracertraj", "tt.jsonl")):
        exported = _cli("export", "gold.jsonl", "--format", fmt, "-o", out, cwd=tmp_path)
        _no_traceback(exported)
        print("\n".join(_messages(exported)))
        assert exported.returncode == 1 and f"wrote 5 {fmt} records" in exported.stdout
        assert (
            "skipped 1 of 6 records (by field: '<encoding>' 1)" in exported.stderr
            and f"skipped {line}" in exported.stderr
        )


def test_an_export_that_skips_a_record_exits_1_and_says_why(tmp_path):
    from failforge.attribution import write_records
    from failforge.attribution.importers.failforge_gold import from_trajectory
    from failforge.trajectory import load_jsonl

    seeds, _ = load_jsonl(ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl")
    sys.path.insert(0, str(ROOT / "tests"))
    from export_round_trips import golds_of

    records = [from_trajectory(g) for g in golds_of(seeds[0])[:3]]
    records[1] = records[1].model_copy(
        update={"steps": [s.model_copy(update={"coordinate": None}) for s in records[1].steps]}
    )
    write_records(tmp_path / "records.jsonl", records)
    result = _cli("export", "records.jsonl", "--format", "whowhen-pro", "-o", "wwp", cwd=tmp_path)
    _no_traceback(result)
    assert result.returncode == 1 and "wrote 2 whowhen-pro records" in result.stdout
    message = " ".join(result.stderr.split())
    assert (
        "skipped 1 of 3 records (by field: 'steps' 1)" in message
        and f"record {records[1].id}: step 1 has no round/position" in message
    )
    ok = _cli("export", "records.jsonl", "--format", "whowhen", "-o", "ww", cwd=tmp_path)
    assert ok.returncode == 0 and "wrote 3 whowhen records" in ok.stdout  # Who&When needs no coordinates


@pytest.fixture(scope="module")
def seed_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from failforge.seeds import oracle_seed

    path = tmp_path_factory.mktemp("seeds") / "seeds.jsonl"
    write_jsonl(
        path, [oracle_seed("agentdojo", "banking/user_task_1"), oracle_seed("agentdojo", "banking/user_task_3")]
    )
    good = path.read_bytes().splitlines()
    huge = json.loads(good[1])
    path.write_bytes(
        good[0] + b"\n" + json.dumps(huge).replace('"index": 0', '"index": ' + "7" * 5000, 1).encode() + b"\n"
    )
    return path


HUGE = re.compile(r"seeds\.jsonl:2: field '<json>': an integer of more than 4300 digits, longer than Python reads")


def test_a_huge_integer_in_a_seed_line_replay(tmp_path, seed_file):
    pytest.importorskip("agentdojo")
    result = _cli("replay", str(seed_file), cwd=tmp_path)
    _no_traceback(result)
    text = " ".join(result.stdout.split()) + " " + " ".join(result.stderr.split())
    print(HUGE.search(text))
    assert (
        result.returncode == 1
        and HUGE.search(text)
        and "1/1 seeds replayed identically" in text
        and "malformed: 1" in text
    )


def test_a_huge_integer_in_a_seed_line_generate(tmp_path, seed_file):
    pytest.importorskip("agentdojo")
    with LoopbackModelServer() as server:
        result = _cli(
            "generate",
            "--seeds",
            str(seed_file),
            "-o",
            "out",
            "--base-url",
            server.base_url,
            "--model",
            "loopback",
            "--api-key-env",
            "NO_KEY",
            "--steps-per-seed",
            "1",
            "--modes-per-step",
            "1",
            cwd=tmp_path,
        )
    _no_traceback(result)
    text = " ".join(result.stdout.split()) + " " + " ".join(result.stderr.split())
    assert HUGE.search(text) and "seed skipped" in text
    assert re.search(r"planned attempts\s*│?\s*[1-9]", result.stdout), result.stdout[
        -3000:
    ]  # the good seed was branched


def test_attribute_and_score_go_on_past_a_bad_line_and_exit_1(tmp_path):
    records = tmp_path / "records.jsonl"
    shutil.copy(FIXTURES / "metrics" / "records.jsonl", records)
    _spoil(records, 2)
    attributed = _cli("attribute", "records.jsonl", "--method", "random", "-o", "run", cwd=tmp_path)
    _no_traceback(attributed)
    assert attributed.returncode == 1 and _messages(attributed) == [
        "skipped record records.jsonl:2: field '<encoding>': not UTF-8 text (byte 0xff at offset 2 of the line)"
    ]
    assert len((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()) == 6
    predictions = tmp_path / "run" / "predictions.jsonl"
    _spoil(predictions, 3)
    scored = _cli("score", "records.jsonl", "run", cwd=tmp_path)
    _no_traceback(scored)
    assert scored.returncode == 1 and "evaluate.py substring rule" in scored.stdout
    assert [m.split(": field")[0] for m in _messages(scored)] == [
        "skipped record records.jsonl:2",
        f"skipped prediction {predictions.relative_to(tmp_path)}:3",
    ]
    assert "2 line(s) skipped" in scored.stderr and "predictions 5" in " ".join(scored.stdout.split())
