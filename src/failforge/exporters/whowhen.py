"""Export labelled failures as Who&When logs: a folder of ``N.json``, the layout its scripts read.

Who&When's ``Automated_FA`` scripts list ``*.json`` in a folder, sort them by the digits in the name and
read ``question``, ``ground_truth`` and ``history``; ``evaluate.py`` reads ``mistake_agent`` and
``mistake_step`` (a string) of the file a prediction names. Files are written as ``1.json``, ``2.json``, ...
in the Algorithm-Generated style (the agent in ``name``, so read them with ``--is_handcrafted False``):
``history`` is one entry per step, index = failforge step, so ``mistake_step`` is the gold step
unchanged. Tool observations are written as the public logs write a tool's output, by
``Computer_terminal`` with role ``user`` (the call that produced it is in the agent entry before it),
so Who&When's readers and failforge's importer read them as tool output, not as an agent named after
the tool. ``question_ID`` is unique and slash-free; ``system_prompt`` maps each agent to the
system prompt it ran under; ``mistake_reason`` explains the error (mode, definition, what the step
was in the successful run and what it became), never the steering note.

The reader's prediction parser only accepts agent names matching ``[\\w_]+``; an agent named otherwise
is written as is and reported, since no prediction could name it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from failforge.attribution import LabelledFailure, RecordProblem, to_release
from failforge.exporters._common import (
    TOOL_OUTPUT_NAME,
    ExportSummary,
    as_records,
    check_codes,
    safe_name,
    unique_names,
)
from failforge.plugins import exporters
from failforge.taxonomy import get_mode
from failforge.trajectory import Trajectory

_READER_AGENT = re.compile(r"^[\w_]+$")


def _reason(record: LabelledFailure, codes: str) -> str:
    if record.gold.rationale:
        text = record.gold.rationale
    elif record.gold.mode:
        mode = get_mode(record.gold.mode)
        text = f"{record.gold.agent} made a {mode.name.lower()} error at step {record.gold.step}: {mode.definition}"
    else:
        text = f"{record.gold.agent} made the decisive error at step {record.gold.step}."
    if record.gold.mode and codes == "release":
        text = text.replace(f"({record.gold.mode},", f"({to_release(record.gold.mode)},", 1)
    return text


def to_log(
    record: LabelledFailure, question_id: str, codes: Literal["release", "failforge"] = "release"
) -> dict[str, Any]:
    history = []
    for step in record.steps:
        if step.kind == "user":
            history.append({"content": step.content, "role": "user", "name": "human"})
        elif step.kind == "agent":
            calls = "".join(f"\n[call {c.name}({c.arguments})]" for c in step.tool_calls)
            history.append({"content": step.content + calls, "role": "assistant", "name": step.agent})
        elif step.kind == "tool":  # as the public logs name a tool's output (the tool is named by the call before it)
            history.append({"content": step.content, "role": "user", "name": TOOL_OUTPUT_NAME})
        else:
            history.append({"content": step.content, "role": "system", "name": "system"})
    return {
        "is_correct": False,
        "question": record.task.question,
        "question_ID": question_id,
        "ground_truth": record.task.gold_answer or "",
        "history": history,
        "mistake_agent": record.gold.agent or record.steps[record.gold.step].agent,
        "mistake_step": str(record.gold.step),
        "mistake_reason": _reason(record, codes),
        "system_prompt": dict(record.task.system_prompts),
    }


def _write_numbered(
    items: Iterable[Trajectory | LabelledFailure],
    output: Path,
    codes: Literal["release", "failforge"],
    make: Callable[[LabelledFailure, str, Literal["release", "failforge"]], dict[str, Any]],
    *,
    parseable: bool,
) -> ExportSummary:
    """Write each record's log as ``<out>/1.json, 2.json, ...`` (the releases' layout), ``make`` giving its shape;
    ``parseable``: note an agent name Who&When's evaluate.py cannot read back from a prediction."""
    check_codes(codes)
    records = as_records(items)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    ids = unique_names(records, lambda r: safe_name(r.id))
    for number, (record, qid) in enumerate(zip(records, ids, strict=False), start=1):
        log = make(record, qid, codes)
        if parseable and not _READER_AGENT.match(log["mistake_agent"]):
            summary.notes.append(
                RecordProblem(
                    path=record.origin.path,
                    line=record.origin.line,
                    field="mistake_agent",
                    problem=(
                        f"record {record.id}: written, but Who&When's evaluate.py cannot parse a prediction of agent"
                        f" {log['mistake_agent']!r} ([\\w_]+ only)"
                    ),
                )
            )
        target = out / f"{number}.json"
        target.write_text(json.dumps(log, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        summary.files.append(str(target))
        summary.written += 1
    return summary


@exporters.register("whowhen", description="Who&When logs: <out>/1.json, 2.json, ... (Algorithm-Generated style)")
def export_whowhen(
    items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release"
) -> ExportSummary:
    return _write_numbered(items, output, codes, to_log, parseable=True)


def to_hand_crafted_log(
    record: LabelledFailure, question_id: str, codes: Literal["release", "failforge"] = "release"
) -> dict[str, Any]:
    """A record in the Hand-Crafted (Magentic-One) shape: no ``name``, the agent in ``role`` with the
    addressee as Magentic-One's logs spell it (``"orchestrator (-> banking_worker)"``), the user as
    ``human``, a tool's output as ``Computer_terminal``; ``is_corrected`` and no system prompts, as there."""
    team = set(record.agents)
    history = []
    for step in record.steps:
        if step.kind == "user":
            history.append({"content": step.content, "role": "human"})
        elif step.kind == "agent":
            calls = "".join(f"\n[call {c.name}({c.arguments})]" for c in step.tool_calls)
            to = step.recipient if step.recipient in team and step.recipient != step.agent else None
            history.append({"content": step.content + calls, "role": f"{step.agent} (-> {to})" if to else step.agent})
        elif step.kind == "tool":
            history.append({"content": step.content, "role": "Computer_terminal"})
        else:
            history.append({"content": step.content, "role": "system"})
    return {
        "is_corrected": False,
        "question": record.task.question,
        "question_ID": question_id,
        "ground_truth": record.task.gold_answer or "",
        "history": history,
        "mistake_agent": record.gold.agent or record.steps[record.gold.step].agent,
        "mistake_step": str(record.gold.step),
        "mistake_reason": _reason(record, codes),
    }


@exporters.register(
    "whowhen-hand-crafted",
    description=(
        "Who&When logs in the Hand-Crafted (Magentic-One) shape: <out>/1.json, ... (role 'agent (-> addressee)')"
    ),
)
def export_whowhen_hand_crafted(
    items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release"
) -> ExportSummary:
    return _write_numbered(items, output, codes, to_hand_crafted_log, parseable=False)


def to_whowhen(
    gold: Trajectory | LabelledFailure, codes: Literal["release", "failforge"] = "release"
) -> dict[str, Any]:
    """One gold trajectory (or record) as a Who&When log dict."""
    record = as_records([gold])[0]
    return to_log(record, safe_name(record.id), codes)
