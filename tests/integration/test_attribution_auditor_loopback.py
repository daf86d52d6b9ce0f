"""The trajectory auditor end to end through the CLI, against a loopback judge that follows its protocol
(``failforge.testing.auditor_judge``), and the label-menu ablation's three arms.

Seven records: Who&When Algorithm-Generated 1-4 (multi-agent, no gold mode) and the first three failforge
gold records (single agent; modes V.2, R.4, R.3). The judge answers each record's gold agent, step and
mode except: Who&When 2 gets the step after the gold (step wrong, agent right), Who&When 3 an agent that
is not recorded, twice (agent invalid after the retry), and gold-0cf396fb841d an invalid impact in its
first reply only (fixed by the retry). By hand: Step exact 6/7 = 85.71; Agent over the 4 multi-agent
records 3/4 = 75.0; Joint 5/7 = 71.43 (Who&When 2 and 3 miss); mode macro-F1 100 over the 3 records
with a gold mode; calls 7 + 2 retries = 9.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.attribution import load_records, mode_paraphrases, summarise, write_records
from failforge.attribution._freetext import map_to_mode
from failforge.attribution._predictions import load_predictions
from failforge.plugins import importers
from failforge.testing.auditor_judge import auditor_judge
from failforge.testing.model_servers import LoopbackModelServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
WW = "who_and_when/algorithm_generated/"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def _attribute(cwd: Path, url: str, out: str, *arm: str) -> None:
    result = _cli(
        "attribute",
        "records.jsonl",
        "--method",
        "auditor",
        "-o",
        out,
        "--base-url",
        url,
        "--model",
        "auditor-judge",
        "--api-key-env",
        "NO_KEY",
        *arm,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr


def _score(cwd: Path, run: str, *extra: str) -> dict:  # type: ignore[type-arg]
    result = _cli("score", "records.jsonl", run, "--json", f"{run}.json", *extra, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads((cwd / f"{run}.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    ww, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    gold, _ = summarise(importers.get("failforge")(FIXTURES / "failforge_gold.jsonl"))
    return [*ww[:4], *gold[:3]]


def test_auditor_scores_what_a_hand_computation_says_rescores_at_zero_calls_and_attaches(records, tmp_path):
    write_records(tmp_path / "records.jsonl", records)
    policy = auditor_judge(records, wrong_step={WW + "2"}, bad_agent={WW + "3"}, bad_impact_once={"gold-0cf396fb841d"})
    with LoopbackModelServer(policy=policy) as server:
        _attribute(tmp_path, server.base_url, "run")
    report = _score(tmp_path, "run")["overall"]
    assert (report["n"], report["step_exact"]["value"], report["agent"]["value"], report["agent"]["n"]) == (
        7,
        85.71,
        75.0,
        4,
    )
    assert (report["joint"]["value"], report["mode_macro_f1"]["value"]) == (71.43, 100.0)
    predictions, _ = load_predictions(tmp_path / "run" / "predictions.jsonl")
    by_id = {p.record_id: p for p in predictions}
    assert (
        sum(p.calls for p in predictions) == 9 and by_id[WW + "3"].calls == 2 and by_id["gold-0cf396fb841d"].calls == 2
    )
    assert by_id[WW + "3"].agent is None and by_id[WW + "3"].problems == [
        "after one retry: Agent 'Nobody' is not a recorded agent"
    ]
    assert by_id[WW + "2"].step == 3 and by_id[WW + "2"].agent == "Verification_Expert"
    audit = by_id["gold-0cf396fb841d"].audit
    assert audit is not None and (audit.outcome, audit.control, audit.trajectory, audit.error_source, audit.impact) == (
        1,
        2,
        3,
        "planning",
        "cost-recoverable",
    )
    # one decision per agent step, the gold step at confidence 0.3 (what the judge wrote)
    assert [(d.step, d.confidence) for d in audit.decisions] == [
        (i, 0.3 if i == 3 else 0.9) for i, s in enumerate(records[5].steps) if s.kind == "agent"
    ]

    rescored = _cli(
        "attribute", "records.jsonl", "--method", "auditor", "-o", "rescored", "--recording", "run", cwd=tmp_path
    )  # no server now
    assert rescored.returncode == 0, rescored.stderr
    last = json.loads((tmp_path / "rescored" / "manifest.json").read_text())["runs"][-1]
    assert (last["live_calls"], last["replayed_calls"], last["prompt_tokens"]) == (0, 9, 0)
    again, _ = load_predictions(tmp_path / "rescored" / "predictions.jsonl")
    assert [(p.record_id, p.agent, p.step, p.mode, p.audit) for p in again] == [
        (p.record_id, p.agent, p.step, p.mode, p.audit) for p in predictions
    ]
    assert _score(tmp_path, "rescored")["overall"]["joint"]["value"] == 71.43

    attached = _cli("attach-audit", "run", "-o", "audited.jsonl", cwd=tmp_path)
    assert attached.returncode == 0, attached.stderr
    audited, problems = load_records(tmp_path / "audited.jsonl")
    assert (
        not problems
        and [r.id for r in audited] == [r.id for r in records]
        and all(r.audit is not None for r in audited)
    )
    assert (
        audited[5].audit is not None
        and audited[5].audit.method == "auditor/answer/menu"
        and audited[5].audit.judge_model == "auditor-judge"
    )
    refused = _cli("attach-audit", "records.jsonl", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr


def test_label_menu_ablation_three_arms_paired_bootstrap(tmp_path):
    """Who&When Pro fixtures and failforge gold (18 records, all with a gold mode). The judge reads the gold
    code off any menu and, with no menu, writes the paraphrase's headline ("Makes things up"); so the two
    menus score the same by construction and the free-text arm loses exactly the headlines the lexical map
    does not read back (counted here from the map, independently of the run)."""
    pro, _ = summarise(importers.get("whowhen-pro")(FIXTURES / "whowhen_pro"))
    gold, _ = summarise(importers.get("failforge")(FIXTURES / "failforge_gold.jsonl"))
    records = [*pro, *gold]
    write_records(tmp_path / "records.jsonl", records)
    arms = {"menu": (), "paraphrased": ("--paraphrased-menu",), "free": ("--free-text",)}
    with LoopbackModelServer(policy=auditor_judge(records, describe="headline")) as server:
        for name, flags in arms.items():
            _attribute(tmp_path, server.base_url, name, *flags)
    misses = sum(
        map_to_mode(mode_paraphrases()[r.gold.mode].split(" - ")[0]) != r.gold.mode for r in records if r.gold.mode
    )
    assert len(records) == 18 and misses == 9  # R.1 x2, R.3 x3, C.3 x2, A.6, A.2
    same = _score(tmp_path, "menu", "--compare", "paraphrased", "--resamples", "2000")
    assert same["overall"]["joint"]["value"] == 100.0 and same["overall"]["mode_macro_f1"]["value"] == 100.0
    for metric in ("step_exact", "joint", "mode_macro_f1"):
        assert (
            same["compare"][metric]["observed"],
            same["compare"][metric]["low"],
            same["compare"][metric]["high"],
        ) == (0.0, 0.0, 0.0)
    drop = _score(tmp_path, "menu", "--compare", "free", "--resamples", "2000")["compare"]
    assert drop["step_exact"]["observed"] == 0.0 and drop["joint"]["observed"] == round(100 * misses / 18, 2)
    assert drop["joint"]["low"] > 0 and drop["mode_macro_f1"]["observed"] > 0  # the interval excludes no difference
    free, _ = load_predictions(tmp_path / "free" / "predictions.jsonl")
    assert all(p.description and p.audit and p.audit.description == p.description for p in free)
