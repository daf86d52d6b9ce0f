"""Export labelled failures in Who&When Pro's released layout, so its own harness loads them unchanged.

Layout (the release's evaluation harness, ``whowhen_eval/run.py``): ``<out>/data/{text,image,video}.jsonl``
with one row per trace, ``{"id","framework","benchmark","task","trajectory","ground_truth","extras"}``
written with compact separators and ``id``/``framework``/``benchmark`` first (the harness reads those
three off the line's prefix), the last four as JSON-encoded strings; and ``<out>/taxonomy.yaml``
mapping each code to ``{name, description}``, which the harness reads to build its prompt's mode list.

The ``framework`` decides how a consumer reads the trajectory, so a row must follow that framework's
convention exactly:

- single-agent records are written as ``eva``: ``[0]`` system, ``[1]`` user (the task), then each agent
  step as an ``assistant`` turn with its ``tool_calls`` and the observations of those calls merged
  into *one* ``tool`` turn. eva is the released framework whose trajectory is the function-calling
  chat (assistant turns with tool calls, tool results), which is what failforge's harnesses record.
  ``ground_truth.step`` is the native index of the decisive assistant turn, and the invariant the
  harness's scorer relies on, ``(step - 2) // 2 ==`` the turn's ordinal, is checked for every row.
  Merging matters: with two observations after one turn the scorer's arithmetic would point at the
  wrong turn. ``ground_truth.agent`` is null, as in the release's single-agent rows.
- multi-agent records whose steps all carry ``round``/``position`` are written as ``magentic-one``, as
  the release's traces are (``whowhenpro.github.io``, ``data/traces/simpleqa_election.json``): a
  ``kind: agent`` entry per agent step with the agent's id in ``agent`` and its role in ``role`` (the
  roster's role for failforge gold, e.g. ``orchestrator``, ``worker``; the release writes
  ``Orchestrator``, ``WebSurfer``), its ``round``/``position``, its text in ``output``, its tool calls
  in ``tool_actions`` (``name`` and ``args``, which the release viewer renders under the step; a
  delegation is such a call, so a C.1 mistake shows), ``phase`` (replayed / injected / live) and its
  ``recipient``; ``extras.agents`` lists ``{id, role}``. A tool observation is a ``kind: tool`` turn
  with its coordinate, ``tool_name`` and ``tool_call_id`` (eva's tool-turn fields): the release's
  viewer (``js/examples.js``, ``normMagentic``) shows ``kind: agent`` entries only, so a tool turn is
  kept for readers that want it and never shown as an agent named after the tool. ``ground_truth.step`` is the ``"R.P"`` string. Records
  without coordinates are skipped with a reason (the CLI then exits 1): no released convention fits a
  flat multi-agent log.

Codes: ``codes="release"`` writes the released 17-code taxonomy (``taxonomy.yaml`` numbers Planning and
Action differently and merges failforge A.2/A.3 into A.1, see :mod:`failforge.attribution._codes`) and
keeps failforge's exact code in ``extras.failforge_mode``; ``codes="failforge"`` writes failforge's 18
codes in ``mode`` and a matching 18-code ``taxonomy.yaml``. The row ``id`` is built from the code
written in ``mode``. The decisive turn carries ``injected: true`` as in the release.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import yaml

from failforge.attribution._codes import RELEASE_CODES, RELEASE_TAXONOMY, to_release
from failforge.attribution._record import FailureStep, LabelledFailure, RecordProblem
from failforge.exporters._common import ExportSummary, as_records, check_codes, safe_name
from failforge.plugins import exporters
from failforge.taxonomy import MODES, get_mode
from failforge.trajectory import Trajectory

__all__ = ["RELEASE_CODES", "export_whowhen_pro", "release_row", "taxonomy_yaml", "to_release_dict", "to_whowhen_pro"]


class NotExportable(ValueError):
    """The record cannot be written in any framework convention a consumer knows."""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _mode_code(record: LabelledFailure, codes: str) -> str | None:
    if record.gold.mode is None:
        return record.gold.source_mode
    return to_release(record.gold.mode) if codes == "release" else record.gold.mode


def _row_id(record: LabelledFailure, framework: str, mode: str | None) -> str:
    task = str(record.extra.get("task_id") or record.extra.get("question_ID") or "task")
    digest = hashlib.sha256(record.id.encode()).hexdigest()[:12]
    return "__".join(safe_name(x) for x in (framework, record.benchmark or record.source.split("/")[0], mode or "none", task, digest))


def _eva_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], int]:
    """eva's trajectory and the native index of the gold step."""
    steps = record.steps
    first_user = next((s for s in steps if s.kind == "user"), None)
    if first_user is None:
        raise NotExportable("eva needs a user (task) step")
    prompt = record.task.system_prompts.get(record.gold.agent or "") or next(iter(record.task.system_prompts.values()), "")
    out: list[dict[str, Any]] = [{"kind": "system", "content": prompt}, {"kind": "user", "content": first_user.content, **_images_field(first_user.images)}]
    native: dict[int, int] = {first_user.index: 1}
    pending: list[FailureStep] = []

    def flush() -> None:
        if not pending:
            return
        entry: dict[str, Any] = {
            "kind": "tool",
            "content": pending[0].content if len(pending) == 1 else "\n\n".join(f"[{s.agent}]\n{s.content}" for s in pending),
            "tool_call_id": pending[0].tool_call_id,
            "tool_name": pending[0].agent if len(pending) == 1 else ",".join(s.agent for s in pending),
            **_images_field([i for s in pending for i in s.images]),
        }
        for s in pending:
            native[s.index] = len(out)
        out.append(entry)
        pending.clear()

    for step in steps:
        if step is first_user or step.kind == "system":
            continue
        if step.kind == "tool":
            pending.append(step)
            continue
        if step.kind != "agent":
            raise NotExportable(f"step {step.index} is a {step.kind} step after the task; eva has none")
        flush()
        turn: dict[str, Any] = {"kind": "assistant", "content": step.content}
        if step.tool_calls:
            turn["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
        if step.index == record.gold.step:
            turn["injected"] = True
        native[step.index] = len(out)
        out.append(turn)
    flush()
    gold = native.get(record.gold.step)
    if gold is None or out[gold]["kind"] != "assistant":
        raise NotExportable(f"the gold step {record.gold.step} is not an agent turn")
    ordinal = sum(1 for e in out[2:gold] if e["kind"] == "assistant")
    if (gold - 2) // 2 != ordinal:
        raise NotExportable(f"the gold step lands on eva index {gold}; the harness's (step - 2) // 2 = {(gold - 2) // 2} would not be assistant turn {ordinal}")
    return out, gold


def _tool_actions(step: FailureStep) -> list[dict[str, Any]]:
    """A step's tool calls as the release's ``tool_actions`` (``type``, ``name``, ``args``; the viewer renders
    each as ``tool · name`` with its args), plus the call ``id`` the tool turns answer."""
    actions = []
    for call in step.tool_calls:
        try:
            args: Any = json.loads(call.arguments) if call.arguments.strip() else {}
        except (ValueError, RecursionError):
            args = call.arguments  # not JSON: kept verbatim, as the model wrote it
        actions.append({"type": "function", "name": call.name, "args": args, "id": call.id})
    return actions


def _phase(record: LabelledFailure, step: FailureStep) -> list[str]:
    """The release's ``phase``: a failforge gold record's prefix was replayed, step t injected, the rest live."""
    if step.index == record.gold.step:
        return ["injected"]
    if record.origin.format != "failforge":
        return []
    return ["replayed"] if step.index < record.gold.step else ["live"]


def _magentic_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], str]:
    """magentic-one entries: each agent step as ``kind: agent`` (``agent``, its ``role``, ``round``,
    ``position``, ``output``, ``tool_actions``, ``phase``, and ``recipient`` when known) and each tool
    observation as a ``kind: tool`` turn with its own coordinate, named by ``tool_name`` and answering
    ``tool_call_id`` (eva's tool-turn fields), so a tool is never an agent."""
    out: list[dict[str, Any]] = [{"kind": "user", "content": record.task.question}]
    gold_label = ""
    for step in record.steps:
        if step.kind in ("user", "system"):
            continue
        c = step.coordinate
        if c is None or c.round is None or c.position is None:
            raise NotExportable(f"step {step.index} has no round/position; magentic-one needs them on every step")
        if step.kind == "tool":
            entry: dict[str, Any] = {"kind": "tool", "tool_name": step.agent, "tool_call_id": step.tool_call_id, "round": c.round,
                                     "position": c.position, "content": step.content}
        else:
            entry = {"kind": "agent", "agent": step.agent, "role": step.role or record.roles.get(step.agent) or step.agent,
                     "round": c.round, "position": c.position, "output": step.content}
            if step.tool_calls:
                entry["tool_actions"] = _tool_actions(step)
        if step.recipient:
            entry["recipient"] = step.recipient
        phase = _phase(record, step)
        if phase:
            entry["phase"] = phase
        if step.index == record.gold.step:
            if step.kind != "agent":
                raise NotExportable(f"the gold step {record.gold.step} is a {step.kind} step, not an agent's")
            gold_label = f"{c.round}.{c.position}"
        out.append(entry)
    if not gold_label:
        raise NotExportable(f"the gold step {record.gold.step} is not an agent step")
    return out, gold_label


#: failforge harnesses whose records are written in the release's smolagents convention (a CodeAgent's actions).
SMOLAGENTS_HARNESSES = frozenset({"smolagents.code"})


def _smolagents_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], int]:
    """The release's smolagents entries (user, then one ``action`` per agent step with its code's observation) and
    the gold action's ``step_number``: the cursor the release's reader and scorer use, starting at 1 (no planning)."""
    from failforge.conformance._code import CODE_BLOCK
    from failforge.seeds.smolagents_run import smolagents_observation

    first_user = next((s for s in record.steps if s.kind == "user"), None)
    if first_user is None:
        raise NotExportable("smolagents needs a user (task) step")
    out: list[dict[str, Any]] = [{"kind": "user", "content": first_user.content}]
    gold: int | None = None
    number = 0
    for i, step in enumerate(record.steps):
        if step.kind != "agent":
            continue
        number += 1
        after = record.steps[i + 1] if i + 1 < len(record.steps) and record.steps[i + 1].kind == "tool" else None
        blocks = [a or b for a, b in CODE_BLOCK.findall(step.content or "")]
        observation, error, final = smolagents_observation(after.content if after is not None else None)
        out.append({"kind": "action", "step_number": number, "reasoning": step.content, "code": blocks[-1] if blocks else None,
                    "observation": observation, "observation_images": [], "error": error, "is_final_answer": final})
        if step.index == record.gold.step:
            gold = number
    if gold is None:
        raise NotExportable(f"the gold step {record.gold.step} is not an agent step")
    return out, gold


def to_release_dict(record: LabelledFailure, codes: Literal["release", "failforge"] = "release") -> dict[str, Any]:
    """The release's per-trace dict (what ``release_from_row`` rebuilds from a row)."""
    check_codes(codes)
    mode = _mode_code(record, codes)
    if record.framework in SMOLAGENTS_HARNESSES:
        framework = "smolagents"
        trajectory, number = _smolagents_trajectory(record)
        ground_truth: dict[str, Any] = {"agent": None, "step": number, "mode": mode}
    elif record.topology == "single":
        framework = "eva"
        trajectory, step = _eva_trajectory(record)
        ground_truth = {"agent": None, "step": step, "mode": mode}
    else:
        framework = "magentic-one"
        trajectory, label = _magentic_trajectory(record)
        ground_truth = {"agent": record.gold.agent, "step": label, "mode": mode}
    final = next((s.content for s in reversed(record.steps) if s.kind == "agent"), "")
    extras: dict[str, Any] = {
        "agents": [{"id": a, "role": record.roles.get(a) or _role_of(record, a)} for a in record.agents],
        "final_answer": final,
        "eval_status": "failed",
        "failforge_mode": record.gold.mode,
        "source": {"generator": "failforge", "record_id": record.id, "source": record.source, "framework": record.framework},
    }
    return {
        "id": _row_id(record, framework, mode),
        "framework": framework,
        "benchmark": record.benchmark or record.source.split("/")[0],
        "modality": record.modality,
        "task": {"query": record.task.question, "answer": record.task.gold_answer or "", **_images_field(_task_images(record))},
        "trajectory": trajectory,
        "ground_truth": ground_truth,
        **extras,
    }


def image_path(ref: Any) -> str | None:
    """Where an image lives in the release layout: ``images/<sha256>.png`` beside ``data/`` (a path kept as given)."""
    return f"images/{ref.sha256}.png" if ref.sha256 else ref.path


def _images_field(refs: list[Any]) -> dict[str, Any]:
    paths = [p for p in (image_path(r) for r in refs) if p]
    return {"images": [{"path": p} for p in paths]} if paths else {}


def _task_images(record: LabelledFailure) -> list[Any]:
    first_user = next((s for s in record.steps if s.kind == "user"), None)
    return list(first_user.images) if first_user is not None else []


def _copy_images(record: LabelledFailure, output: Path) -> str | None:
    """Copy the record's images from the image store into ``<output>/images``; the first one missing, else None."""
    from failforge.images import ImageMissing, ImageStore

    store = ImageStore()
    for ref in {r.sha256 for s in record.steps for r in s.images if r.sha256}:
        target = Path(output) / "images" / f"{ref}.png"
        if target.exists():
            continue
        try:
            data = store.get(ref)
        except ImageMissing as exc:
            return str(exc)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return None


def _role_of(record: LabelledFailure, agent: str) -> str:
    return next((s.role for s in record.steps if s.kind == "agent" and s.agent == agent and s.role), agent)


def release_row(release: dict[str, Any]) -> str:
    """One JSONL line in the release's row layout (id, framework, benchmark first; four JSON strings)."""
    base = ("id", "framework", "benchmark", "modality", "task", "trajectory", "ground_truth")
    extras = {k: v for k, v in release.items() if k not in base}
    row = {
        "id": release["id"], "framework": release["framework"], "benchmark": release["benchmark"],
        "task": _compact(release["task"]), "trajectory": _compact(release["trajectory"]),
        "ground_truth": _compact(release["ground_truth"]), "extras": _compact(extras),
    }
    return _compact(row) + "\n"


def taxonomy_yaml(codes: Literal["release", "failforge"] = "release") -> str:
    """``taxonomy.yaml`` for the codes written in ``mode``: code -> {name, description}."""
    if codes == "failforge":
        table = {m.code: {"name": m.name, "description": m.definition} for m in MODES}
    else:
        merged: dict[str, list[str]] = {}
        for m in MODES:
            merged.setdefault(to_release(m.code), []).append(m.code)
        table = {}
        for code, name in RELEASE_TAXONOMY:
            sources = merged.get(code, [])
            description = " ".join(get_mode(c).definition for c in sources)
            if len(sources) > 1:
                description += f" (failforge {' and '.join(sources)} both map here.)"
            table[code] = {"name": name, "description": description}
    return yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100)


@exporters.register("whowhen-pro", description="Who&When Pro release layout: <out>/data/{text,image,video}.jsonl + taxonomy.yaml")
def export_whowhen_pro(items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release") -> ExportSummary:
    check_codes(codes)
    records = as_records(items)
    summary = ExportSummary()
    by_split: dict[str, list[str]] = {}
    for record in records:
        try:
            row = release_row(to_release_dict(record, codes))
            missing = _copy_images(record, output) if record.modality == "image" else None
            if missing is not None:  # a screenshot not in the image store: that record is reported and skipped
                raise NotExportable(missing)
            by_split.setdefault(record.modality, []).append(row)
        except NotExportable as exc:
            summary.skipped.append(RecordProblem(path=record.origin.path, line=record.origin.line, field="steps", problem=f"record {record.id}: {exc}"))
    data = Path(output) / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split, lines in sorted(by_split.items()):
        target = data / f"{split}.jsonl"
        target.write_text("".join(lines), encoding="utf-8")
        summary.files.append(str(target))
        summary.written += len(lines)
    taxonomy = Path(output) / "taxonomy.yaml"
    taxonomy.write_text(taxonomy_yaml(codes), encoding="utf-8")
    summary.files.append(str(taxonomy))
    return summary


def to_whowhen_pro(gold: Trajectory | LabelledFailure, codes: Literal["release", "failforge"] = "release") -> dict[str, Any]:
    """One failforge gold trajectory (or record) as the release's per-trace dict."""
    return to_release_dict(as_records([gold])[0], codes)
