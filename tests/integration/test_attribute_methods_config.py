"""``failforge attribute --methods-config``: two methods, each with its own loopback judge, through the real CLI.

Seven records (Who&When Algorithm-Generated 1-4, the first three failforge gold records). The auditor's
judge (``failforge.testing.auditor_judge``) answers every record's gold: one call each, 7 calls. The
all-at-once judge, on a second server, answers every record's gold agent and step: one call each, 7 calls.
Each server refuses the other method's prompt, so a run sent to the wrong endpoint fails the test. Run
again, every folder resumes: 7 done before, 0 new calls on either server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from failforge.attribution import summarise, write_records
from failforge.attribution._predictions import load_predictions
from failforge.plugins import importers
from failforge.testing.auditor_judge import auditor_judge
from failforge.testing.model_servers import LoopbackModelServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
SECRET = "sk-methods-config-secret-123"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", PYTHONHASHSEED="0", JUDGE_A_KEY=SECRET, JUDGE_B_KEY=SECRET)
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _all_at_once_judge(records: list[Any]):  # type: ignore[no-untyped-def]
    def record_of(text: str) -> Any:  # records may share a question: the one whose step texts the prompt shows most
        scored = [
            (sum(s.content[:40] in text for s in r.steps if s.content), r)
            for r in records
            if r.task.question.split("\n")[0][:80] in text
        ]
        return max(scored, key=lambda pair: pair[0])[1]

    def answer(body: dict[str, Any]) -> tuple[str | None, None]:
        text = body["messages"][-1]["content"]
        assert "Audit the trajectory." not in text, "an auditor prompt reached the all-at-once judge"
        record = record_of(text)
        return (
            (
                f"Agent Name: {record.gold.agent}\nStep Number: {record.gold.step}\nError Mode:"
                f" {record.gold.mode or 'PL.1'}\nReason for Mistake: here."
            ),
            None,
        )

    return answer


def test_two_methods_two_endpoints_one_folder_each_and_resume_makes_no_call(tmp_path: Path) -> None:
    ww, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    gold, _ = summarise(importers.get("failforge")(FIXTURES / "failforge_gold.jsonl"))
    records = [*ww[:4], *gold[:3]]
    write_records(tmp_path / "records.jsonl", records)
    with (
        LoopbackModelServer(policy=auditor_judge(records)) as a,
        LoopbackModelServer(policy=_all_at_once_judge(records)) as b,
    ):
        (tmp_path / "methods.yaml").write_text(
            f"runs:\n  - {{name: audit, method: auditor, endpoint: {{base_url: '{a.base_url}', model: judge-a,"
            " api_key_env: JUDGE_A_KEY}}\n  - {method: all-at-once, workers: 2, endpoint: {base_url:"
            f" '{b.base_url}', model: judge-b, api_key_env: JUDGE_B_KEY}}}}\n  - {{method: last-step}}\n",
            encoding="utf-8",
        )
        first = _cli("attribute", "records.jsonl", "--methods-config", "methods.yaml", "-o", "runs", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        calls = (a.counts["ok"], b.counts["ok"])
        assert calls == (7, 7)
        again = _cli("attribute", "records.jsonl", "--methods-config", "methods.yaml", "-o", "runs", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert (a.counts["ok"], b.counts["ok"]) == calls  # the resume asked neither judge anything
    for folder, method, model in (
        ("audit", "auditor", "judge-a"),
        ("all-at-once", "all-at-once", "judge-b"),
        ("last-step", "last-step", None),
    ):
        predictions, problems = load_predictions(tmp_path / "runs" / folder / "predictions.jsonl")
        assert not problems and sorted(p.record_id for p in predictions) == sorted(r.id for r in records)
        text = (tmp_path / "runs" / folder / "manifest.json").read_text()
        assert SECRET not in text
        manifest = json.loads(text)
        assert manifest["config"]["judge_model"] == model and manifest["config"]["method"] == method
        assert manifest["provenance"]["run"] == folder
        assert [r["method"] for r in manifest["provenance"]["methods_config"]["runs"]] == [
            "auditor",
            "all-at-once",
            "last-step",
        ]
        assert [(r["done_before"], r["predicted"], r["live_calls"]) for r in manifest["runs"]] == [
            (0, 7, 7 if model else 0),
            (7, 0, 0),
        ]
    by_id = {p.record_id: p for p in load_predictions(tmp_path / "runs" / "all-at-once" / "predictions.jsonl")[0]}
    assert [(by_id[r.id].agent, by_id[r.id].step) for r in records] == [(r.gold.agent, r.gold.step) for r in records]
    assert manifest["provenance"]["methods_config"]["runs"][0]["endpoint"] == {
        "base_url": a.base_url,
        "model": "judge-a",
        "api_key_env": "JUDGE_A_KEY",
    }
    lines = [line for line in again.stdout.splitlines() if " · records 7 · resumed 7 · predicted 0 " in line]
    assert [line.split(":")[0] for line in lines] == ["audit", "all-at-once", "last-step"]
    assert all("live calls 0" in line for line in lines)


def test_methods_config_and_method_are_mutually_exclusive(tmp_path: Path) -> None:
    (tmp_path / "methods.yaml").write_text("runs:\n  - {method: random}\n", encoding="utf-8")
    (tmp_path / "records.jsonl").write_text("", encoding="utf-8")
    result = _cli("attribute", "records.jsonl", "--methods-config", "methods.yaml", "--method", "random", cwd=tmp_path)
    assert result.returncode != 0
    assert "cannot be combined with --method" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_killed_mid_run_then_run_again_resumes_every_folder(tmp_path: Path) -> None:
    """SIGKILL while the auditor's 4th call is in flight: the rerun finishes the auditor's folder (3 done
    before, 4 live calls: the unanswered one again and the 3 left) and then runs all-at-once (7 calls)."""
    ww, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    gold, _ = summarise(importers.get("failforge")(FIXTURES / "failforge_gold.jsonl"))
    records = [*ww[:4], *gold[:3]]
    write_records(tmp_path / "records.jsonl", records)
    audit, asked, release = auditor_judge(records), threading.Event(), threading.Event()
    seen: list[int] = []

    def blocking(body: dict[str, Any]) -> tuple[str | None, None]:
        seen.append(1)
        if len(seen) == 4:
            asked.set()
            release.wait(60)
        return audit(body)

    with LoopbackModelServer(policy=blocking) as a, LoopbackModelServer(policy=_all_at_once_judge(records)) as b:
        (tmp_path / "methods.yaml").write_text(
            f"runs:\n  - {{name: audit, method: auditor, endpoint: {{base_url: '{a.base_url}', model: judge-a,"
            f" api_key_env: JUDGE_A_KEY}}}}\n  - {{method: all-at-once, endpoint: {{base_url: '{b.base_url}', model:"
            " judge-b, api_key_env: JUDGE_B_KEY}}\n",
            encoding="utf-8",
        )
        env = dict(os.environ, COLUMNS="200", PYTHONHASHSEED="0")
        args = [
            sys.executable,
            "-m",
            "failforge",
            "attribute",
            "records.jsonl",
            "--methods-config",
            "methods.yaml",
            "-o",
            "runs",
        ]
        proc = subprocess.Popen(
            args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            assert asked.wait(300), "the auditor's 4th call never came"
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
            release.set()
        assert (len(seen), b.counts["ok"]) == (4, 0)
        again = _cli("attribute", "records.jsonl", "--methods-config", "methods.yaml", "-o", "runs", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert (len(seen), b.counts["ok"]) == (8, 7)
    first_runs = json.loads((tmp_path / "runs" / "audit" / "manifest.json").read_text())["runs"]
    assert [(r["done_before"], r["predicted"], r["live_calls"]) for r in first_runs] == [(3, 4, 4)]
    for folder in ("audit", "all-at-once"):
        predictions, _ = load_predictions(tmp_path / "runs" / folder / "predictions.jsonl")
        assert sorted(p.record_id for p in predictions) == sorted(r.id for r in records)
    assert len((tmp_path / "runs" / "audit" / "calls.jsonl").read_text().splitlines()) == 7
