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
  kept for readers that want it and never shown as an agent named after the tool. ``ground_truth.step``
  is the ``"R.P"`` string. Records
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

from failforge.attribution import (
    RELEASE_CODES,
    RELEASE_TAXONOMY,
    FailureStep,
    LabelledFailure,
    RecordProblem,
    to_release,
)
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
    parts = (framework, record.framework, record.benchmark or record.source.split("/")[0], mode or "none", task, digest)
    return "__".join(safe_name(x) for x in parts)


#: eva's tool turn between two assistant turns that had nothing between them (the renderer's step arithmetic
#: needs one tool turn after every assistant turn; it shows this one as an empty observation).
NO_OBSERVATION = "(no observation)"


def _observation_turn(pending: list[FailureStep], native: dict[int, int], at: int) -> dict[str, Any]:
    """The observations of one assistant turn (tool results, and user messages that came before the next
    turn) as one eva ``tool`` turn: ``content`` is what the renderer folds into the assistant's step, each part
    labelled by its source when there are several; ``parts`` keeps them apart for readers that split them."""
    for s in pending:
        native[s.index] = at
    if not pending:
        return {"kind": "tool", "content": "", "tool_name": NO_OBSERVATION, "parts": []}
    labelled = len(pending) > 1 or any(s.kind != "tool" for s in pending)
    content = (
        "\n\n".join(f"[{s.agent if s.kind == 'tool' else 'user'}]\n{s.content}" for s in pending)
        if labelled
        else pending[0].content
    )
    entry: dict[str, Any] = {
        "kind": "tool",
        "content": content,
        "tool_call_id": pending[0].tool_call_id,
        "tool_name": ",".join(s.agent if s.kind == "tool" else "user" for s in pending),
    }
    if labelled:
        entry["parts"] = [
            {"kind": s.kind, "name": s.agent, "tool_call_id": s.tool_call_id, "content": s.content} for s in pending
        ]
    return entry


def _eva_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], int]:
    """eva's trajectory and the native index of the gold step.

    Every assistant turn is followed by exactly one ``tool`` turn before the next assistant turn: the
    observations of its calls and any user message that came before the next turn (BFCL's later user
    turns, a user simulator's replies) merged into it, or an empty one when nothing came between. That keeps
    the harness's ``(step - 2) // 2`` on the right turn and shows the judge every observation and user
    message inside the step they follow."""
    steps = record.steps
    first_user = next((s for s in steps if s.kind == "user"), None)
    if first_user is None:
        raise NotExportable("eva needs a user (task) step")
    prompt = record.task.system_prompts.get(record.gold.agent or "") or next(
        iter(record.task.system_prompts.values()), ""
    )
    out: list[dict[str, Any]] = [{"kind": "system", "content": prompt}, {"kind": "user", "content": first_user.content}]
    native: dict[int, int] = {first_user.index: 1}
    pending: list[FailureStep] = []
    turn_open = False  # an assistant turn was written and its tool turn not yet

    for step in steps:
        if step is first_user or step.kind == "system":
            continue
        if step.kind in ("tool", "user"):
            if not turn_open:  # before the first assistant turn: eva has no place for it
                raise NotExportable(
                    f"step {step.index} is a {step.kind} step before the agent's first turn; eva has none"
                )
            pending.append(step)
            continue
        if step.kind != "agent":
            raise NotExportable(f"step {step.index} is a {step.kind} step; eva has none")
        if turn_open:
            out.append(_observation_turn(pending, native, len(out)))
            pending.clear()
        turn: dict[str, Any] = {"kind": "assistant", "content": step.content}
        if step.tool_calls:
            turn["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
        if step.index == record.gold.step:
            turn["injected"] = True
        native[step.index] = len(out)
        out.append(turn)
        turn_open = True
    if pending:
        out.append(_observation_turn(pending, native, len(out)))
    gold = native.get(record.gold.step)
    if gold is None or out[gold]["kind"] != "assistant":
        raise NotExportable(f"the gold step {record.gold.step} is not an agent turn")
    ordinal = sum(1 for e in out[2:gold] if e["kind"] == "assistant")
    if (gold - 2) // 2 != ordinal:
        raise NotExportable(
            f"the gold step lands on eva index {gold}; the harness's (step - 2) // 2 = "
            f"{(gold - 2) // 2} would not be assistant turn {ordinal}"
        )
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
    ``tool_call_id`` (eva's tool-turn fields), so a tool is never an agent.

    The harness's renderer shows ``kind: agent`` entries only (their ``output`` and ``tool_actions``), so what
    the judge must see of the other steps is also placed there: each call's observation as its action's
    ``result``, and an observation that answers no call, or a user message after the task, as an action of
    type ``observation`` on the agent entry before it (``name``: the tool, or ``user``)."""
    out: list[dict[str, Any]] = [{"kind": "user", "content": record.task.question}]
    by_call: dict[str, dict[str, Any]] = {}
    last_agent: dict[str, Any] | None = None
    first_user = next((s for s in record.steps if s.kind == "user"), None)
    gold_label = ""
    for step in record.steps:
        if step is first_user or step.kind == "system":
            continue
        c = step.coordinate
        placed = c is not None and c.round is not None and c.position is not None
        if not placed and step.kind != "user":
            raise NotExportable(f"step {step.index} has no round/position; magentic-one needs them on every step")
        where = {"round": c.round, "position": c.position} if c is not None and placed else {}
        if step.kind == "agent":
            entry: dict[str, Any] = {
                "kind": "agent",
                "agent": step.agent,
                "role": step.role or record.roles.get(step.agent) or step.agent,
                **where,
                "output": step.content,
            }
            if step.tool_calls:
                entry["tool_actions"] = _tool_actions(step)
                by_call.update({a["id"]: a for a in entry["tool_actions"] if a.get("id")})
            last_agent = entry
        else:
            entry = {"kind": step.kind, **where, "content": step.content}
            if step.kind == "tool":
                entry.update({"tool_name": step.agent, "tool_call_id": step.tool_call_id})
            action = by_call.get(step.tool_call_id or "") if step.kind == "tool" else None
            if action is not None and "result" not in action:
                action["result"] = step.content
            elif last_agent is not None:
                last_agent.setdefault("tool_actions", []).append(
                    {
                        "type": "observation",
                        "name": step.agent if step.kind == "tool" else "user",
                        "result": step.content,
                    }
                )
        if step.recipient:
            entry["recipient"] = step.recipient
        phase = _phase(record, step)
        if phase:
            entry["phase"] = phase
        if step.index == record.gold.step:
            if step.kind != "agent":
                raise NotExportable(f"the gold step {record.gold.step} is a {step.kind} step, not an agent's")
            gold_label = f"{where['round']}.{where['position']}"
        out.append(entry)
    if not gold_label:
        raise NotExportable(f"the gold step {record.gold.step} is not an agent step")
    return out, gold_label


#: The GUI split's frameworks (``whowhen_eval/render/gui.py``, one renderer for all four; ``score.py``): coact is
#: multi-agent (named agent, identity step); the single-agent ones label every step with one fixed agent.
GUI_MULTI = "coact"
GUI_SINGLE = "agentoccam"
GUI_SINGLE_AGENT = "web_agent"


def _gui_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], int]:
    """The ``image_gui`` schema: one ``kind: action`` entry per agent step, ``step_number`` 1-indexed (the
    rendered coordinate and ``ground_truth.step``), the agent's text in ``reasoning``, its tool calls in
    ``action``, what followed it (tool results, user messages) in ``observation`` and, structured, in
    ``observations``; ``observation_images`` holds the screen the agent saw when it acted (the latest
    screenshot before its step), base64 as in the release's image rows."""
    first_user = next((s for s in record.steps if s.kind == "user"), None)
    out: list[dict[str, Any]] = [{"kind": "user", "content": record.task.question}]
    screen = list(first_user.images) if first_user is not None else []
    single = record.topology == "single"
    action: dict[str, Any] | None = None
    gold = 0
    number = 0
    for step in record.steps:
        if step is first_user or step.kind == "system":
            continue
        if step.kind == "agent":
            number += 1
            action = {
                "kind": "action",
                "step_number": number,
                "agent": GUI_SINGLE_AGENT if single else step.agent,
                "agent_id": step.agent,
                "reasoning": step.content,
                "action": "\n".join(f"{c.name}({c.arguments})" for c in step.tool_calls),
                "observation": "",
                "is_final_answer": False,
            }
            if step.tool_calls:
                action["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls]
            if screen:
                action["observation_images"] = [_image_data(screen[-1])]
            if step.index == record.gold.step:
                action["injected"] = True
                gold = number
            out.append(action)
            continue
        if action is None:
            raise NotExportable(
                f"step {step.index} is a {step.kind} step before the agent's first turn; the GUI schema has none"
            )
        if step.images:
            screen = list(step.images)
        name = step.agent if step.kind == "tool" else "user"
        action["observation"] = "\n\n".join(x for x in (action["observation"], f"[{name}]\n{step.content}") if x)
        action.setdefault("observations", []).append(
            {"kind": step.kind, "name": step.agent, "tool_call_id": step.tool_call_id, "content": step.content}
        )
    if action is not None:
        action["is_final_answer"] = True
    if not gold:
        raise NotExportable(f"the gold step {record.gold.step} is not an agent step")
    return out, gold


#: failforge harnesses whose records are written in the release's smolagents convention (a CodeAgent's actions).
SMOLAGENTS_HARNESSES = frozenset({"smolagents.code"})


def _smolagents_trajectory(record: LabelledFailure) -> tuple[list[dict[str, Any]], int]:
    """The release's smolagents entries (user, then one ``action`` per agent step with its code's observation) and
    the gold action's ``step_number``: the cursor the release's reader and scorer use, starting at 1 (no planning)."""
    from failforge.judgement import code_blocks
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
        blocks = code_blocks(step.content or "")
        observation, error, final = smolagents_observation(after.content if after is not None else None)
        out.append(
            {
                "kind": "action",
                "step_number": number,
                "reasoning": step.content,
                "code": blocks[-1] if blocks else None,
                "observation": observation,
                "observation_images": [],
                "error": error,
                "is_final_answer": final,
            }
        )
        if step.index == record.gold.step:
            gold = number
    if gold is None:
        raise NotExportable(f"the gold step {record.gold.step} is not an agent step")
    return out, gold


def _image_data(ref: Any) -> dict[str, Any]:
    """An image as the release's image rows embed it: ``{"__type__": "PIL.Image", "data": <base64>, "mime"}``
    (``whowhen_eval/render/base.py: pil_image_part``), read from failforge's image store."""
    import base64

    from failforge.images import ImageMissing, ImageStore

    if not ref.sha256:
        raise NotExportable(f"image {ref.path!r} has no sha256 in the image store")
    try:
        data = ImageStore().get(ref.sha256)
    except ImageMissing as exc:
        raise NotExportable(str(exc)) from None
    encoded = base64.b64encode(data).decode("ascii")
    return {"__type__": "PIL.Image", "data": encoded, "mime": "image/png", "sha256": ref.sha256}


def agent_framework(record: LabelledFailure) -> str:
    """The framework that ran: a failforge harness's name, or the external harness's ``--framework``."""
    return record.framework


def convention(record: LabelledFailure) -> tuple[str, str]:
    """(split, framework convention) a record is written in: GUI records (any screenshot) in ``image_gui``
    as coact or agentoccam, other single-agent records in ``text`` as eva, multi-agent ones as magentic-one."""
    if record.modality == "image":
        return "image_gui", GUI_SINGLE if record.topology == "single" else GUI_MULTI
    if record.framework in SMOLAGENTS_HARNESSES:
        return "text", "smolagents"
    return "text", "eva" if record.topology == "single" else "magentic-one"


def to_release_dict(record: LabelledFailure, codes: Literal["release", "failforge"] = "release") -> dict[str, Any]:
    """The release's per-trace dict (what ``release_from_row`` rebuilds from a row); its ``modality`` is the split."""
    check_codes(codes)
    mode = _mode_code(record, codes)
    split, framework = convention(record)
    ground_truth: dict[str, Any]
    if framework == "smolagents":
        trajectory, number = _smolagents_trajectory(record)
        ground_truth = {"agent": None, "step": number, "mode": mode}
    elif framework == "eva":
        trajectory, step = _eva_trajectory(record)
        ground_truth = {"agent": None, "step": step, "mode": mode}
    elif framework == "magentic-one":
        trajectory, label = _magentic_trajectory(record)
        ground_truth = {"agent": record.gold.agent, "step": label, "mode": mode}
    else:
        trajectory, number = _gui_trajectory(record)
        ground_truth = {"agent": None if framework == GUI_SINGLE else record.gold.agent, "step": number, "mode": mode}
    final = next((s.content for s in reversed(record.steps) if s.kind == "agent"), "")
    extras: dict[str, Any] = {
        "agents": [{"id": a, "role": record.roles.get(a) or _role_of(record, a)} for a in record.agents],
        "final_answer": final,
        "eval_status": "failed",
        "failforge_mode": record.gold.mode,
        "agent_framework": agent_framework(record),
        "step_convention": framework,
        **({"difficulty": record.extra["difficulty"]} if record.extra.get("difficulty") else {}),
        "source": {
            "generator": "failforge",
            "record_id": record.id,
            "source": record.source,
            "framework": record.framework,
            "harness": record.extra.get("harness", record.framework),
        },
    }
    task: dict[str, Any] = {"query": record.task.question, "answer": record.task.gold_answer or ""}
    if split != "text" and _task_images(record):
        task["images"] = [_image_data(r) for r in _task_images(record)]
    return {
        "id": _row_id(record, framework, mode),
        "framework": framework,
        "benchmark": record.benchmark or record.source.split("/")[0],
        "modality": split,
        "task": task,
        "trajectory": trajectory,
        "ground_truth": ground_truth,
        **extras,
    }


def _task_images(record: LabelledFailure) -> list[Any]:
    first_user = next((s for s in record.steps if s.kind == "user"), None)
    return list(first_user.images) if first_user is not None else []


def _role_of(record: LabelledFailure, agent: str) -> str:
    return next((s.role for s in record.steps if s.kind == "agent" and s.agent == agent and s.role), agent)


def release_row(release: dict[str, Any]) -> str:
    """One JSONL line in the release's row layout (id, framework, benchmark first; four JSON strings)."""
    base = ("id", "framework", "benchmark", "modality", "task", "trajectory", "ground_truth")
    extras = {k: v for k, v in release.items() if k not in base}
    row = {
        "id": release["id"],
        "framework": release["framework"],
        "benchmark": release["benchmark"],
        "task": _compact(release["task"]),
        "trajectory": _compact(release["trajectory"]),
        "ground_truth": _compact(release["ground_truth"]),
        "extras": _compact(extras),
    }
    return _compact(row) + "\n"


def lossy_pairs() -> dict[str, list[str]]:
    """Release codes that more than one failforge code maps to (the mapping loses which one was meant)."""
    merged: dict[str, list[str]] = {}
    for m in MODES:
        merged.setdefault(to_release(m.code), []).append(m.code)
    return {code: sources for code, sources in merged.items() if len(sources) > 1}


def taxonomy_yaml(codes: Literal["release", "failforge"] = "release") -> str:
    """``taxonomy.yaml`` for the codes written in ``mode``: code -> {name, description}, as the harness's
    ``load_taxonomy`` reads it (it keeps the entries whose value is a mapping and reads ``name`` and
    ``description`` only). With the release's codes each entry also names the failforge codes that map to
    it (``failforge``), and ``x-failforge-mapping`` (a list, so the harness skips it) gives the whole 18 -> 17
    mapping with the lossy pairs marked; each row keeps failforge's exact code in ``extras.failforge_mode``."""
    if codes == "failforge":
        table: dict[str, Any] = {m.code: {"name": m.name, "description": m.definition} for m in MODES}
        return yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100)
    merged: dict[str, list[str]] = {}
    for m in MODES:
        merged.setdefault(to_release(m.code), []).append(m.code)
    lossy = lossy_pairs()
    table = {}
    for code, name in RELEASE_TAXONOMY:
        sources = merged.get(code, [])
        description = " ".join(get_mode(c).definition for c in sources)
        if len(sources) > 1:
            description += f" (failforge {' and '.join(sources)} both map here.)"
        table[code] = {"name": name, "description": description, "failforge": sources}
    table["x-failforge-mapping"] = [
        {
            "failforge": m.code,
            "failforge_name": m.name,
            "release": to_release(m.code),
            "lossy": to_release(m.code) in lossy,
        }
        for m in MODES
    ]
    return yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100)


@exporters.register(
    "whowhen-pro",
    aliases=("whowhen-pro-release",),
    description="Who&When Pro release: data/{text,image_gui}.jsonl, taxonomy.yaml, README.md card, manifest.json",
)
def export_whowhen_pro(
    items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release"
) -> ExportSummary:
    """The release as the harness reads it (``data/<split>.jsonl`` + ``taxonomy.yaml``), with a dataset card
    (``README.md``: gold by benchmark x framework x mode, decisive-step positions, lengths) and a manifest
    (``manifest.json``: every file's sha256, bytes and rows; the generator's version and conventions)."""
    from failforge.exporters._release_card import write_card, write_manifest

    check_codes(codes)
    records = as_records(items)
    summary = ExportSummary()
    by_split: dict[str, list[str]] = {}
    written: list[tuple[LabelledFailure, dict[str, Any]]] = []
    for record in records:
        try:
            release = to_release_dict(record, codes)
        except NotExportable as exc:
            summary.skipped.append(
                RecordProblem(
                    path=record.origin.path,
                    line=record.origin.line,
                    field="steps",
                    problem=f"record {record.id}: {exc}",
                )
            )
            continue
        by_split.setdefault(release["modality"], []).append(release_row(release))
        written.append((record, release))
    out = Path(output)
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split, lines in sorted(by_split.items()):
        target = data / f"{split}.jsonl"
        target.write_text("".join(lines), encoding="utf-8")
        summary.files.append(str(target))
        summary.written += len(lines)
    taxonomy = out / "taxonomy.yaml"
    taxonomy.write_text(taxonomy_yaml(codes), encoding="utf-8")
    summary.files.append(str(taxonomy))
    summary.files.append(str(write_card(out, written, codes, skipped=len(summary.skipped))))
    summary.files.append(str(write_manifest(out, codes, rows={s: len(v) for s, v in by_split.items()})))
    return summary


def to_whowhen_pro(
    gold: Trajectory | LabelledFailure, codes: Literal["release", "failforge"] = "release"
) -> dict[str, Any]:
    """One failforge gold trajectory (or record) as the release's per-trace dict."""
    return to_release_dict(as_records([gold])[0], codes)
