"""Missed clarification: where the taxonomy lets it be injected (a turn that withholds a detail or a
function), the rule guide's notes there, the rule that verifies the decisive step, the expected/found
control decision; and TextWorld's wrong-object A.2 (another thing of the same kind the game showed)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from failforge.clarification import said, unsaid_arguments, withheld_at
from failforge.environments.textworld_env import shown, swapped_object, wrong_object
from failforge.injection import guide_kind_for, rules_note
from failforge.injection._planner import plan_attempts, step_context
from failforge.judgement import control_change, deterministic_verdict
from failforge.taxonomy import applicable_modes, get_mode
from failforge.trajectory import ModelCallRef, Step, ToolCall, Trajectory, load_jsonl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("ls", "tail")]


def _agent(i: int, content: str = "", calls: list[ToolCall] | None = None) -> Step:
    return Step(
        index=i,
        kind="agent",
        agent="agent",
        role="assistant",
        content=content,
        tool_calls=calls or [],
        model_call=ModelCallRef(
            stream="agent",
            ordinal=i,
            request={"messages": [{"role": "user", "content": "x"}], "tools": TOOLS},
            request_hash="h",
            response={},
        ),
    )


def _user(i: int, text: str) -> Step:
    return Step(index=i, kind="task", agent="user", role="user", content=text)


def _tool(i: int, call: str, content: str) -> Step:
    return Step(
        index=i, kind="tool", agent="environment", role="tool", content=content, tool_call_id=call, tool_name="ls"
    )


def _call(cid: str, name: str, args: str) -> ToolCall:
    return ToolCall(id=cid, name=name, arguments=args)


def _seed(withheld: str, held_out: dict[str, list[str]] | None = None) -> Trajectory:
    """Turn 0: list the files; turn 1: "show the last lines" (no count: withheld); turn 2: "20 lines"."""
    base, _ = load_jsonl(FIXTURES / "failforge_gold.jsonl")
    template = base[1]
    task = template.task.model_copy(
        update={
            "instruction": "List the files in log.",
            "metadata": {"clarification_turns": {"1": withheld}, "missed_function": held_out or {}},
        }
    )
    steps = [
        template.steps[0].model_copy(update={"content": "List the files in log."}),
        _agent(1, "", [_call("a", "ls", "{}")]),
        _tool(2, "a", "{\"current_directory_content\": ['log.txt', 'notes.txt']}"),
        _agent(3, "Done."),
        _user(4, "Finally, show the last several lines of log.txt."),
        _agent(5, "I need one more detail before I can do that: could you tell me exactly which value to use?"),
        _user(6, "To be exact, it should be last 20 lines."),
        _agent(7, "", [_call("b", "tail", '{"file_name": "log.txt", "lines": 20}')]),
        _tool(8, "b", "line"),
        _agent(9, "Done."),
    ]
    if withheld == "function":  # tail is offered from turn 2 on only
        for i in (1, 3, 5):
            call = steps[i].model_call
            assert call is not None
            steps[i] = steps[i].model_copy(
                update={"model_call": call.model_copy(update={"request": {**call.request, "tools": TOOLS[:1]}})}
            )
    return template.model_copy(update={"steps": steps, "task": task, "label": None, "id": f"seed-{withheld}"})


def test_a_turn_that_withholds_something_is_found_and_only_its_agent_steps():
    seed = _seed("parameter")
    assert [t for t in range(len(seed.steps)) if withheld_at(seed, t)] == [5]
    assert withheld_at(seed, 5) == "parameter" and withheld_at(seed, 4) is None and withheld_at(seed, 7) is None


def test_a3_applies_at_a_withheld_function_turn_without_a_call_and_nowhere_else_without_one():
    func, param = _seed("function", {"2": ["tail"]}), _seed("parameter")
    assert step_context(func, func.steps[5]).withheld == "function"
    assert "A.3" in [m.code for m in applicable_modes(step_context(func, func.steps[5]))]
    assert "A.3" not in [
        m.code for m in applicable_modes(step_context(param, param.steps[5]))
    ]  # a detail, not a function
    assert "A.3" not in [m.code for m in applicable_modes(step_context(func, func.steps[3]))]  # an ordinary text step
    ok, why = get_mode("A.3").applicable(step_context(param, param.steps[5]))
    assert not ok and "no tool call" in why
    # the planner takes the turn to ask at first
    assert [(p.step, p.mode) for p in plan_attempts(func, modes=["A.3"], steps_per_seed=1)] == [(5, "A.3")]


def test_the_rule_guide_writes_a_made_up_value_at_a_withheld_detail_and_declines_elsewhere():
    seed = _seed("parameter")
    guide = rules_note(seed, 5, get_mode("R.1"))
    assert (
        guide.feasible
        and guide.note is not None
        and guide.note.startswith("Call tail now with file_name = 'log.txt', lines = ")
    )
    value = guide.request["value"]
    assert value != 20 and not said(
        value, ["List the files in log.", "Finally, show the last several lines of log.txt."]
    )
    assert guide.request["argument"] == "lines" and guide.request["original"] == 20
    off = rules_note(seed, 7, get_mode("R.1"))
    assert not off.feasible and "only at a turn that lacks a detail" in off.reason
    assert guide_kind_for("auto", "R.1", seed, 5) == "rules" and guide_kind_for("auto", "R.1", seed, 7) == "model"
    assert guide_kind_for("auto", "R.1") == "model"


def test_the_rule_guide_calls_the_held_out_function_early():
    seed = _seed("function", {"2": ["tail"]})
    guide = rules_note(seed, 5, get_mode("A.3"))
    assert guide.feasible and guide.note == "Call the tool tail with file_name = 'log.txt', lines = 20."
    assert not rules_note(_seed("function", {"2": ["grep"]}), 5, get_mode("A.3")).feasible  # grep is never called


def _changed(seed: Trajectory, t: int, calls: list[ToolCall], content: str = "") -> Step:
    return seed.steps[t].model_copy(update={"tool_calls": calls, "content": content, "phase": "injected"})


def test_the_r1_rule_verifies_a_value_the_user_never_gave():
    seed = _seed("parameter")
    made_up = _changed(seed, 5, [_call("x", "tail", '{"file_name": "log.txt", "lines": 10}')])
    verdict = deterministic_verdict(seed, made_up, 5, "R.1")
    assert verdict.exhibited is True and verdict.method == "deterministic" and "lines = 10" in verdict.reason
    given = _changed(seed, 5, [_call("x", "tail", '{"file_name": "log.txt"}')])
    assert deterministic_verdict(seed, given, 5, "R.1").exhibited is False  # every value is one the user gave
    other = _changed(seed, 5, [_call("x", "tail", '{"file_name": "notes.txt"}')])
    assert (
        deterministic_verdict(seed, other, 5, "R.1").exhibited is False
    )  # the withheld detail is the count, not the file
    looking = _changed(seed, 5, [_call("x", "ls", '{"path": "log/"}')], "Let me look first.")
    assert deterministic_verdict(seed, looking, 5, "R.1").exhibited is False  # a call that does not take the detail
    asked = _changed(seed, 5, [], "Which value?")
    assert deterministic_verdict(seed, asked, 5, "R.1").exhibited is False
    assert deterministic_verdict(seed, made_up, 7, "R.1").method == "unverified"  # an ordinary step: R.1 stays semantic
    assert unsaid_arguments({"lines": 20, "a": True}, ["last 20 lines"]) == [] and unsaid_arguments(
        {"n": 20}, ["in 2023"]
    ) == ["n"]


def test_the_label_reads_expected_ask_found_act():
    seed = _seed("parameter")
    steps = list(seed.steps)
    steps[5] = _changed(seed, 5, [_call("x", "tail", '{"file_name": "log.txt", "lines": 10}')])
    branch = seed.model_copy(update={"steps": steps})
    assert control_change(seed, branch, 5) == ("ask", "act")
    assert control_change(seed, branch, 4) == (None, None)


ENTITIES: dict[str, Any] = {
    "antique trunk": "openable",
    "chest drawer": "openable",
    "wooden door": "openable",
    "old key": "portable",
    "milk": "portable",
    "shovel": "portable",
    "couch": "support",
}
SEEN = "You see a closed antique trunk and a chest drawer. On the couch is some milk. There is a wooden door."


def test_textworld_a2_swaps_in_another_thing_of_the_same_kind_the_game_showed():
    changed, details = wrong_object("open antique trunk", SEEN, ENTITIES, random.Random(0)) or ("", {})
    assert changed in ("open chest drawer", "open wooden door") and details["object"] == "antique trunk"
    taken, _ = wrong_object("take old key from antique trunk", SEEN, ENTITIES, random.Random(0)) or ("", {})
    assert taken == "take milk from antique trunk"  # the shovel was never shown
    assert wrong_object("go east", SEEN, ENTITIES, random.Random(0)) is None
    ok, why = swapped_object("open antique trunk", "open chest drawer", SEEN, ENTITIES)
    assert ok, why
    assert not swapped_object("open antique trunk", "open antique", SEEN, ENTITIES)[0]  # truncated: not a thing
    assert not swapped_object("take old key", "take shovel", SEEN, ENTITIES)[0]  # never shown
    assert not swapped_object("open antique trunk", "open milk", SEEN, ENTITIES)[0]  # another kind of thing
    assert not swapped_object("open antique trunk", "close chest drawer", SEEN, ENTITIES)[0]  # more than the object
    assert shown("key", "You see a key.") and not shown("key", "You see a keycard.")  # a whole phrase, not a prefix


def test_the_r1_rules_note_carried_out_literally_passes_its_check():
    """The rule and the check agree: the call the note names, made as written, is R.1 by the check."""
    seed = _seed("parameter")
    made = rules_note(seed, 5, get_mode("R.1"), rng_seed=1)
    assert made.feasible, made.reason
    request = made.request
    args = {**(seed.steps[7].tool_calls[0].parsed_arguments() or {}), request["argument"]: request["value"]}
    literal = _changed(seed, 5, [_call("x", request["tool"], json.dumps(args))])
    verdict = deterministic_verdict(seed, literal, 5, "R.1")
    assert verdict.exhibited is True, verdict.reason
