"""A DA-Bench gold record (tests/fixtures/dabench/gold.jsonl: R.3 early rounding at the scripted analyst's third code
step, from scripts/dabench_campaign.py) exported as a Who&When Pro row in the release's smolagents convention,
read back by the release importer at the same step; the release's own smolagents row read by the same code."""

from __future__ import annotations

import json
from pathlib import Path

from failforge.exporters.whowhen_pro import export_whowhen_pro
from failforge.plugins import importers
from failforge.trajectory import load_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_code_agent_gold_record_is_a_smolagents_row_whose_step_reads_back(tmp_path: Path) -> None:
    gold, problems = load_jsonl(FIXTURES / "dabench" / "gold.jsonl")
    assert not problems and gold[0].label is not None
    record = gold[0]
    export_whowhen_pro(gold, tmp_path)
    row = json.loads((tmp_path / "data" / "text.jsonl").read_text().splitlines()[0])
    assert row["framework"] == "smolagents"
    trajectory = json.loads(row["trajectory"])
    truth = json.loads(row["ground_truth"])
    actions = [e for e in trajectory if e["kind"] == "action"]
    assert [e["step_number"] for e in actions] == [1, 2, 3, 4]
    decisive_ordinal = [s.index for s in record.steps if s.kind == "agent"].index(record.label.decisive_step) + 1
    assert truth["step"] == decisive_ordinal == 3
    assert actions[2]["reasoning"] == record.steps[record.label.decisive_step].content
    assert actions[2]["observation"].startswith("Execution logs:\n{'mean_mar_2019': '171.4'")
    assert actions[-1]["is_final_answer"] is True and "@mean_mar_2019[171.4]" in actions[-1]["observation"]
    back = [r for r in importers.get("whowhen-pro")(tmp_path) if not isinstance(r, Exception)]
    assert len(back) == 1
    again = back[0]
    assert again.steps[again.gold.step].content.startswith(record.steps[record.label.decisive_step].content or "")
    assert again.origin.step_convention.startswith("smolagents")


def test_the_release_smolagents_row_reads_at_its_cursor() -> None:
    rows = [
        r
        for r in importers.get("whowhen-pro")(FIXTURES / "attribution" / "whowhen_pro")
        if not isinstance(r, Exception) and r.framework == "smolagents"
    ]
    assert rows
    row = rows[0]
    assert row.steps[row.gold.step].content.startswith("Thought: the sum is 10 over 5 values.")  # action step_number 2


def test_an_exported_row_names_the_benchmark_as_the_release_does_and_keeps_the_difficulty_in_extras(
    tmp_path: Path,
) -> None:
    release = [
        json.loads(line)
        for line in (FIXTURES / "attribution" / "whowhen_pro" / "data" / "text.jsonl").read_text().splitlines()
    ]
    released = next(r for r in release if r["framework"] == "smolagents")
    gold, problems = load_jsonl(FIXTURES / "dabench" / "gold.jsonl")
    assert not problems
    export_whowhen_pro(gold, tmp_path)
    row = json.loads((tmp_path / "data" / "text.jsonl").read_text().splitlines()[0])
    assert row["benchmark"] == released["benchmark"] == "dabench"
    # the release's id is framework__benchmark__mode__task__...; failforge's adds the harness after the framework
    assert released["id"].split("__")[1] == "dabench"
    assert row["id"].split("__")[:4] == ["smolagents", "smolagents.code", "dabench", "R.3"]
    assert json.loads(row["extras"])["difficulty"] == gold[0].task.metadata["level"] == "easy"
