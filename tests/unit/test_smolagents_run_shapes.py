"""A saved smolagents run whose steps have the wrong shapes is named in one line, never a traceback (review of
issue 35: a ``code_action`` that is not a string escaped ``parse_run`` as a pydantic ValidationError)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.errors import SeedFormatError
from failforge.seeds.smolagents_run import parse_run, read_runs


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({"model_output": "a", "code_action": 5}, "steps[1].code_action"),
        ({"model_output": 7}, "steps[1].model_output"),
        ({"model_output": "a", "is_final_answer": "maybe"}, "steps[1].is_final_answer"),
        ({"model_output": "a", "error": "boom"}, "steps[1].error"),
        ({"model_output": "a", "observations": ["x"]}, "steps[1].observations"),
    ],
)
def test_a_step_field_of_the_wrong_type_is_a_seed_format_error_naming_it(step: dict[str, object], field: str) -> None:
    with pytest.raises(SeedFormatError) as raised:
        parse_run({"steps": [{"task": "t"}, step]}, "run.json")
    assert raised.value.field == field


def test_a_final_answer_of_any_json_type_is_read_as_its_text() -> None:
    run = parse_run(
        {"steps": [{"task": "t"}, {"model_output": "a", "is_final_answer": True, "action_output": {"a": [1]}}]},
        "run.json",
    )
    assert run.final_answer == "{'a': [1]}"


def test_read_runs_reports_each_bad_run_and_keeps_reading(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    good = {"steps": [{"task": "t"}, {"model_output": "a"}]}
    bad = {"steps": [{"task": "t"}, {"code_action": 5}]}
    path.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    found = read_runs(path)
    assert isinstance(found[0][1], SeedFormatError) and "steps[1].code_action" in str(found[0][1])
    assert not isinstance(found[1][1], SeedFormatError) and found[1][1].task == "t"
