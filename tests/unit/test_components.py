"""Component ids and types follow the steps: the same id names the same event in a seed and its branches."""

from __future__ import annotations

from failforge.judgement import component_id, components_of
from failforge.trajectory import ComponentSpec, Step, Task, ToolCall, Trajectory


def _run(injected_tool: bool) -> Trajectory:
    call = ToolCall(id="c1", name="read_inbox", arguments="{}")
    steps = [
        Step(index=0, kind="task", agent="user", role="user", content="do it"),
        Step(index=1, kind="agent", agent="agent", role="assistant", tool_calls=[call]),
        Step(
            index=2,
            kind="tool",
            agent="environment",
            role="tool",
            content="mail",
            tool_call_id="c1",
            tool_name="read_inbox",
            phase="injected" if injected_tool else "recorded",
        ),
        Step(index=3, kind="agent", agent="agent", role="assistant", content="done"),
    ]
    return Trajectory(
        id="t",
        task=Task(benchmark="b", task_id="x", instruction="do it"),
        steps=steps,
        harness=ComponentSpec(name="h"),
        environment=ComponentSpec(name="e"),
        model=ComponentSpec(name="m"),
    )


def test_one_component_per_step_typed_by_its_form():
    parts = components_of(_run(injected_tool=False))
    assert [c.id for c in parts] == ["C0", "C1", "C2", "C3"] and [c.step for c in parts] == [0, 1, 2, 3]
    assert [c.type for c in parts] == ["user_instruction", "tool_call", "tool_observation", "agent_message"]
    assert component_id(7) == "C7"


def test_an_observation_the_branch_replaced_is_injected_content():
    assert components_of(_run(injected_tool=True))[2].type == "injected_content"
