"""failforge gold -> each public format -> failforge's importer of that format: the same records, for the
single-agent topology (the demo's real gold) and the bundled multi-agent seeds (orchestrator-workers,
plan-execute-verify) labelled at every agent step. The framework adapters' teams are in
tests/integration/test_export_round_trip_frameworks.py. What "identical" means per format is in
tests/export_round_trips.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _required import require
from export_round_trips import FORMATS, golds_of, round_trip
from failforge.attribution.importers.failforge_gold import from_trajectory
from failforge.plugins import exporters
from failforge.trajectory import load_jsonl

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "attribution"
MULTI = ROOT / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"


def _gold(topology: str) -> list:  # type: ignore[type-arg]
    if topology == "single":
        gold, bad = load_jsonl(FIXTURES / "failforge_gold.jsonl")
        assert not bad and len(gold) == 6
        return gold
    seeds, bad = load_jsonl(MULTI)
    assert not bad
    seed = next(s for s in seeds if s.harness.name == topology)
    return golds_of(seed)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("topology", ["single", "orchestrator-workers", "plan-execute-verify"])
def test_every_record_comes_back_identical(tmp_path, topology, fmt):
    if fmt.endswith("parquet"):
        require("pyarrow")
    gold = _gold(topology)
    result = round_trip(fmt, gold, tmp_path)
    assert result.skipped == [] and result.differences == []
    assert result.written == result.reimported == result.identical == len(gold) > 0


def _rows(path: Path) -> list[dict]:  # type: ignore[type-arg]
    out = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        out.append(
            {
                **row,
                "trajectory": json.loads(row["trajectory"]),
                "ground_truth": json.loads(row["ground_truth"]),
                "extras": json.loads(row["extras"]),
            }
        )
    return out


def test_a_delegation_mistake_is_visible_in_the_release_rows(tmp_path):
    """A C.1 gold at the orchestrator's delegation: the decisive entry carries the call, roles are the agents' own."""
    gold = _gold("orchestrator-workers")
    decisive = next(g for g in gold if g.label.mode_code == "C.1")
    summary = exporters.get("whowhen-pro")([decisive], tmp_path / "wwp")
    assert summary.written == 1 and not summary.skipped
    row = _rows(tmp_path / "wwp" / "data" / "text.jsonl")[0]
    assert row["framework"] == "magentic-one"
    step = decisive.steps[decisive.label.decisive_step]
    entry = next(e for e in row["trajectory"] if e.get("phase") == ["injected"])
    assert row["ground_truth"] == {"agent": "orchestrator", "step": f"{step.round}.{step.position}", "mode": "C.1"}
    assert entry["agent"] == "orchestrator" and entry["role"] == "orchestrator" and entry["recipient"] == step.recipient
    assert (
        [(a["name"], a["args"]) for a in entry["tool_actions"]]
        == [(c.name, json.loads(c.arguments)) for c in step.tool_calls]
        != []
    )
    roles = {a["id"]: a["role"] for a in row["extras"]["agents"]}
    assert roles == {
        "orchestrator": "orchestrator",
        "banking_worker": "worker",
        "files_worker": "worker",
        "account_worker": "worker",
    }
    kinds = {e["kind"] for e in row["trajectory"]}
    assert kinds == {"user", "agent", "tool"}
    tools = [e for e in row["trajectory"] if e["kind"] == "tool"]
    observed = [(s.tool_name, s.tool_call_id, s.content) for s in decisive.steps if s.kind == "tool"]
    assert [(e["tool_name"], e["tool_call_id"], e["content"]) for e in tools] == observed != [] and not any(
        "agent" in e for e in tools
    )
    assert {e["agent"] for e in row["trajectory"] if e["kind"] == "agent"} <= set(roles)
    phases = [e.get("phase") for e in row["trajectory"][1:]]
    t = phases.index(["injected"])
    assert set(map(tuple, phases[:t])) <= {("replayed",)} and set(map(tuple, phases[t + 1 :])) <= {("live",)}


def test_who_and_when_logs_name_tool_output_as_the_public_logs_do(tmp_path):
    gold = _gold("orchestrator-workers")
    exporters.get("whowhen")(gold[:1], tmp_path / "ww")
    log = json.loads((tmp_path / "ww" / "1.json").read_text())
    record = from_trajectory(gold[0])
    tool_entries = [h for h, s in zip(log["history"], record.steps, strict=True) if s.kind == "tool"]
    assert tool_entries and all(h["name"] == "Computer_terminal" and h["role"] == "user" for h in tool_entries)
    # as in the 126 Algorithm-Generated logs of Who&When, where every tool output is written so
    public = [
        h
        for n in range(1, 11)
        for h in json.loads((FIXTURES / "who_and_when" / "Algorithm-Generated" / f"{n}.json").read_text())["history"]
        if h["name"] == "Computer_terminal"
    ]
    assert public and {h["role"] for h in public} == {"user"}


def test_failforge_gold_importer_carries_coordinates_recipients_and_roles():
    gold = _gold("plan-execute-verify")[0]
    record = from_trajectory(gold)
    assert record.roles == {"planner": "planner", "executor": "executor", "verifier": "verifier"}
    for step, source in zip(record.steps, gold.steps, strict=True):
        assert step.coordinate is not None and (step.coordinate.round, step.coordinate.position) == (
            source.round,
            source.position,
        )
        assert step.recipient == source.recipient
        assert step.role == ({"task": "user", "tool": "tool"}.get(source.kind) or record.roles[source.agent])


def test_a_record_without_coordinates_is_skipped_with_a_reason(tmp_path):
    gold = _gold("orchestrator-workers")[:2]
    records = [from_trajectory(g) for g in gold]
    flat = records[0].model_copy(
        update={"steps": [s.model_copy(update={"coordinate": None}) for s in records[0].steps]}
    )
    summary = exporters.get("whowhen-pro")([flat, records[1]], tmp_path / "wwp")
    assert summary.written == 1 and len(summary.skipped) == 1 and "round/position" in summary.skipped[0].problem
