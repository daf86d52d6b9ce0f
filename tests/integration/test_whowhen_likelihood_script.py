"""scripts/whowhen_likelihood.py: a run folder seeded from the kept predictions, and the table it prints.

Two kept incremental predictions, hand-made: an Algorithm-Generated log predicted at its gold agent and step
(agent 100, step 100 over the 1 log done) and a Hand-Crafted log predicted at another agent and step 0
(agent 0, step 0 unless its gold is step 0). The scores are over the logs done, not over all 184.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "tests" / "fixtures" / "attribution" / "who_and_when"


def _prediction(record_id: str, agent: str, step: int, seconds: float) -> dict[str, object]:
    return {
        "attempt_id": f"incremental::{record_id}",
        "record_id": record_id,
        "method": "incremental",
        "agent": agent,
        "step": step,
        "seconds": seconds,
    }


def test_scores_what_is_done_and_seeds_the_run_folder_from_the_kept_predictions(tmp_path: Path) -> None:
    work, results = tmp_path / "work", tmp_path / "results"
    work.mkdir()
    imported = subprocess.run(
        [
            sys.executable,
            "-m",
            "failforge",
            "import",
            str(DATASET),
            "--format",
            "whowhen",
            "-o",
            str(work / "ww.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert imported.returncode == 0, imported.stderr
    rows = [json.loads(line) for line in (work / "ww.jsonl").read_text().splitlines()]
    ag = next(r for r in rows if "/algorithm_generated/" in r["id"])
    hc = next(r for r in rows if "/hand_crafted/" in r["id"] and r["gold"]["step"] != 0)
    wrong_agent = next(s["agent"] for s in hc["steps"] if s["agent"] != hc["gold"]["agent"])
    kept = results / "whowhen_incremental" / "predictions.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text(
        json.dumps(_prediction(ag["id"], ag["gold"]["agent"], ag["gold"]["step"], 4.0))
        + "\n"
        + json.dumps(_prediction(hc["id"], wrong_agent, 0, 60.0))
        + "\n"
    )

    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "whowhen_likelihood.py"),
            "--dataset",
            str(DATASET),
            "--work",
            str(work),
            "--results",
            str(results),
            "--score-only",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert (work / "incremental" / "predictions.jsonl").read_text() == kept.read_text()
    n_ag = sum("/algorithm_generated/" in r["id"] for r in rows)
    n_hc = sum("/hand_crafted/" in r["id"] for r in rows)
    lines = {tuple(line.split()[:2]): line for line in done.stdout.splitlines() if line.startswith("incremental ")}
    assert f"done   1/{n_ag}" in lines[("incremental", "algorithm_generated")]
    assert "mean    4.0" in lines[("incremental", "algorithm_generated")]
    assert (
        "agent 100.0" in lines[("incremental", "algorithm_generated")]
        and "step_exact 100.0" in lines[("incremental", "algorithm_generated")]
    )
    assert f"done   1/{n_hc}" in lines[("incremental", "hand_crafted")]
    assert (
        "agent 0.0" in lines[("incremental", "hand_crafted")]
        and "step_exact 0.0" in lines[("incremental", "hand_crafted")]
    )
    assert "leave-one-out: no predictions yet" in done.stdout


@pytest.mark.local_model
def test_a_run_on_one_source_adds_its_logs_to_the_kept_predictions_and_a_rerun_recomputes_nothing(
    tmp_path: Path,
) -> None:
    """The real model on the two shortest logs: the kept Algorithm-Generated prediction (hand-made) stays as it
    is, the Hand-Crafted log is run in its own folder (a folder is bound to its records) and saved beside it."""
    dataset, results, work = tmp_path / "ww", tmp_path / "results", tmp_path / "work"
    for source, name in (("Algorithm-Generated", "53.json"), ("Hand-Crafted", "24.json")):
        (dataset / source).mkdir(parents=True)
        shutil.copyfile(DATASET / source / name, dataset / source / name)
    kept = results / "whowhen_incremental" / "predictions.jsonl"
    kept.parent.mkdir(parents=True)
    made = json.dumps(_prediction("who_and_when/algorithm_generated/53", "Someone", 1, 4.0))
    kept.write_text(made + "\n")
    command = [
        sys.executable,
        str(ROOT / "scripts" / "whowhen_likelihood.py"),
        "--dataset",
        str(dataset),
        "--work",
        str(work),
        "--results",
        str(results),
        "--method",
        "incremental",
        "--source",
        "hand_crafted",
        "--save",
    ]

    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    lines = kept.read_text().splitlines()
    assert lines[0] == made and len(lines) == 2
    added = json.loads(lines[1])
    assert added["record_id"] == "who_and_when/hand_crafted/24" and added["method"] == "incremental"
    assert any(score is not None for score in added["step_scores"])
    assert (work / "incremental-hand_crafted" / "predictions.jsonl").exists() and not (work / "incremental").exists()
    assert "done   1/1" in next(
        line for line in first.stdout.splitlines() if line.startswith("incremental    hand_crafted")
    )

    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert kept.read_text().splitlines() == lines  # nothing recomputed: the same seconds, the same scores
