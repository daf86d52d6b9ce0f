"""Code actions on recorded DA-Bench seeds (tests/fixtures/dabench/seeds.jsonl: the scripted analyst on question 18,
and the imported real smolagents run on question 0): the step policy, the code rules and the checks that decide
them, the tell filter, and the accepted shape of a saved smolagents run."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from failforge.errors import SeedFormatError
from failforge.filters.tell import find_tell
from failforge.injection import plan_attempts
from failforge.injection._code_rules import code_rule
from failforge.injection._step_policy import allowed_points
from failforge.judgement import code_of, deterministic_verdict, is_code_step
from failforge.seeds.smolagents_run import parse_run
from failforge.trajectory import Step, Trajectory, load_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dabench"


@pytest.fixture(scope="module")
def seeds() -> tuple[Trajectory, Trajectory]:
    loaded, problems = load_jsonl(FIXTURES / "seeds.jsonl")
    assert not problems
    return loaded[0], loaded[1]


def _changed(seed: Trajectory, t: int, note: str) -> Step:
    """ã_t as the agent writes it when it follows the note's code block exactly."""
    code = note.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
    original = seed.steps[t].content or ""
    old = code_of(seed.steps[t]) or ""
    return seed.steps[t].model_copy(update={"content": original.replace(old, code)})


def test_the_paper_step_policy_is_dabenchs_default_and_skips_the_first_and_final_steps(
    seeds: tuple[Trajectory, Trajectory],
) -> None:
    scripted, real = seeds
    assert [s.index for s in scripted.steps if s.kind == "agent"] == [1, 3, 5, 7]
    assert allowed_points(scripted, [1, 3, 5, 7]) == [3, 5]
    assert allowed_points(scripted, [1, 3, 5, 7], "all") == [1, 3, 5, 7]
    assert allowed_points(real, [1, 3, 5]) == [3]
    planned = {a.step for a in plan_attempts(scripted, modes=["R.3", "A.4"], steps_per_seed=9, modes_per_step=2)}
    assert planned == {3, 5}
    with pytest.raises(ValueError, match="unknown step policy"):
        allowed_points(scripted, [1], "sometimes")


def test_code_steps_are_the_agent_steps_whose_code_ran(seeds: tuple[Trajectory, Trajectory]) -> None:
    scripted, _ = seeds
    assert [t for t in range(len(scripted.steps)) if is_code_step(scripted, t)] == [1, 3, 5, 7]


def test_early_rounding_and_answer_format_rules_are_confirmed_by_their_checks(
    seeds: tuple[Trajectory, Trajectory],
) -> None:
    scripted, _ = seeds
    for mode, expected in (("R.3", "rounded early"), ("A.4", "no longer written as the format asks")):
        made = code_rule(scripted, 5, mode, random.Random(0))
        assert isinstance(made, tuple), made
        note, details = made
        injected = _changed(scripted, 5, note)
        found = deterministic_verdict(scripted, injected, 5, mode)
        assert found.exhibited is True and expected in found.reason, found.reason
        assert (
            deterministic_verdict(scripted, scripted.steps[5], 5, mode).exhibited is False
        )  # the seed's own step shows nothing
    assert (
        code_rule(scripted, 3, "R.3", random.Random(0))
        == "a_t's code has no decimal number and no round(...) to round earlier"
    )
    assert code_rule(scripted, 3, "A.2", random.Random(0)) == "a_t's code reads no column by name"


def test_wrong_column_and_sample_statistic_rules_on_the_real_run(seeds: tuple[Trajectory, Trajectory]) -> None:
    _, real = seeds
    note, details = code_rule(real, 3, "A.2", random.Random(1))  # type: ignore[misc]
    assert details["original"] == "Fare" and details["value"] != "Fare"
    found = deterministic_verdict(real, _changed(real, 3, note), 3, "A.2")
    assert found.exhibited is True and "where a_t read 'Fare'" in found.reason
    note, details = code_rule(real, 3, "R.3", random.Random(0))  # type: ignore[misc]
    assert "round(df['Fare'].mean(), 1)" in note
    assert code_rule(real, 3, "R.2", random.Random(0)) == "a_t's code computes no standard deviation or variance"


def _step(code: str, thought: str = "I compute it.") -> Step:
    return Step(
        index=3, kind="agent", agent="agent", role="assistant", content=f"Thought: {thought}\n<code>\n{code}\n</code>"
    )


@pytest.mark.parametrize(
    ("code", "thought", "caught"),
    [
        ("# sum of fares\nx = df['Fare'].mean()", "I compute it.", "it says sum, the code computes the mean"),
        ("x = df['Fare'].std(ddof=0)  # sample standard deviation", "I compute it.", "it says sample"),
        ("print('Median fare:', df['Fare'].mean())", "I compute it.", "it says median"),
        ("m = round(x, 1)  # rounded early on purpose", "I compute it.", "names the change ('on purpose')"),
        (
            "answers = {'a': '171.4'}  # values to two decimal places",
            "I compute it.",
            "the code writes a number with 1",
        ),
        (
            "m = round(df['Fare'].mean(), 1)",
            "The mean of the Fare column, rounded to two decimals.",
            "the code's round keeps 1",
        ),
        ("m = df['Age'].mean()", "The mean of the Fare column.", "it names the 'Fare' column, the code reads 'Age'"),
    ],
)
def test_the_tell_filter_names_the_offending_line(code: str, thought: str, caught: str) -> None:
    found = find_tell(_step(code, thought))
    assert found is not None and caught in found, found


@pytest.mark.parametrize(
    "code",
    [
        "# mean fare\nx = round(df['Fare'].mean(), 2)\nprint('Mean fare:', x)",
        "x = df['Fare'].std()  # sample standard deviation",
        "answers = {'a': '171.44'}  # values to two decimal places",
        "print(df.shape)\nprint(df.head())",
    ],
)
def test_the_tell_filter_passes_annotations_that_agree_with_their_code(code: str) -> None:
    assert find_tell(_step(code, "I look at the Fare column.")) is None


def test_a_tool_calls_code_argument_is_read_too() -> None:
    step = Step(
        index=1,
        kind="agent",
        agent="agent",
        role="assistant",
        content=None,
        tool_calls=[
            {
                "id": "c",
                "name": "write_file",
                "arguments": json.dumps({"path": "s.py", "content": "# average\ny = sum(v)\n"}),
            }
        ],
    )
    found = find_tell(step)
    assert found is not None and "line 1: 'average'" in found and "the code computes the sum" in found


def test_the_accepted_shape_of_a_saved_smolagents_run() -> None:
    saved = json.loads((FIXTURES / "smolagents_run_q0.json").read_text())
    run = parse_run(saved, "run.json")
    assert run.final_answer == "@mean_fare[34.65]" and len(run.actions) == 3 and run.model == "loopback-analyst"
    assert parse_run(saved["steps"], "bare list").final_answer == "@mean_fare[34.65]"
    with pytest.raises(SeedFormatError, match="steps\\[0\\].task"):
        parse_run({"steps": saved["steps"][1:]}, "no task")
    with pytest.raises(SeedFormatError, match="PlanningStep"):
        parse_run({"steps": [saved["steps"][0], {"plan": "x"}]}, "planning")
    with pytest.raises(SeedFormatError, match="non-empty list"):
        parse_run({"steps": []}, "empty")


def test_the_fixture_seeds_send_plain_string_messages_so_the_embedded_model_can_continue_them(
    seeds: tuple[Trajectory, Trajectory],
) -> None:
    """llama.cpp's server (the embedded model) answers a message given as a list of parts with HTTP 500: a seed whose
    recorded requests carry parts replays, but its branch cannot be continued live on the embedded model."""
    for seed in seeds:
        assert seed.harness is not None and seed.harness.config.get("flatten_messages") is True, seed.id
        requests = [s.model_call.request for s in seed.steps if s.model_call is not None]
        assert requests, seed.id
        for request in requests:
            assert all(isinstance(m["content"], str) for m in request["messages"]), seed.id
