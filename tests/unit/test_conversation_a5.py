"""A.5 at a message in the middle of a conversation: the author speaks again later, so its message is a turn's
end, not its final answer; stopping there is early when calls remain (a customer hanging up before the write)."""

from __future__ import annotations

import random

from failforge.injection._planner import step_context
from failforge.injection._rules import _a5
from failforge.roster import AgentProfile
from failforge.trajectory import ComponentSpec, Step, Task, ToolCall, Trajectory


def _conversation() -> Trajectory:
    write = ToolCall(id="w", name="cancel_order", arguments='{"order_id": "#1"}')
    steps = [
        Step(index=0, kind="task", agent="user", role="user", content="cancel #1"),
        Step(index=1, kind="agent", agent="customer", role="assistant", content="Please cancel order #1."),
        Step(index=2, kind="agent", agent="agent", role="assistant", content="Shall I cancel #1? (yes/no)"),
        Step(index=3, kind="agent", agent="customer", role="assistant", content="Yes."),
        Step(index=4, kind="agent", agent="agent", role="assistant", tool_calls=[write]),
        Step(
            index=5,
            kind="tool",
            agent="environment",
            role="tool",
            content="cancelled",
            tool_call_id="w",
            tool_name="cancel_order",
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
        task=Task(benchmark="b", task_id="x", instruction="cancel #1"),
        steps=steps,
        roster=roster,
        harness=ComponentSpec(name="h"),
        environment=ComponentSpec(name="e"),
        model=ComponentSpec(name="m"),
    )


def test_final_means_the_authors_last_word():
    run = _conversation()
    finals = {s.index: step_context(run, s).is_final for s in run.agent_steps()}
    assert finals == {1: False, 2: False, 3: False, 4: False, 6: True, 7: True}


def test_a5_note_ends_the_conversation_only_where_calls_remain():
    run = _conversation()
    note, meta = _a5(run, 3, random.Random(0))  # type: ignore[misc]
    assert note.startswith("End the conversation now") and meta == {
        "ends_conversation": True,
        "remaining_calls": ["cancel_order"],
    }
    assert "final answer" in str(_a5(run, 6, random.Random(0)))  # the agent's last word: not early


def _offering_a_transfer() -> Trajectory:
    from failforge.trajectory import ModelCallRef

    run = _conversation()
    tools = [
        {"type": "function", "function": {"name": n, "parameters": {}}}
        for n in ("cancel_order", "transfer_to_human_agents")
    ]
    call = ModelCallRef(
        stream="agent", ordinal=1, request={"messages": [], "tools": tools}, request_hash="h", response={}
    )
    run.steps[4] = run.steps[4].model_copy(update={"model_call": call})
    return run


def test_a5_where_a_human_can_take_over_is_sometimes_a_premature_transfer():
    run = _offering_a_transfer()
    notes = [_a5(run, 4, random.Random(s)) for s in range(40)]
    transfers = [n for n in notes if isinstance(n, tuple) and n[1].get("transfers_with") == "transfer_to_human_agents"]
    answers = [n for n in notes if isinstance(n, tuple) and "transfers_with" not in n[1]]
    assert transfers and answers and len(transfers) + len(answers) == 40  # both notes, drawn from the seeded generator
    assert transfers[0][0].startswith("Transfer the user to a human agent now: call transfer_to_human_agents")
    assert all(
        "transfers_with" not in n[1]
        for n in (_a5(_conversation(), 4, random.Random(s)) for s in range(10))
        if isinstance(n, tuple)
    )


def test_a5_check_counts_a_transfer_to_a_human_only_while_work_remains():
    run = _offering_a_transfer()
    transfer = ToolCall(id="t", name="transfer_to_human_agents", arguments='{"summary": "cancel"}')
    from failforge.judgement._checks import check_a5

    handed = run.steps[4].model_copy(update={"tool_calls": [transfer]})
    assert check_a5(run, handed, 4)[0] is True and "hands the conversation to a human" in check_a5(run, handed, 4)[1]
    both = run.steps[4].model_copy(update={"tool_calls": [transfer, run.steps[4].tool_calls[0]]})
    assert check_a5(run, both, 4)[0] is False  # it still does the work
    late = run.steps[6].model_copy(update={"content": None, "tool_calls": [transfer]})
    assert check_a5(run, late, 6)[0] is False  # nothing was left undone
