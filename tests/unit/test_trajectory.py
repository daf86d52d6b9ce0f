import json

import pytest

from failforge.errors import SeedFormatError
from failforge.trajectory import Trajectory, append_jsonl, load_jsonl, parse_line, write_jsonl


def test_round_trip(tmp_path, bundled_seeds):
    path = tmp_path / "s.jsonl"
    write_jsonl(path, bundled_seeds)
    again, errors = load_jsonl(path)
    assert not errors
    assert [t.model_dump() for t in again] == [t.model_dump() for t in bundled_seeds]


def test_steps_are_zero_based_and_start_with_the_task(bundled_seeds):
    for seed in bundled_seeds:
        assert [s.index for s in seed.steps] == list(range(len(seed.steps)))
        assert seed.steps[0].kind == "task" and seed.steps[0].content == seed.task.instruction
        for step in seed.steps:
            if step.kind == "agent":
                assert step.model_call is not None and step.model_call.request_hash
            if step.kind == "tool":
                assert step.state_fingerprint and step.tool_call_id


def test_malformed_record_names_file_line_and_field_and_the_rest_loads(tmp_path, bundled_seeds):
    path = tmp_path / "mixed.jsonl"
    good = bundled_seeds[0].model_dump(mode="json")
    broken = json.loads(json.dumps(good))
    broken["steps"][2]["index"] = "two"
    lines = [json.dumps(good), "{not json", json.dumps(broken), json.dumps(bundled_seeds[1].model_dump(mode="json"))]
    path.write_text("\n".join(lines) + "\n")
    trajectories, errors = load_jsonl(path)
    assert [t.id for t in trajectories] == [bundled_seeds[0].id, bundled_seeds[1].id]
    assert [(e.line, e.field) for e in errors] == [(2, "<json>"), (3, "steps.2.index")]
    assert str(path) in str(errors[1]) and ":3:" in str(errors[1])


def test_unknown_field_is_rejected():
    with pytest.raises(SeedFormatError) as info:
        parse_line(json.dumps({"id": "x", "unexpected": 1}))
    assert info.value.line == 1


def test_append_writes_whole_lines(tmp_path, bundled_seeds):
    path = tmp_path / "a.jsonl"
    append_jsonl(path, bundled_seeds[:2])
    append_jsonl(path, bundled_seeds[2:3])
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == 3
    assert all(isinstance(Trajectory.model_validate_json(line), Trajectory) for line in text.splitlines())
