"""Components: the units trajectory-attribution methods rank and chain (seed system 1's vocabulary).

One component per step, with id ``C{step.index}``. Step indices are already stable between a seed and
every branch of it, so a component id names the same event in both, and a gold label's primary
component, target and chains can be written by construction. Ordering is by list position (the step
index), never by parsing an id: the public release numbers from 0 in one source and from 1 in others.

failforge keeps a tool call (an agent step) and its observation (a tool step) as two components,
where the public release merges them into one ``action_result_pair``; the exporter says how it maps.
The system prompt is not a step (it lives in each recorded request), so it is not a component here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from failforge.trajectory import Step, Trajectory

ComponentType = Literal[
    "system_instruction",
    "user_instruction",
    "agent_message",
    "tool_call",
    "tool_observation",
    "injected_content",
    "memory",
    "handoff",
]


class Component(BaseModel):
    """One step seen as a component: its id, its type, whose it is and where it sits."""

    model_config = ConfigDict(extra="forbid")

    id: str
    type: ComponentType
    step: int
    agent: str


def component_id(step_index: int) -> str:
    """The component id of step ``step_index``."""
    return f"C{step_index}"


def component_type(step: Step, trajectory: Trajectory) -> ComponentType:
    """The type a step's form decides: the task is the user's instruction; a tool observation the branch
    replaced is injected content; an agent step that addresses another agent of the roster is a handoff."""
    if step.kind == "task":
        return "user_instruction"
    if step.kind == "tool":
        return "injected_content" if step.phase == "injected" else "tool_observation"
    if step.recipient and step.recipient in trajectory.agents and step.recipient != step.agent:
        return "handoff"
    return "tool_call" if step.tool_calls else "agent_message"


def components_of(trajectory: Trajectory) -> list[Component]:
    """Every step of ``trajectory`` as a component, in step order."""
    return [
        Component(id=component_id(s.index), type=component_type(s, trajectory), step=s.index, agent=s.agent)
        for s in trajectory.steps
    ]
