"""R.1 at a simulated user's step: the rule names one value of the user's message that the run used later and
mistypes one digit of it; the check decides from the text whether the user's message states it wrongly."""

from __future__ import annotations

from failforge.injection import guide_kind_for, rules_note
from failforge.judgement import control_change, deterministic_verdict
from failforge.roster import AgentProfile
from failforge.taxonomy import get_mode
from failforge.trajectory import ComponentSpec, Step, Task, ToolCall, Trajectory

INSTRUCTION = "You received order #W2378156. Known info: you are Yusuf Rossi in zip code 19122."


def _conversation() -> Trajectory:
    find = ToolCall(
        id="f",
        name="find_user_id_by_name_zip",
        arguments='{"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}',
    )
    order = ToolCall(id="o", name="get_order_details", arguments='{"order_id": "#W2378156"}')
    steps = [
        Step(index=0, kind="task", agent="user", role="user", content=INSTRUCTION),
        Step(
            index=1,
            kind="agent",
            agent="customer",
            role="assistant",
            content="Hi, about my order #W2378156 (I'm Yusuf Rossi, zip 19122, 2 items).",
        ),
        Step(index=2, kind="agent", agent="agent", role="assistant", tool_calls=[find]),
        Step(
            index=3,
            kind="tool",
            agent="environment",
            role="tool",
            content="yusuf_rossi_9620",
            tool_call_id="f",
            tool_name=find.name,
        ),
        Step(index=4, kind="agent", agent="agent", role="assistant", tool_calls=[order]),
        Step(
            index=5, kind="tool", agent="environment", role="tool", content="{}", tool_call_id="o", tool_name=order.name
        ),
        Step(index=6, kind="agent", agent="agent", role="assistant", content="Done."),
        Step(index=7, kind="agent", agent="customer", role="assistant", content="###STOP###"),
    ]
    roster = [
        AgentProfile(name="agent", role="agent", reports_to="customer"),
        AgentProfile(name="customer", role="user"),
    ]
    return Trajectory(
        id="c",
        task=Task(benchmark="b", task_id="x", instruction=INSTRUCTION),
        steps=steps,
        roster=roster,
        harness=ComponentSpec(name="h"),
        environment=ComponentSpec(name="e"),
        model=ComponentSpec(name="m"),
    )


def _said(run: Trajectory, t: int, text: str) -> Step:
    return run.steps[t].model_copy(update={"content": text})


def test_the_rule_mistypes_a_value_the_run_used_and_only_at_a_users_message():
    run = _conversation()
    result = rules_note(run, 1, get_mode("R.1"), rng_seed=3)
    assert result.feasible and result.note is not None
    original, wrong = result.request["user_value"], result.request["value"]
    assert original in ("#W2378156", "19122")  # used later; "2" (too short) and "Yusuf" (no digit) are not values
    assert len(wrong) == len(original) and sum(a != b for a, b in zip(original, wrong, strict=True)) == 1
    assert wrong not in INSTRUCTION and f"write {wrong} where you would write {original}" in result.note
    assert not rules_note(run, 7, get_mode("R.1")).feasible  # ###STOP### states no value
    assert "at a simulated user's message" in rules_note(run, 6, get_mode("R.1")).reason  # an agent's step: not by rule
    assert guide_kind_for("auto", "R.1", run, 1) == "rules" and guide_kind_for("auto", "R.1", run, 6) == "model"
    assert guide_kind_for("model", "R.1", run, 1) == "model" and guide_kind_for("auto", "A.2", run, 2) == "rules"
    assert guide_kind_for("auto", "R.1") == "model"  # without the step: the model guide
    assert rules_note(run, 1, get_mode("R.1"), rng_seed=3).note == result.note  # reproducible from the campaign seed


def test_the_check_decides_a_users_wrong_value_and_leaves_the_rest_to_the_judge():
    run = _conversation()
    wrong = deterministic_verdict(
        run, _said(run, 1, "Hi, about my order #W2378656 (I'm Yusuf Rossi, zip 19122)."), 1, "R.1"
    )
    assert (
        wrong.exhibited is True
        and wrong.method == "deterministic"
        and "#W2378656" in wrong.reason
        and "#W2378156" in wrong.reason
    )
    same = deterministic_verdict(run, _said(run, 1, "Hello: order #W2378156, Yusuf Rossi, 19122."), 1, "R.1")
    assert same.exhibited is False and same.method == "deterministic"
    omitted = deterministic_verdict(
        run, _said(run, 1, "Hi, I'm Yusuf Rossi, zip 19122; it is about the order I placed on 2024-05-01."), 1, "R.1"
    )
    assert omitted.exhibited is None  # the order number left out and a date stated: not a misstated value, judged
    beside = deterministic_verdict(run, _said(run, 1, "Order #W2378156, zip 19122, and my card 44556677."), 1, "R.1")
    assert beside.exhibited is None and beside.method == "unverified"  # an extra value next to the right ones: judged
    agent = deterministic_verdict(
        run, run.steps[6].model_copy(update={"content": "Yusuf, your order #W2378156 was refunded 55.10."}), 6, "R.1"
    )
    assert agent.exhibited is None and agent.method == "unverified"  # R.1 at an agent's step stays semantic


def test_a_users_step_has_no_control_decision():
    run = _conversation()
    assert control_change(run, run, 1) == (None, None)  # control decisions are the agent's
    assert control_change(run, run, 2)[0] == "act"
