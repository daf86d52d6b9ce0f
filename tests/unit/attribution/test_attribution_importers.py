"""Importers on real files: the 184 Who&When logs, release-layout Who&When Pro rows, TracerTraj, failforge gold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from _required import require
from failforge.attribution import summarise
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"
WHO_AND_WHEN = FIXTURES / "who_and_when"


def _import(fmt: str, path: Path):  # type: ignore[no-untyped-def]
    return summarise(importers.get(fmt)(path))


# --- Who&When --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def who_and_when():  # type: ignore[no-untyped-def]
    return _import("whowhen", WHO_AND_WHEN)


def test_all_184_who_and_when_logs_import(who_and_when):
    records, summary = who_and_when
    assert (summary.read, summary.imported, summary.skipped) == (184, 184, 0)
    assert summary.by_source == {"who_and_when/hand_crafted": 58, "who_and_when/algorithm_generated": 126}
    for record in records:
        raw = json.loads(Path(record.origin.path).read_text())
        assert isinstance(raw["mistake_step"], str)  # the dataset's quirk: a string ...
        assert record.gold.step == int(raw["mistake_step"])  # ... read as the 0-based history index
        assert record.gold.agent == raw["mistake_agent"] and len(record.steps) == len(raw["history"])
        assert record.topology == "multi" and record.gold.mode is None


def test_hand_crafted_agents_come_from_role_and_algorithm_generated_from_name(who_and_when):
    records, _ = who_and_when
    hc = next(r for r in records if r.id == "who_and_when/hand_crafted/1")
    raw = json.loads((WHO_AND_WHEN / "Hand-Crafted" / "1.json").read_text())
    handoff = next(i for i, e in enumerate(raw["history"]) if e["role"].startswith("Orchestrator (->"))
    assert (
        hc.steps[handoff].agent == "Orchestrator"
        and hc.steps[handoff].recipient == raw["history"][handoff]["role"][len("Orchestrator (-> ") : -1]
    )
    assert hc.steps[0].kind == "user" and hc.steps[0].role == "human"
    ag = next(r for r in records if r.id == "who_and_when/algorithm_generated/1")
    raw = json.loads((WHO_AND_WHEN / "Algorithm-Generated" / "1.json").read_text())
    assert [s.agent for s in ag.steps] == [e["name"] for e in raw["history"]]
    assert set(ag.task.system_prompts) == set(raw["system_prompt"])
    assert all(s.kind == "tool" for s in ag.steps if s.agent == "Computer_terminal")


def test_the_six_label_author_mismatches_are_kept_and_flagged(who_and_when):
    records, _ = who_and_when
    flagged = sorted(r.id for r in records if r.origin.warnings)
    assert flagged == sorted(
        [
            "who_and_when/hand_crafted/20",
            "who_and_when/hand_crafted/22",
            "who_and_when/hand_crafted/49",
            "who_and_when/algorithm_generated/14",
            "who_and_when/algorithm_generated/15",
            "who_and_when/algorithm_generated/59",
        ]
    )


def test_bad_who_and_when_files_are_named_and_skipped(tmp_path):
    folder = tmp_path / "Algorithm-Generated"
    folder.mkdir()
    shutil.copy(WHO_AND_WHEN / "Algorithm-Generated" / "1.json", folder / "1.json")
    (folder / "2.json").write_text("{not json")
    good = json.loads((WHO_AND_WHEN / "Algorithm-Generated" / "3.json").read_text())
    (folder / "3.json").write_text(json.dumps({**good, "mistake_step": "40"}))
    (folder / "4.json").write_text(json.dumps({k: v for k, v in good.items() if k != "mistake_agent"}))
    (folder / "5.json").write_text(json.dumps({**good, "mistake_step": "two"}))
    records, summary = _import("whowhen", tmp_path)
    assert (summary.read, summary.imported, summary.skipped) == (5, 1, 4)
    problems = {Path(p.path).name: p.field for p in summary.problems}
    assert problems == {
        "2.json": "<json>",
        "3.json": "mistake_step",
        "4.json": "mistake_agent",
        "5.json": "mistake_step",
    }
    assert f"outside history[0..{len(good['history']) - 1}]" in str(
        next(p for p in summary.problems if p.path.endswith("3.json"))
    )


# --- Who&When Pro ------------------------------------------------------------------------------------

# (framework, modality, topology, gold step index, label as the source writes it, gold step's rendered
#  coordinate, agent, failforge mode, release mode)
EXPECTED_PRO = {
    "eva": ("video", "single", 6, "6", "2", "agent", "P.1", "P.1"),
    "magentic-one": ("text", "multi", 4, "1.1", "1.1", "websurfer", "R.1", "R.1"),
    "macnet": ("text", "multi", 2, "1.0", "1.0", "node_1", "C.3", "C.3"),
    "alfagent": ("text", "single", 3, "3", "3", "agent", "A.6", "A.4"),
    "debate": ("text", "multi", 4, "round 1", "1.1", "agent_1", "C.3", "C.3"),
    "dylan": ("text", "multi", 3, "round 1", "1.0", "agent_0", "R.2", "R.2"),
    "mathchat": ("text", "single", 4, "3", "3", "assistant", "R.3", "R.3"),
    "metagpt": ("text", "multi", 2, "1", "1", "engineer", "R.4", "R.4"),
    "pixelcraft": ("image", "single", 2, "0.1", "0.1", "reasoner", "P.1", "P.1"),
    "dvd": ("video", "multi", 3, "3", "1", "frame_inspect_agent", "P.1", "P.1"),
}


@pytest.fixture(scope="module")
def whowhen_pro():  # type: ignore[no-untyped-def]
    return _import("whowhen-pro", FIXTURES / "whowhen_pro")


def test_whowhen_pro_rows_follow_each_frameworks_step_convention(whowhen_pro):
    records, summary = whowhen_pro
    assert (summary.read, summary.imported, summary.skipped) == (12, 12, 0)
    seen = set()
    for record in records:
        if record.framework not in EXPECTED_PRO:
            continue
        seen.add(record.framework)
        modality, topology, step, label, coordinate, agent, mode, source_mode = EXPECTED_PRO[record.framework]
        g = record.gold
        assert (record.modality, record.topology, g.step, g.step_label, g.agent, g.mode, g.source_mode) == (
            modality,
            topology,
            step,
            label,
            agent,
            mode,
            source_mode,
        ), record.id
        assert record.steps[g.step].coordinate.label == coordinate, record.id
    assert seen == set(EXPECTED_PRO)


def test_whowhen_pro_gold_lands_on_the_injected_turn(whowhen_pro):
    records, _ = whowhen_pro
    for record in records:
        rows = [json.loads(line) for line in Path(record.origin.path).read_text().splitlines()]
        trajectory = json.loads(next(r for r in rows if r["id"] == record.origin.row_id)["trajectory"])
        flagged = [
            e for e in trajectory if e.get("injected") or e.get("is_injected") or "injected" in (e.get("phase") or [])
        ]
        if flagged:  # eva, magentic-one, macnet mark the injected entry, as the release does
            text = flagged[0].get("content") or flagged[0].get("output")
            assert record.steps[record.gold.step].content.startswith(text.strip()[:40]), record.id


def test_eva_gold_agrees_with_the_harness_scorer_arithmetic(whowhen_pro):
    records, _ = whowhen_pro
    eva = next(r for r in records if r.framework == "eva")
    native = int(eva.gold.step_label)
    assert str((native - 2) // 2) == eva.steps[eva.gold.step].coordinate.label
    assert [s.kind for s in eva.steps[:2]] == ["system", "user"] and eva.steps[eva.gold.step].role == "assistant"


def test_smolagents_cursor_starts_at_zero_only_with_a_plan(whowhen_pro):
    records, _ = whowhen_pro
    planned = next(r for r in records if r.framework == "smolagents" and r.modality == "image")
    plain = next(r for r in records if r.framework == "smolagents" and r.modality == "text")
    assert [s.coordinate.label for s in planned.steps[1:]] == ["0", "1", "2"]
    assert [s.coordinate.label for s in plain.steps[1:]] == ["1", "2", "3"]
    assert planned.steps[0].images and planned.steps[0].images[0].sha256
    assert (planned.gold.step, plain.gold.step) == (3, 2)


def test_round_only_gold_accepts_any_turn_of_the_round(whowhen_pro):
    records, _ = whowhen_pro
    debate = next(r for r in records if r.framework == "debate")
    assert debate.accepted_step_set() == {3, 4} and debate.gold.step == 4  # agent_1's turn first


def test_bad_whowhen_pro_rows_are_named_by_line_and_field():
    records, summary = _import("whowhen-pro", FIXTURES / "whowhen_pro_bad")
    assert (summary.read, summary.imported, summary.skipped) == (6, 1, 5)
    assert [(p.line, p.field) for p in summary.problems] == [
        (1, "<json>"),
        (2, "trajectory"),
        (3, "framework"),
        (4, "ground_truth.step"),
        (5, "ground_truth"),
    ]
    assert all(p.path.endswith("whowhen_pro_bad/data/text.jsonl") for p in summary.problems)
    assert records[0].framework == "metagpt"


# --- TracerTraj ---------------------------------------------------------------------------------------


def test_tracertraj_parquet_and_jsonl_read_the_same():
    require("pyarrow")
    from_parquet, s1 = _import("tracertraj", FIXTURES / "tracertraj" / "sample.parquet")
    from_jsonl, s2 = _import("tracertraj", FIXTURES / "tracertraj" / "sample.jsonl")
    assert s1.imported == s2.imported == 4
    strip = lambda r: (r.gold.model_dump(), [s.model_dump() for s in r.steps], r.task.model_dump())  # noqa: E731
    assert [strip(r) for r in from_parquet] == [strip(r) for r in from_jsonl]
    raw = [json.loads(line) for line in (FIXTURES / "tracertraj" / "sample.jsonl").read_text().splitlines()]
    for record, row in zip(from_jsonl, raw, strict=False):
        index = next(h["step"] for h in row["history"] if str(h["step"]) == row["mistake_step"])
        assert record.gold.step == index and record.gold.agent == row["mistake_agent"]


def test_bad_tracertraj_rows_are_named_and_skipped():
    records, summary = _import("tracertraj", FIXTURES / "tracertraj_bad.jsonl")
    assert [(p.line, p.field) for p in summary.problems] == [
        (1, "<json>"),
        (2, "mistake_agent"),
        (3, "mistake_step"),
        (4, "history"),
    ]
    assert [r.origin.row_id for r in records] == ["still-good"]


# --- failforge gold -----------------------------------------------------------------------------------


def test_failforge_gold_keeps_steps_and_label(tmp_path):
    from failforge.trajectory import load_jsonl

    gold, _ = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    records, summary = _import("failforge", FIXTURES / "failforge_gold.jsonl")
    assert summary.imported == len(gold) == 6
    for trajectory, record in zip(gold, records, strict=False):
        label = trajectory.label
        assert (record.gold.step, record.gold.agent, record.gold.mode) == (
            label.decisive_step,
            label.decisive_agent,
            label.mode_code,
        )
        assert len(record.steps) == len(trajectory.steps) and record.origin.line is not None
        assert label.steering_note not in record.gold.rationale
        assert trajectory.steps[label.decisive_step].agent == record.steps[record.gold.step].agent
    lines = (FIXTURES / "failforge_gold.jsonl").read_text().splitlines()
    (tmp_path / "g.jsonl").write_text(lines[0] + "\n{oops\n" + lines[1] + "\n")
    records, summary = _import("failforge", tmp_path / "g.jsonl")
    assert summary.imported == 2 and [(p.line, p.field) for p in summary.problems] == [(2, "<json>")]
