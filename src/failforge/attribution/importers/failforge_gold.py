"""failforge's own gold records (``gold.jsonl`` of a campaign) as labelled failures.

Steps map one to one (step 0 is the task, then one step per model call and per tool observation),
so the gold step is ``label.decisive_step`` unchanged. The system prompt each agent saw is taken
from its first recorded model request, for exporters whose format carries it. The rationale explains
the error from what is known by construction: the mode's definition and what the step was in the
successful seed versus what it became. The steering note is never copied: it is the guide's
instruction to the agent, not a description of the error, and a dataset that ships it leaks the label.

Everything a multi-agent export needs is carried over: each step's ``(round, position)`` (as the
coordinate ``"R.P"``), its sender and recipient, and each agent's roster role (an agent step's
``role`` and ``record.roles``), so a Who&When Pro export writes every record as the release does. A
tool observation keeps ``kind="tool"`` (its ``agent`` is the tool's name, as the record schema says):
exporters write it as a tool turn, never as an agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from failforge.attribution._codes import canonical_code
from failforge.attribution._components import ComponentLabel
from failforge.attribution._record import (
    FailureStep,
    Gold,
    ImageRef,
    LabelledFailure,
    Origin,
    RecordProblem,
    StepCoordinate,
    TaskInfo,
    ToolCallRecord,
)
from failforge.errors import SeedFormatError
from failforge.jsonl import read_jsonl
from failforge.judgement import component_id, components_of
from failforge.plugins import importers
from failforge.taxonomy import get_mode
from failforge.trajectory import Step, Trajectory, parse_record

_BRIEF = 240


def _brief(step: Step) -> str:
    """One line for a step: its text and its tool calls, shortened."""
    parts = []
    if step.content:
        parts.append(" ".join(step.content.split()))
    parts.extend(f"{c.name}({c.arguments})" for c in step.tool_calls)
    if step.kind == "tool":
        parts = [" ".join((step.error or step.content or "").split())]
    text = "; ".join(p for p in parts if p) or "(empty)"
    return text if len(text) <= _BRIEF else text[: _BRIEF - 1] + "…"


_BEHAVIOUR_TEXT = {
    "unsafe_action": "an unsafe action induced by the injected content",
    "over_refusal": "a refusal of a benign task",
    "unsafe_completion": "compliance where refusing was right",
}


def rationale(trajectory: Trajectory) -> str:
    label = trajectory.label
    assert label is not None
    injected = trajectory.steps[label.decisive_step]
    if label.behaviour != "failure":  # observation / refusal gold: its mode code is not one of the 18 modes
        changed = {
            "observation": "the environment served a changed observation",
            "user": "the user's message was changed",
            "action": f"{label.decisive_agent}'s step was changed",
        }[label.changed]
        target = f" The behaviour is at {label.target_component}." if label.target_component else ""
        return (
            f"At step {label.decisive_step} {changed} ({label.mode_code}): {_brief(injected)}. The run then showed "
            f"{_BEHAVIOUR_TEXT.get(label.behaviour, label.behaviour)} ({label.evaluator_output.evaluator}).{target}"
        )
    mode = get_mode(label.mode_code)
    return (
        f"{label.decisive_agent} made a {mode.name.lower()} error ({mode.code}, {mode.family.value}) at step"
        f" {label.decisive_step}: {mode.definition} In the successful run this step was: {_brief(label.original_step)}."
        f" In this run it was: {_brief(injected)}. The task then failed ({label.evaluator_output.evaluator})."
    )


def _system_prompts(trajectory: Trajectory) -> dict[str, str]:
    out: dict[str, str] = {}
    for step in trajectory.steps:
        if step.kind != "agent" or step.model_call is None or step.agent in out:
            continue
        for message in step.model_call.request.get("messages") or []:
            if isinstance(message, dict) and message.get("role") in ("system", "developer"):
                content = message.get("content")
                if isinstance(content, list):
                    content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
                out[step.agent] = str(content or "")
                break
    return out


def _coordinate(step: Step) -> StepCoordinate | None:
    """The step's (round, position) as multi-agent datasets label it: ``"R.P"``."""
    return StepCoordinate(label=step.coordinate, round=step.round, position=step.position) if step.coordinate else None


def run_framework(trajectory: Trajectory) -> str:
    """The framework that ran: the external harness's ``--framework`` (an agent command in its own process,
    e.g. ``strands-agents``), else the failforge harness's name."""
    framework = trajectory.harness.config.get("framework") if trajectory.harness.name == "external" else None
    return str(framework) if framework and framework != "external" else trajectory.harness.name


def from_trajectory(trajectory: Trajectory, path: str = "<memory>", line: int | None = None) -> LabelledFailure:
    label = trajectory.label
    if label is None:
        raise ValueError(f"trajectory {trajectory.id} has no gold label")
    roles = {p.name: p.role for p in trajectory.roster}
    types = {c.step: c.type for c in components_of(trajectory)}
    kinds: dict[str, Literal["user", "agent", "tool"]] = {"task": "user", "agent": "agent", "tool": "tool"}
    steps = []
    for s in trajectory.steps:
        if s.kind == "task":
            agent, role, content = "user", "user", s.content or ""
        elif s.kind == "agent":
            agent, role, content = s.agent, roles.get(s.agent, "assistant"), s.content or ""
        else:
            agent, role, content = s.tool_name or "environment", "tool", s.error or s.content or ""
        steps.append(
            FailureStep(
                index=s.index,
                kind=kinds[s.kind],
                agent=agent,
                role=role,
                content=content,
                tool_calls=[ToolCallRecord(id=c.id, name=c.name, arguments=c.arguments) for c in s.tool_calls],
                tool_call_id=s.tool_call_id if s.kind == "tool" else None,
                images=[ImageRef(sha256=h) for h in s.images or _task_images(trajectory, s)],
                coordinate=_coordinate(s),
                sender=s.agent,
                recipient=s.recipient,
                component=component_id(s.index),
                component_type=types[s.index],
            )
        )
    agents = list(dict.fromkeys([*trajectory.agents, *(s.agent for s in steps if s.kind == "agent")]))
    task = trajectory.task
    return LabelledFailure(
        id=trajectory.id,
        source=f"failforge/{trajectory.environment.name}",
        framework=run_framework(trajectory),
        benchmark=f"{task.benchmark}_{task.suite}" if task.suite else task.benchmark,
        topology="multi" if len(agents) > 1 else "single",
        modality="image" if any(s.images for s in steps) else "text",
        agents=agents,
        roles={a: roles[a] for a in agents if a in roles},
        task=TaskInfo(
            question=task.instruction, gold_answer=task.gold_answer, system_prompts=_system_prompts(trajectory)
        ),
        steps=steps,
        gold=Gold(
            agent=label.decisive_agent,
            step=label.decisive_step,
            mode=canonical_code(label.mode_code),
            source_mode=label.mode_code,
            step_label=str(label.decisive_step),
            rationale=rationale(trajectory),
        ),
        origin=Origin(
            format="failforge",
            path=path,
            line=line,
            row_id=trajectory.id,
            step_convention=(
                "failforge steps unchanged: step 0 is the task, one step per model call and per tool observation"
            ),
        ),
        extra={
            "task_id": task.task_id,
            "seed_id": label.seed_id,
            "agent_model": label.agent_model,
            "guide_model": label.guide_model,
            "environment": trajectory.environment.name,
            "behaviour": label.behaviour,
            "changed": label.changed,
            "harness": trajectory.harness.name,
            **({"difficulty": str(task.metadata["level"])} if task.metadata.get("level") else {}),
        },
        components=component_label(trajectory),
    )


def component_label(trajectory: Trajectory) -> ComponentLabel | None:
    """The gold label's component-level part (None when the label names no target or primary component).

    The target type is failforge's behaviour (failure, unsafe_action, over_refusal, unsafe_completion);
    the trajectory-attribution exporter maps it to the release's three."""
    label = trajectory.label
    if label is None or label.target_component is None or label.primary_component is None:
        return None
    return ComponentLabel(
        target_type=label.behaviour,
        target=label.target_component,
        primary=label.primary_component,
        attack_chain=list(label.attack_chain),
        execution_chain=list(label.execution_chain),
        attributes={"attack_success": True} if label.behaviour in ("unsafe_action", "unsafe_completion") else {},
    )


@importers.register("failforge", description="failforge gold.jsonl (records with a gold label)")
def import_failforge(path: Path) -> Iterator[LabelledFailure | RecordProblem]:
    for item in read_jsonl(path):
        if isinstance(item, SeedFormatError):
            yield RecordProblem.of(item)
            continue
        number, data = item
        try:
            trajectory = parse_record(data, str(path), number)
        except SeedFormatError as exc:
            yield RecordProblem.of(exc)
            continue
        if trajectory.label is None:
            yield RecordProblem(
                path=str(path),
                line=number,
                field="label",
                problem=f"trajectory {trajectory.id} has no gold label (not a gold record)",
            )
            continue
        try:
            yield from_trajectory(trajectory, str(path), number)
        except ValueError as exc:
            yield RecordProblem(path=str(path), line=number, field="<record>", problem=" ".join(str(exc).split())[:300])


def _task_images(trajectory: Trajectory, step: Any) -> list[str]:
    """The task step of a screenshot agent shows the page the first request carries (its first image)."""
    from failforge.images import image_refs

    if step.kind != "task":
        return []
    first = next((s for s in trajectory.steps if s.kind == "agent" and s.model_call is not None), None)
    return image_refs(first.model_call.request)[:1] if first is not None and first.model_call is not None else []
