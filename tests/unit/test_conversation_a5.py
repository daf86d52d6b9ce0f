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
        Step(index=5, kind="tool", agent="environment", role="tool", content="cancelled", tool_call_id="w", tool_name="cancel_order"),
        Step(index=6, kind="agent", agent="agent", role="assistant", content="Done."),
        Step(index=7, kind="agent", agent="customer", role="assistant", content="###STOP###"),
    ]
    roster = [AgentProfile(name="agent", role="agent", reports_to="customer"), AgentProfile(name="customer", role="user")]
    return Trajectory(id="c", task=Task(benchmark="b", task_id="x", instruction="cancel #1"), steps=steps, roster=roster,
                      harness=ComponentSpec(name="h"), environment=ComponentSpec(name="e"), model=ComponentSpec(name="m"))


def test_final_means_the_authors_last_word():
    run = _conversation()
    finals = {s.index: step_context(run, s).is_final for s in run.agent_steps()}
    assert finals == {1: False, 2: False, 3: False, 4: False, 6: True, 7: True}


def test_a5_note_ends_the_conversation_only_where_calls_remain():
    run = _conversation()
    note, meta = _a5(run, 3, random.Random(0))  # type: ignore[misc]
    assert note.startswith("End the conversation now") and meta == {"ends_conversation": True, "remaining_calls": ["cancel_order"]}
    assert "final answer" in str(_a5(run, 6, random.Random(0)))  # the agent's last word: not early
