"""Round trips of failforge gold through the public formats: export, read back with failforge's importer
of that format (which follows the public reader's conventions), compare with the record failforge's gold
importer makes of the same gold.

"Identical" means, per format:

- whowhen-pro, multi-agent (magentic-one rows): every step back in order with its kind, agent (a tool
  observation stays a tool step named by its tool), role, content, tool calls (name, arguments, id),
  ``R.P`` coordinate and recipient; the gold agent, step and mode; the agents' roles.
- whowhen-pro, single agent (eva rows; agentoccam rows of the image_gui split for screenshot records): every
  agent turn back in order with its content and tool calls, every observation's text in a tool turn, every
  user message after the task back as a user step; the gold on the same agent turn; agent and mode.
- whowhen and tracertraj: every step back in order with its kind (task, agent, tool) and its text as the
  format renders it (an agent's tool calls written after its text as ``[call name(arguments)]``, a tool's
  output by ``Computer_terminal``), the agent of each agent step; the gold agent and step; the mode in
  ``mistake_reason`` (these formats have no mode field).

The gold records of a seed are made by labelling each of its agent steps in turn (see :func:`gold_of`): the
steps are the seed's own, so what is compared is the trajectory as recorded, at every kind of step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failforge.attribution import LabelledFailure, summarise
from failforge.attribution._codes import to_release
from failforge.attribution.importers.failforge_gold import from_trajectory
from failforge.plugins import exporters, importers
from failforge.roster import COORDINATING_ROLES, ENVIRONMENT, USER
from failforge.taxonomy import get_mode
from failforge.trajectory import FilterVerdict, GoldLabel, Outcome, Trajectory

FORMATS = ("whowhen-pro", "whowhen", "tracertraj.jsonl", "tracertraj.parquet")


def mode_for(seed: Trajectory, t: int) -> str:
    """A plausible mode for step t: a delegation by a coordinating agent C.1, a tool call A.2, else R.1."""
    step = seed.steps[t]
    profile = seed.profile(step.agent)
    if (
        profile is not None
        and profile.role in COORDINATING_ROLES
        and step.recipient not in (None, USER, ENVIRONMENT, step.agent)
    ):
        return "C.1"
    return "A.2" if step.tool_calls else "R.1"


def gold_of(seed: Trajectory, t: int) -> Trajectory:
    """``seed`` labelled at step t (an agent step): the gold record a campaign keeps, minus the branch."""
    step = seed.steps[t]
    mode = get_mode(mode_for(seed, t))
    label = GoldLabel(
        decisive_step=t,
        decisive_agent=step.agent,
        mode_code=mode.code,
        mode_family=mode.family.value,
        original_step=step,
        steering_note="(round-trip test)",
        guide_model="test",
        agent_model="test",
        filter_verdicts=[FilterVerdict(name="round_trip", passed=True, reason="test")],
        seed_id=seed.id,
        branch_step=t,
        evaluator_output=Outcome(success=False, evaluator="test"),
    )
    return seed.model_copy(
        update={
            "id": f"gold-{seed.id}-{t}",
            "parent_id": seed.id,
            "branch_step": t,
            "label": label,
            "outcome": Outcome(success=False, evaluator="test"),
        }
    )


def golds_of(seed: Trajectory) -> list[Trajectory]:
    return [gold_of(seed, s.index) for s in seed.steps if s.kind == "agent"]


@dataclass
class RoundTrip:
    records: int
    written: int
    reimported: int
    identical: int = 0
    differences: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _calls(step: Any) -> list[tuple[str, Any, str | None]]:
    out = []
    for c in step.tool_calls:
        try:
            args = json.loads(c.arguments) if c.arguments.strip() else {}
        except ValueError:
            args = c.arguments
        out.append((c.name, args, c.id))
    return out


def _rendered(step: Any) -> str:
    """An agent step's text as whowhen and tracertraj write it."""
    return step.content + "".join(f"\n[call {c.name}({c.arguments})]" for c in step.tool_calls)


def _agent_turn(record: LabelledFailure, index: int) -> int:
    return sum(1 for s in record.steps[:index] if s.kind == "agent")


def differences(fmt: str, original: LabelledFailure, back: LabelledFailure) -> list[str]:
    """What the re-imported record ``back`` lost or changed of ``original`` (empty: identical)."""
    out: list[str] = []

    def check(what: str, a: Any, b: Any) -> None:
        if a != b:
            out.append(f"{original.id}: {what}: {a!r} != {b!r}")

    check("gold agent", original.gold.agent, back.gold.agent)
    tools = {s.agent for s in original.steps if s.kind == "tool"}
    check("agents named after a tool", [], sorted(tools & set(back.agents)))
    if fmt == "whowhen-pro" and original.topology == "multi":
        check("gold step", original.gold.step, back.gold.step)
        check("mode", original.gold.mode, back.gold.mode)
        check("roles", original.roles, {a: r for a, r in back.roles.items() if a in original.roles})
        check("step count", len(original.steps), len(back.steps))
        for a, b in zip(original.steps, back.steps, strict=False):
            where = f"step {a.index}"
            check(f"{where} kind", a.kind, b.kind)
            check(f"{where} content", a.content, b.content)
            if a.kind == "user":
                continue
            check(f"{where} agent", a.agent, b.agent)
            check(
                f"{where} coordinate",
                a.coordinate.label if a.coordinate else None,
                b.coordinate.label if b.coordinate else None,
            )
            check(f"{where} recipient", a.recipient, b.recipient)
            if a.kind == "agent":
                check(f"{where} role", a.role, b.role)
                check(f"{where} tool calls", _calls(a), _calls(b))
            else:
                check(f"{where} answers call", a.tool_call_id, b.tool_call_id)
    elif fmt == "whowhen-pro":  # eva: a system turn first, observations of one turn merged into one tool turn
        check("mode", original.gold.mode, back.gold.mode)
        check("gold agent turn", _agent_turn(original, original.gold.step), _agent_turn(back, back.gold.step))
        turns_a = [(s.content, _calls(s)) for s in original.steps if s.kind == "agent"]
        turns_b = [(s.content, _calls(s)) for s in back.steps if s.kind == "agent"]
        check("agent turns", turns_a, turns_b)
        observed = "\n".join(s.content for s in back.steps if s.kind == "tool")
        check(
            "observations lost", [], [s.index for s in original.steps if s.kind == "tool" and s.content not in observed]
        )
        check(
            "user messages after the task",
            [s.content for s in original.steps if s.kind == "user"][1:],
            [s.content for s in back.steps if s.kind == "user"][1:],
        )
        check("gold content", original.steps[original.gold.step].content, back.steps[back.gold.step].content)
    else:  # whowhen, tracertraj: one entry per step
        check("gold step", original.gold.step, back.gold.step)
        mode = original.gold.mode or ""
        check(
            "mode in mistake_reason",
            True,
            bool(mode)
            and (f"({mode}," in (back.gold.rationale or "") or f"({to_release(mode)}," in (back.gold.rationale or "")),
        )
        check("step count", len(original.steps), len(back.steps))
        for a, b in zip(original.steps, back.steps, strict=False):
            where = f"step {a.index}"
            check(f"{where} kind", a.kind, b.kind)
            check(f"{where} text", _rendered(a) if a.kind == "agent" else a.content, b.content)
            if a.kind == "agent":
                check(f"{where} agent", a.agent, b.agent)
    return out


def round_trip(fmt: str, gold: list[Trajectory], tmp: Path) -> RoundTrip:
    """Export ``gold`` in ``fmt``, import it back, compare record by record."""
    originals = [from_trajectory(t) for t in gold]
    name, _, suffix = fmt.partition(".")
    target = tmp / (f"export.{suffix}" if suffix else "export")
    summary = exporters.get(name)(gold, target)
    back, imported = summarise(importers.get(name)(target))
    result = RoundTrip(
        records=len(gold),
        written=summary.written,
        reimported=imported.imported,
        skipped=[str(p) for p in [*summary.skipped, *imported.problems]],
    )
    if name == "whowhen-pro":  # rows are grouped by modality: match by the record id kept in extras
        by_id = {str(r.extra.get("source", {}).get("record_id")): r for r in back}
    else:
        by_id = dict(zip([o.id for o in originals], back, strict=False))
    for original in originals:
        returned = by_id.get(original.id)
        found = differences(name, original, returned) if returned is not None else [f"{original.id}: not re-imported"]
        result.differences.extend(found)
        result.identical += not found
    return result
