"""Export gold trajectories as Who&When Pro traces.

Layout follows the released Who&When Pro traces for single-agent frameworks (smolagents, eva): a
``trajectory`` list whose entries carry ``kind`` and a ``phase`` list (replayed / injected / live, plus
final_answer on the last agent turn), and ``ground_truth`` {agent, step, mode}. Here ``step`` is the
failforge step index, which is also the entry's position in ``trajectory`` (entry 0 is the task).

Codes: failforge's taxonomy uses the codes of the Who&When Pro paper's table; the released
``taxonomy.yaml`` numbers the Action and Planning modes differently and has 17 codes (no separate
hallucinated-tool mode). ``codes="release"`` (default) writes the released code in ``mode`` and keeps
failforge's code in ``failforge_mode``; ``codes="failforge"`` writes failforge's code in ``mode``.
"""

from __future__ import annotations

from typing import Any, Literal

from failforge.plugins import exporters
from failforge.trajectory import Trajectory

#: failforge (paper) code -> released taxonomy.yaml code, where they differ.
RELEASE_CODES = {"A.2": "A.1", "A.3": "A.1", "A.4": "A.2", "A.5": "A.3", "A.6": "A.4", "PL.3": "PL.2"}


def _entry(step: Any, last_agent: int) -> dict[str, Any]:
    if step.kind == "task":
        return {"kind": "user", "step": step.index, "content": step.content}
    phases = [step.phase]
    if step.index == last_agent:
        phases.append("final_answer")
    if step.kind == "agent":
        entry: dict[str, Any] = {"kind": "assistant", "step": step.index, "agent": step.agent, "content": step.content or ""}
        if step.tool_calls:
            entry["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
    else:
        entry = {"kind": "tool", "step": step.index, "name": step.tool_name, "tool_call_id": step.tool_call_id, "content": step.error or step.content or ""}
    entry["phase"] = phases
    return entry


@exporters.register("whowhen-pro", description="Who&When Pro trace rows")
def to_whowhen_pro(gold: Trajectory, codes: Literal["release", "failforge"] = "release") -> dict[str, Any]:
    label = gold.label
    if label is None:
        raise ValueError(f"trajectory {gold.id} has no gold label; only gold records can be exported")
    mode = RELEASE_CODES.get(label.mode_code, label.mode_code) if codes == "release" else label.mode_code
    agent_steps = [s.index for s in gold.steps if s.kind == "agent"]
    last_agent = agent_steps[-1] if agent_steps else -1
    benchmark = f"{gold.task.benchmark}_{gold.task.suite}" if gold.task.suite else gold.task.benchmark
    return {
        "id": f"{gold.harness.name}__{benchmark}__{label.mode_code}__{gold.task.task_id}__{gold.id}",
        "framework": gold.harness.name,
        "benchmark": benchmark,
        "modality": "text",
        "agents": [{"id": a, "role": a.capitalize()} for a in gold.agents],
        "task": {"query": gold.task.instruction, "answer": gold.task.gold_answer or ""},
        "ground_truth": {"agent": label.decisive_agent, "step": label.decisive_step, "mode": mode, "failforge_mode": label.mode_code},
        "trajectory": [_entry(s, last_agent) for s in gold.steps],
        "final_answer": gold.final_output(),
        "eval_status": "failed" if gold.outcome and gold.outcome.success is False else "unknown",
        "source": {"seed_id": label.seed_id, "generator": "failforge", "agent_model": label.agent_model, "guide_model": label.guide_model},
    }


@exporters.register("whowhen", description="the original Who&When log layout")
def to_whowhen(gold: Trajectory, codes: Literal["release", "failforge"] = "release") -> dict[str, Any]:
    """The original Who&When log layout: ``history`` plus string ``mistake_step`` indexing it."""
    label = gold.label
    if label is None:
        raise ValueError(f"trajectory {gold.id} has no gold label; only gold records can be exported")
    history = []
    for step in gold.steps:
        if step.kind == "task":
            history.append({"content": step.content or "", "role": "human", "name": "human"})
        elif step.kind == "agent":
            calls = "".join(f"\n[call {c.name}({c.arguments})]" for c in step.tool_calls)
            history.append({"content": (step.content or "") + calls, "role": "assistant", "name": step.agent})
        else:
            history.append({"content": step.error or step.content or "", "role": "user", "name": "Computer_terminal"})
    return {
        "question": gold.task.instruction,
        "question_ID": f"{gold.task.benchmark}/{gold.task.suite}/{gold.task.task_id}",
        "ground_truth": gold.task.gold_answer or "",
        "history": history,
        "mistake_agent": label.decisive_agent,
        "mistake_step": str(label.decisive_step),
        "mistake_reason": f"{label.mode_code}: {label.steering_note}",
        "is_correct": False,
    }
