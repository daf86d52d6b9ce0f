"""Round trips: failforge gold -> public layout -> read the way that dataset's own reader reads it -> import.

The reader conventions checked here are the public code's (not failforge's): Who&When's scripts sort
``*.json`` by the digits in the name and index ``history`` with ``int(mistake_step)``; the Who&When Pro
harness reads ``id``/``framework``/``benchmark`` off a row's prefix, decodes four JSON strings,
splices ``extras`` in, loads ``taxonomy.yaml`` as code -> {name, description}, and for eva skips
[0] system and [1] user and scores ``(ground_truth.step - 2) // 2``; TracerTraj rows have the released
parquet schema and ``mistake_step`` equals the gold entry's ``step``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from _required import require
from failforge.attribution import summarise
from failforge.attribution._codes import RELEASE_TAXONOMY
from failforge.attribution._record import (
    FailureStep,
    Gold,
    LabelledFailure,
    Origin,
    StepCoordinate,
    TaskInfo,
    ToolCallRecord,
)
from failforge.plugins import exporters, importers
from failforge.trajectory import load_jsonl

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"
ROW_PREFIX = re.compile(rb'\{"id":"([^"\\]*)","framework":"([^"\\]*)","benchmark":"([^"\\]*)"')


@pytest.fixture(scope="module")
def gold():  # type: ignore[no-untyped-def]
    trajectories, bad = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    assert not bad and len(trajectories) == 6
    return trajectories


def _reimport(fmt: str, path: Path):  # type: ignore[no-untyped-def]
    records, summary = summarise(importers.get(fmt)(path))
    assert summary.skipped == 0, [str(p) for p in summary.problems]
    return records


def test_whowhen_export_is_a_folder_of_numbered_logs_its_scripts_read(gold, tmp_path):
    summary = exporters.get("whowhen")(gold, tmp_path / "ww")
    files = sorted((tmp_path / "ww").glob("*.json"), key=lambda p: int("".join(filter(str.isdigit, p.name)) or 0))
    assert summary.written == 6 and [f.name for f in files] == [f"{i}.json" for i in range(1, 7)]
    logs = [json.loads(f.read_text()) for f in files]
    ids = [log["question_ID"] for log in logs]
    assert len(set(ids)) == 6 and not any("/" in i for i in ids)
    for trajectory, log in zip(gold, logs, strict=False):
        label = trajectory.label
        assert (
            isinstance(log["mistake_step"], str)
            and log["history"][int(log["mistake_step"])]["name"] == log["mistake_agent"] == label.decisive_agent
        )
        assert log["system_prompt"][label.decisive_agent]  # the agent's real system prompt
        reason = log["mistake_reason"]
        assert label.steering_note not in reason and label.mode_code.split(".")[0] in reason
        assert (
            re.search(r"Agent Name:\s*([\w_]+)", f"Agent Name: {log['mistake_agent']}").group(1) == log["mistake_agent"]
        )
    back = _reimport("whowhen", tmp_path / "ww")
    assert [(r.gold.agent, r.gold.step) for r in back] == [
        (t.label.decisive_agent, t.label.decisive_step) for t in gold
    ]
    # Who&When has no mode field: the mode survives only in mistake_reason's text.


def _release_from_row(line: bytes, split: str) -> dict:
    prefix = ROW_PREFIX.match(line)
    assert prefix is not None  # the harness reads id/framework/benchmark off the first bytes
    row = json.loads(line)
    assert all(isinstance(row[k], str) for k in ("task", "trajectory", "ground_truth", "extras"))
    release = {
        "id": row["id"],
        "framework": row["framework"],
        "benchmark": row["benchmark"],
        "modality": split,
        "task": json.loads(row["task"]),
        "trajectory": json.loads(row["trajectory"]),
        "ground_truth": json.loads(row["ground_truth"]),
    }
    release.update(json.loads(row["extras"]))
    return release


@pytest.mark.parametrize("codes", ["release", "failforge"])
def test_whowhen_pro_export_loads_in_the_release_harness_layout(gold, tmp_path, codes):
    out = tmp_path / "wwp"
    summary = exporters.get("whowhen-pro")(gold, out, codes)
    assert summary.written == 6 and not summary.skipped
    loaded = yaml.safe_load((out / "taxonomy.yaml").read_text())
    taxonomy = {c: b for c, b in loaded.items() if isinstance(b, dict)}  # what the harness's load_taxonomy keeps
    assert all({"name", "description"} <= set(body) and body["description"] for body in taxonomy.values())
    if codes == "release":
        mapping = loaded["x-failforge-mapping"]
        assert len(mapping) == 18 and {m["release"] for m in mapping} == set(taxonomy)
        assert {m["failforge"] for m in mapping if m["lossy"]} == {"A.2", "A.3"}
        assert taxonomy["A.1"]["failforge"] == ["A.2", "A.3"]
        assert [(c, b["name"]) for c, b in taxonomy.items()] == list(RELEASE_TAXONOMY)
    else:
        assert len(taxonomy) == 18 and "PL.3" in taxonomy and "A.6" in taxonomy
    split_of = {"agentdojo": "text", "miniwob": "text"}
    releases = []
    for path in sorted((out / "data").glob("*.jsonl")):
        releases += [_release_from_row(line, path.stem) for line in path.read_bytes().splitlines()]
    assert len(releases) == 6
    for trajectory, release in zip(gold, releases, strict=False):
        label = trajectory.label
        gt, steps = release["ground_truth"], release["trajectory"]
        assert (
            release["framework"] == "eva"
            and gt["agent"] is None
            and release["modality"] == split_of[trajectory.task.benchmark]
        )
        assert (
            steps[0]["kind"] == "system"
            and steps[1]["kind"] == "user"
            and steps[1]["content"] == trajectory.task.instruction
        )
        assert steps[gt["step"]]["kind"] == "assistant" and steps[gt["step"]]["injected"] is True
        assert steps[gt["step"]]["content"] == (trajectory.steps[label.decisive_step].content or "")
        ordinal = sum(1 for e in steps[2 : gt["step"]] if e["kind"] == "assistant")
        assert (
            (gt["step"] - 2) // 2
            == ordinal
            == sum(1 for s in trajectory.steps[: label.decisive_step] if s.kind == "agent")
        )
        assert gt["mode"] in taxonomy and f"__{gt['mode']}__" in release["id"]
        assert release["failforge_mode"] == label.mode_code
    back = _reimport("whowhen-pro", out)
    assert [(r.gold.agent, r.gold.mode) for r in back] == [(t.label.decisive_agent, t.label.mode_code) for t in gold]
    assert [r.steps[r.gold.step].content for r in back] == [t.steps[t.label.decisive_step].content or "" for t in gold]


def test_release_codes_are_a_lossy_mapping_without_the_failforge_mode(gold, tmp_path):
    record = importers.get("failforge")(FIXTURES / "failforge_gold.jsonl").__next__()
    record = record.model_copy(update={"gold": record.gold.model_copy(update={"mode": "A.3"})})
    exporters.get("whowhen-pro")([record], tmp_path / "wwp")
    line = (tmp_path / "wwp" / "data" / "text.jsonl").read_text().splitlines()[0]
    row = json.loads(line)
    assert json.loads(row["ground_truth"])["mode"] == "A.1"
    assert _reimport("whowhen-pro", tmp_path / "wwp")[0].gold.mode == "A.3"  # exact, from extras.failforge_mode
    extras = json.loads(row["extras"])
    del extras["failforge_mode"]
    row["extras"] = json.dumps(extras)
    (tmp_path / "wwp" / "data" / "text.jsonl").write_text(json.dumps(row) + "\n")
    assert _reimport("whowhen-pro", tmp_path / "wwp")[0].gold.mode == "A.2"  # release A.1 merges failforge A.2 and A.3


def _record(
    steps: list[FailureStep], gold_step: int, topology: str = "single", agent: str = "agent"
) -> LabelledFailure:
    return LabelledFailure(
        id="hand/1",
        source="hand",
        framework="hand",
        topology=topology,
        agents=sorted({s.agent for s in steps if s.kind == "agent"}),
        task=TaskInfo(question="q", gold_answer="a"),
        steps=steps,
        gold=Gold(agent=agent, step=gold_step, mode="R.3", source_mode="R.3", step_label=str(gold_step)),
        origin=Origin(format="hand", path="hand", step_convention="hand"),
    )


def test_eva_export_merges_several_observations_into_one_tool_turn(tmp_path):
    calls = [ToolCallRecord(id=f"c{i}", name="lookup", arguments=json.dumps({"i": i})) for i in range(3)]
    steps = [
        FailureStep(index=0, kind="user", agent="user", content="q"),
        FailureStep(index=1, kind="agent", agent="agent", content="three lookups", tool_calls=calls),
        *[
            FailureStep(index=2 + i, kind="tool", agent="lookup", content=f"result {i}", tool_call_id=f"c{i}")
            for i in range(3)
        ],
        FailureStep(index=5, kind="agent", agent="agent", content="the answer is 7"),
    ]
    exporters.get("whowhen-pro")([_record(steps, 5)], tmp_path / "wwp")
    release = _release_from_row((tmp_path / "wwp" / "data" / "text.jsonl").read_bytes().splitlines()[0], "text")
    kinds = [e["kind"] for e in release["trajectory"]]
    assert kinds == ["system", "user", "assistant", "tool", "assistant"]
    assert release["ground_truth"]["step"] == 4 and (4 - 2) // 2 == 1  # unmerged, index 6 would score as turn 2
    back = _reimport("whowhen-pro", tmp_path / "wwp")[0]
    assert back.steps[back.gold.step].content == "the answer is 7"


def test_multi_agent_export_needs_coordinates(tmp_path):
    flat = [
        FailureStep(index=0, kind="user", agent="user", content="q"),
        FailureStep(index=1, kind="agent", agent="planner", content="plan"),
        FailureStep(index=2, kind="agent", agent="coder", content="code"),
    ]
    summary = exporters.get("whowhen-pro")([_record(flat, 2, "multi", "coder")], tmp_path / "flat")
    assert summary.written == 0 and "round/position" in summary.skipped[0].problem
    placed = [
        s.model_copy(update={"coordinate": StepCoordinate(label=f"0.{i - 1}", round=0, position=i - 1)}) if i else s
        for i, s in enumerate(flat)
    ]
    summary = exporters.get("whowhen-pro")([_record(placed, 2, "multi", "coder")], tmp_path / "placed")
    release = _release_from_row((tmp_path / "placed" / "data" / "text.jsonl").read_bytes().splitlines()[0], "text")
    assert release["framework"] == "magentic-one" and release["ground_truth"] == {
        "agent": "coder",
        "step": "0.1",
        "mode": "R.3",
    }
    back = _reimport("whowhen-pro", tmp_path / "placed")[0]
    assert (back.gold.agent, back.steps[back.gold.step].content) == ("coder", "code")


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_tracertraj_export_matches_the_released_schema(gold, tmp_path, suffix):
    target = tmp_path / f"tt{suffix}"
    exporters.get("tracertraj")(gold, target)
    if suffix == ".parquet":
        require("pyarrow")
        import pyarrow.parquet as pq

        released = pq.read_schema(FIXTURES / "tracertraj" / "sample.parquet")
        table = pq.read_table(target)
        assert table.schema.remove_metadata().equals(released.remove_metadata())
        rows = table.to_pylist()
    else:
        rows = [json.loads(line) for line in target.read_text().splitlines()]
    for trajectory, row in zip(gold, rows, strict=False):
        assert list(row) == [
            "question_ID",
            "question",
            "ground_truth",
            "history",
            "mistake_agent",
            "mistake_step",
            "mistake_reason",
        ]
        assert isinstance(row["mistake_step"], str) and {h["role"] for h in row["history"]} == {"assistant"}
        entry = next(h for h in row["history"] if str(h["step"]) == row["mistake_step"])
        assert entry["name"] == row["mistake_agent"] == trajectory.label.decisive_agent
    back = _reimport("tracertraj", target)
    assert [(r.gold.agent, r.gold.step) for r in back] == [
        (t.label.decisive_agent, t.label.decisive_step) for t in gold
    ]


def test_unknown_format_lists_the_known_ones():
    from failforge.errors import ConfigError

    with pytest.raises(ConfigError, match="whowhen-pro"):
        exporters.get("csv")
