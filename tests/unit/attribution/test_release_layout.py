"""The Who&When Pro release layout as its evaluation harness (``whowhen_eval``) reads it, on hand-made records
with the shapes that broke the earlier export: a user turn after the task (BFCL's later turns), two agent
turns with nothing between them, a team's tool results (the harness's multi-agent renderer shows agent
entries only), screenshots (the ``image_gui`` split, base64 as in the release's image rows); the GUI split's
frameworks as the importer reads them; the dataset card and the manifest; the run's framework; the
OpenTelemetry export's traces and their sidecar.

What "the harness shows" means here is the harness's renderers' rules, restated: eva folds the one tool
turn after an assistant turn into that step and scores ``(step - 2) // 2``; magentic-one renders each
``kind: agent`` entry's ``output`` and its ``tool_actions`` as JSON and nothing else; the GUI renderer
numbers ``kind: action`` entries by ``step_number`` and shows ``reasoning``, ``action`` and ``observation``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from failforge.attribution import summarise
from failforge.attribution._record import (
    FailureStep,
    Gold,
    ImageRef,
    LabelledFailure,
    Origin,
    StepCoordinate,
    TaskInfo,
    ToolCallRecord,
)
from failforge.attribution.importers.failforge_gold import from_trajectory
from failforge.plugins import exporters, importers
from failforge.trajectory import ComponentSpec, load_jsonl

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"
#: A 1x1 PNG: the screenshot of the GUI records.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def _record(
    steps: list[FailureStep],
    gold_step: int,
    *,
    topology: str = "single",
    agent: str = "agent",
    modality: str = "text",
    framework: str = "failforge.tool_calling",
) -> LabelledFailure:
    agents = sorted({s.agent for s in steps if s.kind == "agent"})
    return LabelledFailure(
        id=f"hand/{gold_step}",
        source="failforge/hand",
        framework=framework,
        benchmark="hand",
        topology=topology,
        modality=modality,
        agents=agents,  # type: ignore[arg-type]
        task=TaskInfo(question="q", gold_answer="a"),
        steps=steps,
        gold=Gold(agent=agent, step=gold_step, mode="A.3", source_mode="A.3", step_label=str(gold_step)),
        origin=Origin(format="failforge", path="hand", step_convention="hand"),
    )


def _rows(out: Path, split: str) -> list[dict]:
    rows = [json.loads(line) for line in (out / "data" / f"{split}.jsonl").read_text().splitlines()]
    return [{**r, **{k: json.loads(r[k]) for k in ("task", "trajectory", "ground_truth", "extras")}} for r in rows]


def _back(out: Path) -> list[LabelledFailure]:
    records, summary = summarise(importers.get("whowhen-pro")(out))
    assert summary.skipped == 0, [str(p) for p in summary.problems]
    return records


def test_eva_folds_later_user_turns_and_pads_back_to_back_turns(tmp_path):
    call = ToolCallRecord(id="c1", name="ls", arguments="{}")
    steps = [
        FailureStep(index=0, kind="user", agent="user", content="turn one"),
        FailureStep(index=1, kind="agent", agent="agent", content="listing", tool_calls=[call]),
        FailureStep(index=2, kind="tool", agent="ls", content="a.txt", tool_call_id="c1"),
        FailureStep(index=3, kind="agent", agent="agent", content="there is a.txt"),
        FailureStep(index=4, kind="user", agent="user", content="turn two: delete it"),
        FailureStep(index=5, kind="agent", agent="agent", content="thinking"),
        FailureStep(index=6, kind="agent", agent="agent", content="deleted the wrong file"),
    ]
    summary = exporters.get("whowhen-pro-release")([_record(steps, 6)], tmp_path)
    assert summary.written == 1 and not summary.skipped
    [row] = _rows(tmp_path, "text")
    trajectory, gt = row["trajectory"], row["ground_truth"]
    assert [e["kind"] for e in trajectory] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert "turn two: delete it" in trajectory[5]["content"] and trajectory[5]["parts"][0]["kind"] == "user"
    assert trajectory[7] == {"kind": "tool", "content": "", "tool_name": "(no observation)", "parts": []}
    assert (
        row["framework"] == "eva" and gt["step"] == 8 and (gt["step"] - 2) // 2 == 3
    )  # the harness's Step 3 is turn 3
    back = _back(tmp_path)[0]
    assert [s.kind for s in back.steps] == ["system", "user", "agent", "tool", "agent", "user", "agent", "agent"]
    assert back.steps[back.gold.step].content == "deleted the wrong file" and back.gold.mode == "A.3"


def _team(with_user: bool = True) -> LabelledFailure:
    def at(r: int, p: int) -> StepCoordinate:
        return StepCoordinate(label=f"{r}.{p}", round=r, position=p)

    steps = [
        FailureStep(index=0, kind="user", agent="user", content="task"),
        FailureStep(
            index=1,
            kind="agent",
            agent="lead",
            content="ask the worker",
            coordinate=at(1, 0),
            recipient="worker",
            tool_calls=[ToolCallRecord(id="d1", name="ask_worker", arguments='{"q": "balance"}')],
        ),
        FailureStep(
            index=2,
            kind="agent",
            agent="worker",
            content="checking",
            coordinate=at(1, 1),
            tool_calls=[ToolCallRecord(id="t1", name="get_balance", arguments="{}")],
        ),
        FailureStep(
            index=3, kind="tool", agent="get_balance", content="balance: 1810.0", tool_call_id="t1", coordinate=at(1, 2)
        ),
        FailureStep(index=4, kind="tool", agent="monitor", content="rate limit warning", coordinate=at(1, 3)),
    ]
    if with_user:
        steps.append(FailureStep(index=5, kind="user", agent="user", content="also pay rent"))
    steps.append(
        FailureStep(index=len(steps), kind="agent", agent="worker", content="balance is 1810", coordinate=at(2, 0))
    )
    record = _record(steps, 2, topology="multi", agent="worker")
    return record.model_copy(update={"roles": {"lead": "orchestrator", "worker": "worker"}})


def test_magentic_one_rows_show_each_tool_result_under_the_call_that_asked_for_it(tmp_path):
    exporters.get("whowhen-pro")([_team()], tmp_path)
    [row] = _rows(tmp_path, "text")
    agents = [e for e in row["trajectory"] if e["kind"] == "agent"]  # all the harness's renderer shows
    worker = agents[1]
    assert worker["tool_actions"][0]["result"] == "balance: 1810.0"
    assert worker["tool_actions"][1] == {"type": "observation", "name": "monitor", "result": "rate limit warning"}
    assert worker["tool_actions"][2] == {"type": "observation", "name": "user", "result": "also pay rent"}
    rendered = "\n".join(
        json.dumps(e.get("tool_actions", []), ensure_ascii=False, indent=2) + e["output"] for e in agents
    )
    assert all(text in rendered for text in ("balance: 1810.0", "rate limit warning", "also pay rent"))
    assert row["ground_truth"] == {"agent": "worker", "step": "1.1", "mode": "A.1"}
    back = _back(tmp_path)[0]
    assert [s.kind for s in back.steps] == ["user", "agent", "agent", "tool", "tool", "user", "agent"]
    assert [c.name for c in back.steps[2].tool_calls] == ["get_balance"]  # observations placed there are not calls
    assert back.steps[back.gold.step].agent == "worker" and back.gold.mode == "A.3"


@pytest.fixture
def screenshots(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FAILFORGE_IMAGE_DIR", str(tmp_path / "images"))
    from failforge.images import ImageStore

    return ImageStore().put(PNG)


def test_screenshot_records_go_to_the_gui_split_with_their_screens_embedded(tmp_path, screenshots):
    shot = ImageRef(sha256=screenshots)
    steps = [
        FailureStep(index=0, kind="user", agent="user", content="click the button", images=[shot]),
        FailureStep(
            index=1,
            kind="agent",
            agent="agent",
            content="I click",
            tool_calls=[ToolCallRecord(id="c", name="click", arguments='{"x": 3}')],
        ),
        FailureStep(index=2, kind="tool", agent="click", content="clicked at (3, 0)", tool_call_id="c", images=[shot]),
        FailureStep(index=3, kind="agent", agent="agent", content="done"),
    ]
    out = tmp_path / "release"
    exporters.get("whowhen-pro")([_record(steps, 3, modality="image", framework="failforge.miniwob_vision")], out)
    assert not (out / "data" / "text.jsonl").exists()
    [row] = _rows(out, "image_gui")
    assert row["framework"] == "agentoccam" and row["extras"]["agent_framework"] == "failforge.miniwob_vision"
    actions = [e for e in row["trajectory"] if e["kind"] == "action"]
    assert [a["step_number"] for a in actions] == [1, 2] and row["ground_truth"] == {
        "agent": None,
        "step": 2,
        "mode": "A.1",
    }
    assert all(a["agent"] == "web_agent" for a in actions)  # score.py's one label for agentoccam
    image = actions[0]["observation_images"][0]
    assert base64.b64decode(image["data"]) == PNG and image["mime"] == "image/png"
    assert actions[0]["action"] == 'click({"x": 3})' and "clicked at (3, 0)" in actions[0]["observation"]
    assert base64.b64decode(row["task"]["images"][0]["data"]) == PNG
    back = _back(out)[0]
    assert back.modality == "image" and back.extra["split"] == "image_gui" and back.gold.agent == "agent"
    assert (
        back.steps[back.gold.step].content == "done"
        and back.steps[1].images[0].sha256 == hashlib.sha256(PNG).hexdigest()
    )


def _gui_row(framework: str, agents: list[str], gold_agent: str | None, step: int) -> dict:
    trajectory = [{"kind": "user", "content": "book a flight"}]
    for n, agent in enumerate(agents, 1):
        trajectory.append(
            {
                "kind": "action",
                "step_number": n,
                "agent": agent,
                "reasoning": f"r{n}",
                "action": f"click({n})",
                "observation": f"url_after=/p{n}",
                "is_final_answer": n == len(agents),
            }
        )
    return {
        "id": f"{framework}-1",
        "framework": framework,
        "benchmark": "webvoyager",
        "task": json.dumps({"query": "book a flight"}),
        "trajectory": json.dumps(trajectory),
        "ground_truth": json.dumps({"agent": gold_agent, "step": step, "mode": "A.1"}),
        "extras": json.dumps({"agents": [{"id": a} for a in dict.fromkeys(agents)]}),
    }


def test_importer_reads_the_gui_split_and_its_four_frameworks(tmp_path):
    (tmp_path / "data").mkdir()
    rows = [
        _gui_row("coact", ["orchestrator", "coder", "computer"], "coder", 2),
        _gui_row("openai_cua", ["computer_use_agent"] * 3, None, 3),
        _gui_row("agentoccam", ["web_agent"] * 2, None, 1),
        _gui_row("gemini", ["web_agent"] * 2, None, 2),
    ]
    (tmp_path / "data" / "image_gui.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    back = {r.framework: r for r in _back(tmp_path)}
    assert set(back) == {"coact", "openai_cua", "agentoccam", "gemini"}
    coact = back["coact"]
    assert (
        coact.topology == "multi"
        and coact.gold.agent == "coder"
        and coact.steps[coact.gold.step].content.startswith("r2")
    )
    assert back["openai_cua"].topology == "single" and back["openai_cua"].gold.agent == "computer_use_agent"
    assert (
        back["openai_cua"].gold.step_label == "3" and back["gemini"].gold.mode == "A.2"
    )  # release A.1 -> failforge A.2
    assert all(r.modality == "image" for r in back.values())


def test_card_and_manifest_describe_the_files_written(tmp_path):
    gold, bad = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    assert not bad
    records = [from_trajectory(g) for g in gold] + [
        _team(),
        _record(
            [
                FailureStep(index=0, kind="user", agent="user", content="q"),
                FailureStep(index=1, kind="agent", agent="agent", content="x"),
            ],
            1,
        ),
    ]
    summary = exporters.get("whowhen-pro")(records, tmp_path)
    assert summary.written == 8
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    listed = {f["path"]: f for f in manifest["files"]}
    assert set(listed) == {"data/text.jsonl", "taxonomy.yaml", "README.md"}
    for path, entry in listed.items():
        assert entry["sha256"] == hashlib.sha256((tmp_path / path).read_bytes()).hexdigest()
    assert listed["data/text.jsonl"]["rows"] == 8 and manifest["generator"]["name"] == "failforge"
    card = (tmp_path / "README.md").read_text()
    assert "| hand | failforge.tool_calling | A.1 | 2 |" in card  # benchmark x framework x mode
    assert "## Decisive-step positions" in card and "## Lengths" in card
    rows = sum(
        int(line.rsplit("|", 2)[1]) for line in card.split("| position | gold |")[1].split("\n\n")[0].splitlines()[2:]
    )
    assert rows == 8
    taxonomy = yaml.safe_load((tmp_path / "taxonomy.yaml").read_text())
    assert len([c for c, b in taxonomy.items() if isinstance(b, dict)]) == 17


def test_the_external_harness_gold_carries_its_framework(tmp_path):
    gold, _ = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    external = gold[0].model_copy(
        update={"harness": ComponentSpec(name="external", config={"framework": "strands-agents"})}
    )
    record = from_trajectory(external)
    assert record.framework == "strands-agents" and record.extra["harness"] == "external"
    exporters.get("whowhen-pro")([external], tmp_path)
    [row] = _rows(tmp_path, "text")
    assert row["extras"]["agent_framework"] == "strands-agents" and "strands-agents" in row["id"]
    assert "| strands-agents |" in (tmp_path / "README.md").read_text()


def test_otel_traces_carry_no_answer_and_the_sidecar_names_the_decisive_span(tmp_path):
    gold, _ = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    summary = exporters.get("otel")(gold, tmp_path)
    assert summary.written == len(gold)
    lines = (tmp_path / "traces.jsonl").read_text().splitlines()
    labels = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    for line, trajectory, label in zip(lines, gold, labels, strict=True):
        assert trajectory.label.steering_note not in line and trajectory.id not in line and '"phase"' not in line
        [resource] = json.loads(line)["resourceSpans"]
        spans = resource["scopeSpans"][0]["spans"]
        assert resource["scopeSpans"][0]["schemaUrl"].endswith("/1.44.0")
        assert {s["traceId"] for s in spans} == {label["trace_id"]} and len(spans) == len(trajectory.steps)
        by_id = {s["spanId"]: {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans}
        decisive = by_id[label["gold"]["decisive_span_id"]]
        assert (
            decisive["openinference.span.kind"] == "LLM"
            and decisive["gen_ai.agent.name"] == trajectory.label.decisive_agent
        )
        assert decisive["failforge.step.index"] == str(trajectory.label.decisive_step)  # OTLP-JSON ints are strings
        assert label["gold"]["mode"] == trajectory.label.mode_code and label["success"] is False
        kinds = {a["openinference.span.kind"] for a in by_id.values()}
        assert kinds <= {"AGENT", "CHAIN", "LLM", "TOOL"}
