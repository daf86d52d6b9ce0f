"""Who&When Pro's released layout: rows of ``data/{text,image,video}.jsonl`` plus ``taxonomy.yaml``.

A row is ``{"id", "framework", "benchmark", "task", "trajectory", "ground_truth", "extras"}`` where
the last four are JSON-encoded *strings*; ``extras`` is spliced into the top level and the split name
is the modality (the release's evaluation harness, ``whowhen_eval/run.py: release_from_row``). What a
step is, and what ``ground_truth`` points at, depends on the framework. Each convention below follows
the harness's renderer for that framework (``whowhen_eval/render/<framework>.py``) and its scorer
(``whowhen_eval/score.py``); the project page's viewer (``js/examples.js``) agrees for eva, macnet,
magentic-one and smolagents:

==============  =====================================================================================
smolagents      entries user / planning / action; a cursor numbers non-framing entries, starting at 0
                when the first is a planning entry, else 1; ``ground_truth.step`` is that cursor
alfagent        entries user / action; the coordinate is ``step_number``; ``ground_truth.step`` too
eva             [0] system, [1] user, then assistant/tool turns; ``ground_truth.step`` is the native
                index of the assistant turn; the reader shows assistant turn k as ``Step k`` and
                folds the tool turn into it, so its scorer compares ``(step - 2) // 2``
dvd             [0] system, [1] user; every later entry is ``Step i - 2``; assistant turns are the
                orchestrator, ``frame_inspect_tool`` results are the frame_inspect_agent
magentic-one    entries ``kind: agent`` with ``round`` and ``position`` (their ``tool_actions`` read as
                tool calls); the coordinate is ``"R.P"`` and ``ground_truth.step`` is that string;
                ``kind: tool`` turns (failforge's export) are tool observations
macnet          entries carry no coordinate: ``R.P`` comes from the role (author 0.0, critic 1.0,
                rewriter 1.1, sink 2.0); ``ground_truth`` has ``round`` and ``position``
mathchat        entries with round/position; (0, 0, user_proxy) is framing; ``Step 2R + P``
metagpt         entries with ``stage``; the coordinate and ``ground_truth.stage`` are the stage
debate, dylan   ``kind: round`` entries holding ``turns``; ``R.P`` with P the turn's index (debate)
                or its ``position`` (dylan); ``ground_truth.round`` only: any turn of that round counts
pixelcraft      ``kind: round`` entries with turns carrying ``position``; ``ground_truth`` round/position
==============  =====================================================================================

Topology follows the harness's leaderboard: smolagents, alfagent, mathchat, pixelcraft and eva are
single-agent (their agent is ``agent``); the rest are multi-agent. ``ground_truth.accepted_predictions``
alternates are kept as accepted steps, agents and modes. Modes are the release's 17 codes; they are
mapped to failforge's 18 (see :mod:`failforge.attribution._codes`) unless the row's extras carry the
``failforge_mode`` failforge's own exporter writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from failforge.attribution._codes import canonical_code, from_release, to_release
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
from failforge.attribution.importers._common import Skip, images_of, int_step, text_of
from failforge.configfile import safe_load
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import parse_json, read_jsonl
from failforge.plugins import importers

SPLITS = ("text", "image", "image_gui", "video")
FAILFORGE_ONLY = frozenset({"PL.3", "A.5", "A.6"})
"""Codes only failforge's numbering has: a taxonomy.yaml containing one is in failforge's 18 codes."""
SINGLE_AGENT_FRAMEWORKS = frozenset(
    {"smolagents", "alfagent", "mathchat", "pixelcraft", "eva", "openai_cua", "agentoccam", "gemini"}
)
#: The image_gui split's single-agent frameworks and the one agent label render/gui.py and score.py give each.
GUI_SINGLE_LABELS = {"openai_cua": "computer_use_agent", "agentoccam": "web_agent", "gemini": "web_agent"}
ROW_FIELDS = ("task", "trajectory", "ground_truth", "extras")


@dataclass
class Parsed:
    """What a framework convention yields: steps, the gold step, and how they were matched."""

    steps: list[FailureStep] = field(default_factory=list)
    gold: int | None = None
    label: str = ""
    accepted: list[int] = field(default_factory=list)
    convention: str = ""
    warnings: list[str] = field(default_factory=list)

    def add(
        self,
        kind: str,
        agent: str,
        role: str,
        content: str,
        *,
        label: str | None = None,
        rnd: int | None = None,
        pos: int | None = None,
        calls: list[ToolCallRecord] | None = None,
        images: list[ImageRef] | None = None,
    ) -> int:
        coordinate = (
            StepCoordinate(label=label, round=rnd, position=pos) if (label is not None or rnd is not None) else None
        )
        index = len(self.steps)
        self.steps.append(
            FailureStep(
                index=index,
                kind=kind,  # type: ignore[arg-type]
                agent=agent,
                role=role,
                content=content,  # type: ignore[arg-type]
                tool_calls=calls or [],
                images=images or [],
                coordinate=coordinate,
            )
        )
        return index

    def find(self, label: str) -> int | None:
        for s in self.steps:
            if s.coordinate is not None and s.coordinate.label == label:
                return s.index
        return None


# --- helpers shared by the conventions -------------------------------------------------------------


def _norm_step(value: Any) -> str:
    """The harness's ``_norm_step``: strip 'step '/'round '/'turn ' and lowercase; ints as text."""
    if value is None or value == "":
        return ""
    out = str(value).strip().lower()
    for prefix in ("step ", "round ", "turn "):
        if out.startswith(prefix):
            return out[len(prefix) :].strip()
    return out


def _calls(entry: dict[str, Any]) -> list[ToolCallRecord]:
    out = []
    for c in entry.get("tool_calls") or []:
        if isinstance(c, dict):
            args = c.get("arguments", "")
            out.append(
                ToolCallRecord(
                    id=c.get("id"),
                    name=str(c.get("name") or (c.get("function") or {}).get("name") or "?"),
                    arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                )
            )
    return out


def _user(p: Parsed, entry: dict[str, Any], task_images: list[ImageRef]) -> None:
    p.add("user", "user", "user", text_of(entry.get("content")), images=images_of(entry.get("images")) or task_images)


def _gold_label(p: Parsed, label: str, field: str) -> None:
    index = p.find(label)
    if index is None:
        raise Skip(
            field,
            f"{label!r} names no step of the trajectory (coordinates:"
            f" {[s.coordinate.label for s in p.steps if s.coordinate and s.coordinate.label][:12]})",
        )
    p.gold, p.label = index, label


def _accepted_labels(gt: dict[str, Any]) -> list[str]:
    return [
        _norm_step(a.get("step_coord"))
        for a in gt.get("accepted_predictions") or []
        if isinstance(a, dict) and a.get("step_coord") not in (None, "")
    ]


def _entries(trajectory: Any) -> list[dict[str, Any]]:
    if not isinstance(trajectory, list):
        raise Skip("trajectory", f"expected a list, found {type(trajectory).__name__}")
    for i, entry in enumerate(trajectory):
        if not isinstance(entry, dict):
            raise Skip(f"trajectory[{i}]", f"expected an object, found {type(entry).__name__}")
    return trajectory


# --- one function per framework convention -----------------------------------------------------------


def _smolagents(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(
        convention=(
            "smolagents (whowhen_eval/render/smolagents.py): cursor over planning/action entries, "
            "0 for a leading plan else 1; ground_truth.step is the cursor"
        )
    )
    cursor: int | None = None
    for entry in _entries(release.get("trajectory")):
        kind = entry.get("kind")
        if kind == "user":
            _user(p, entry, task_images)
            continue
        if kind in ("final_answer", None):
            continue
        if cursor is None:
            cursor = 0 if kind == "planning" else 1
        if kind == "planning":
            p.add("agent", "agent", "planning", text_of(entry.get("plan")), label=str(cursor))
        elif kind == "action":
            parts = [text_of(entry.get("reasoning")).strip()]
            if entry.get("observation"):
                parts.append("[observation]\n" + text_of(entry.get("observation")).strip())
            if entry.get("error"):
                parts.append("[error]\n" + text_of(entry.get("error")).strip())
            p.add(
                "agent",
                "agent",
                "action",
                "\n".join(x for x in parts if x),
                label=str(cursor),
                images=images_of(entry.get("observation_images")),
            )
        else:
            p.add("agent", "agent", str(kind), text_of(entry), label=str(cursor))
        cursor += 1
    _gold_label(p, _norm_step(gt.get("step")), "ground_truth.step")
    p.accepted = [i for i in (p.find(x) for x in _accepted_labels(gt)) if i is not None]
    return p


def _alfagent(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(
        convention=(
            "alfagent (whowhen_eval/render/alfagent.py): action entries numbered by step_number; ground_truth.step is"
            " step_number"
        )
    )
    for entry in _entries(release.get("trajectory")):
        kind = entry.get("kind")
        if kind == "user":
            _user(p, entry, task_images)
            continue
        number = entry.get("step_number")
        if kind in ("final_answer", None) or not isinstance(number, int):
            continue
        body = [
            f"[{tag}]\n{text_of(entry.get(key)).strip()}"
            for tag, key in (("think", "reasoning"), ("action", "action"), ("observation", "observation"))
            if entry.get(key)
        ]
        p.add("agent", "agent", str(kind), "\n".join(body), label=str(number))
    _gold_label(p, _norm_step(gt.get("step")), "ground_truth.step")
    p.accepted = [i for i in (p.find(x) for x in _accepted_labels(gt)) if i is not None]
    return p


def _framed(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef], *, dvd: bool) -> Parsed:
    """eva and dvd: [0] system and [1] user are framing; ground_truth.step is a native index."""
    name = "dvd" if dvd else "eva"
    p = Parsed(
        convention=(
            "dvd (whowhen_eval/render/dvd.py, score.py): [0] system, [1] user; entry i is 'Step i-2'; ground_truth.step"
            " is the native index"
            if dvd
            else (
                "eva (whowhen_eval/render/eva.py, score.py): [0] system, [1] user; assistant turn k is 'Step k' with"
                " its tool turn folded in; ground_truth.step is the native index of the assistant turn, (step - 2) // 2"
                " its rendered coordinate"
            )
        )
    )
    native: dict[int, int] = {}
    turn = 0
    for i, entry in enumerate(_entries(release.get("trajectory"))):
        kind = entry.get("kind")
        if i == 0 and kind == "system":
            native[i] = p.add("system", "system", "system", text_of(entry.get("content")))
        elif i == 1 and kind == "user":
            native[i] = p.add(
                "user",
                "user",
                "user",
                text_of(entry.get("content")),
                images=images_of(entry.get("images")) or task_images,
            )
        elif kind == "assistant":
            agent = "orchestrator" if dvd else "agent"
            native[i] = p.add(
                "agent",
                agent,
                "assistant",
                text_of(entry.get("content")),
                label=str(i - 2 if dvd else turn),
                calls=_calls(entry),
            )
            turn += 1
        elif kind == "tool" and not dvd and isinstance(entry.get("parts"), list):
            # failforge's eva export: one tool turn holding what followed an assistant turn (tool results,
            # user messages), kept apart in ``parts``; an empty list is the placeholder for "nothing"
            first: int | None = None
            for part in entry["parts"]:
                if not isinstance(part, dict):
                    continue
                if part.get("kind") == "user":
                    at = p.add("user", "user", "user", text_of(part.get("content")))
                else:
                    at = p.add("tool", str(part.get("name") or "tool"), "tool", text_of(part.get("content")))
                    p.steps[-1].tool_call_id = part.get("tool_call_id")
                first = at if first is None else first
            if first is not None:
                native[i] = first
        elif kind == "tool":
            tool = str(entry.get("tool_name") or "tool")
            frames = images_of(entry.get("frames")) + images_of(entry.get("images"))
            if dvd and tool == "frame_inspect_tool":
                native[i] = p.add(
                    "agent",
                    "frame_inspect_agent",
                    "tool",
                    text_of(entry.get("content")),
                    label=str(i - 2),
                    images=frames,
                )
            else:
                native[i] = p.add(
                    "tool",
                    tool,
                    "tool",
                    text_of(entry.get("content")),
                    label=str(i - 2) if dvd else None,
                    images=frames,
                )
                p.steps[-1].tool_call_id = entry.get("tool_call_id")
        elif kind == "final_answer":
            continue
        else:
            native[i] = p.add(
                "agent", str(kind), str(kind), text_of(entry.get("content")), label=str(i - 2 if dvd else turn)
            )
            turn += 0 if dvd else 1
    raw = int_step(gt.get("step"), "ground_truth.step")
    if raw not in native:
        raise Skip(
            "ground_truth.step",
            f"{raw} is not an index of the {name} trajectory (0..{len(release.get('trajectory') or []) - 1})",
        )
    p.gold, p.label = native[raw], str(raw)
    step = p.steps[p.gold]
    if not dvd:
        if step.role != "assistant":
            raise Skip("ground_truth.step", f"trajectory[{raw}] is a {step.role!r} entry; eva labels assistant turns")
        if step.coordinate and step.coordinate.label != str((raw - 2) // 2):
            p.warnings.append(
                f"eva scorer's (step - 2) // 2 = {(raw - 2) // 2} but trajectory[{raw}] is assistant turn"
                f" {step.coordinate.label}"
            )
    return p


def _tool_actions(entry: dict[str, Any]) -> list[ToolCallRecord]:
    """``tool_actions`` (``{type, name, args}``, and ``id`` in failforge's export) as tool calls."""
    out = []
    for action in entry.get("tool_actions") or []:
        # ``type: observation`` is failforge's export placing a step the renderer would not show (an observation
        # answering no call, a user message) where it does; the step itself is its own entry
        if isinstance(action, dict) and action.get("type") != "observation":
            args = action.get("args", action.get("arguments", ""))
            out.append(
                ToolCallRecord(
                    id=str(action["id"]) if action.get("id") is not None else None,
                    name=str(action.get("name") or action.get("type") or "?"),
                    arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                )
            )
    return out


def _magentic(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(
        convention=(
            "magentic-one (whowhen_eval/render/magentic.py): kind 'agent' entries (tool_actions as tool calls) and kind"
            " 'tool' turns; coordinate 'R.P' from round and position; ground_truth.step is that 'R.P' string"
        )
    )
    for entry in _entries(release.get("trajectory")):
        kind = entry.get("kind")
        if kind == "user":
            _user(p, entry, task_images)
            continue
        if kind not in ("agent", "tool"):
            continue
        if entry.get("round") is None or entry.get("position") is None:
            p.warnings.append(
                f"an {kind} entry of {entry.get('agent') or entry.get('tool_name')!r} has no round/position; the reader"
                " skips it"
            )
            continue
        rnd, pos = int(entry["round"]), int(entry["position"])
        if kind == "tool":
            p.add(
                "tool",
                str(entry.get("tool_name") or "tool"),
                "tool",
                text_of(entry.get("content")),
                label=f"{rnd}.{pos}",
                rnd=rnd,
                pos=pos,
            )
            p.steps[-1].tool_call_id = entry.get("tool_call_id")
        else:
            p.add(
                "agent",
                str(entry.get("agent") or "unknown"),
                str(entry.get("role") or ""),
                text_of(entry.get("output")),
                label=f"{rnd}.{pos}",
                rnd=rnd,
                pos=pos,
                calls=_tool_actions(entry),
            )
        p.steps[-1].recipient = str(entry["recipient"]) if entry.get("recipient") else None
        p.steps[-1].sender = p.steps[-1].agent if entry.get("recipient") else None
    label = _norm_step(gt.get("step_coord")) or _norm_step(gt.get("step"))
    if not label and gt.get("round") is not None:
        label = f"{gt['round']}.{gt.get('position', 0)}"
    _gold_label(p, label, "ground_truth.step")
    p.accepted = [i for i in (p.find(x) for x in _accepted_labels(gt)) if i is not None]
    return p


_MACNET_COORD = {"author": (0, 0), "critic": (1, 0), "rewriter": (1, 1), "sink": (2, 0)}


def _macnet(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(
        convention=(
            "macnet (whowhen_eval/render/macnet.py): coordinate from role (author 0.0, critic 1.0, rewriter 1.1, sink"
            " 2.0); ground_truth.round/position"
        )
    )
    for entry in _entries(release.get("trajectory")):
        if entry.get("kind") == "user":
            _user(p, entry, task_images)
            continue
        if entry.get("kind") == "final_answer" or not entry.get("role"):
            continue
        role = str(entry["role"])
        rnd, pos = _MACNET_COORD.get(role, (1, sum(1 for s in p.steps if s.coordinate and s.coordinate.round == 1)))
        p.add(
            "agent",
            str(entry.get("agent_id") or "unknown"),
            role,
            text_of(entry.get("output")),
            label=f"{rnd}.{pos}",
            rnd=rnd,
            pos=pos,
        )
    label = _norm_step(gt.get("step_coord")) or _norm_step(gt.get("step"))
    if not label:
        if gt.get("round") is None:
            raise Skip("ground_truth.round", "missing")
        label = f"{gt['round']}.{gt['position']}" if gt.get("position") is not None else str(gt["round"])
    _gold_label(p, label, "ground_truth")
    p.accepted = [i for i in (p.find(x) for x in _accepted_labels(gt)) if i is not None]
    return p


def _mathchat(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(
        convention=(
            "mathchat (whowhen_eval/render/mathchat.py, score.py): entries with round/position; (0,0,user_proxy) is"
            " framing; 'Step 2R+P'; ground_truth.round/position map to 2*round+position"
        )
    )
    for entry in _entries(release.get("trajectory")):
        if entry.get("kind") == "user":
            _user(p, entry, task_images)
            continue
        if entry.get("kind") == "final_answer" or entry.get("round") is None or entry.get("position") is None:
            continue
        agent = str(entry.get("agent_id") or "unknown")
        rnd, pos = int(entry["round"]), int(entry["position"])
        if rnd == 0 and pos == 0 and agent == "user_proxy":
            p.add("user", agent, "user_proxy", text_of(entry.get("output")), rnd=rnd, pos=pos)
            continue
        p.add("agent", agent, agent, text_of(entry.get("output")), label=str(2 * rnd + pos), rnd=rnd, pos=pos)
    if gt.get("round") is None or gt.get("position") is None:
        raise Skip("ground_truth.round", "mathchat ground truth needs round and position")
    _gold_label(p, str(2 * int(gt["round"]) + int(gt["position"])), "ground_truth")
    return p


def _metagpt(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef]) -> Parsed:
    p = Parsed(convention="metagpt (whowhen_eval/render/metagpt.py): entries with stage; 'Step S'; ground_truth.stage")
    for entry in _entries(release.get("trajectory")):
        if entry.get("kind") == "user":
            _user(p, entry, task_images)
            continue
        if entry.get("kind") == "final_answer" or entry.get("stage") is None:
            continue
        p.add(
            "agent",
            str(entry.get("agent_id") or "unknown"),
            str(entry.get("role") or ""),
            text_of(entry.get("output")),
            label=str(int(entry["stage"])),
        )
    if gt.get("stage") is None:
        raise Skip("ground_truth.stage", "missing")
    _gold_label(p, str(int(gt["stage"])), "ground_truth.stage")
    return p


def _rounds(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef], framework: str) -> Parsed:
    """debate, dylan, pixelcraft: 'kind: round' entries holding turns."""
    p = Parsed(
        convention=f"{framework} (whowhen_eval/render/{framework}.py, score.py): kind 'round' entries; 'R.P' with P "
        + ("the turn's index" if framework == "debate" else "the turn's position")
        + (
            "; ground_truth.round only, any turn of that round counts"
            if framework != "pixelcraft"
            else "; ground_truth.round/position"
        )
    )
    for entry in _entries(release.get("trajectory")):
        if entry.get("kind") == "user":
            _user(p, entry, task_images)
            continue
        if entry.get("kind") != "round":
            continue
        rnd = int(entry.get("round", 0))
        for i, turn in enumerate(entry.get("turns") or []):
            if not isinstance(turn, dict):
                raise Skip(f"trajectory.round[{rnd}].turns[{i}]", "expected an object")
            pos = i if framework == "debate" else int(turn.get("position", 0))
            p.add(
                "agent",
                str(turn.get("agent_id") or "unknown"),
                str(turn.get("role") or ""),
                text_of(turn.get("output")),
                label=f"{rnd}.{pos}",
                rnd=rnd,
                pos=pos,
                images=images_of(turn.get("images")),
            )
    if gt.get("round") is None:
        raise Skip("ground_truth.round", "missing")
    rnd = int(gt["round"])
    if framework == "pixelcraft":
        _gold_label(p, f"{rnd}.{gt.get('position', 0)}", "ground_truth")
        return p
    in_round = [s.index for s in p.steps if s.coordinate and s.coordinate.round == rnd]
    if not in_round:
        raise Skip("ground_truth.round", f"round {rnd} has no turns")
    named = {a.lower() for a in _gold_agents(gt)}
    by_gold = [i for i in in_round if p.steps[i].agent.lower() in named]
    p.gold, p.label = (by_gold or in_round)[0], f"round {rnd}"
    p.accepted = [i for i in in_round if i != p.gold]
    return p


def _gui(release: dict[str, Any], gt: dict[str, Any], task_images: list[ImageRef], framework: str) -> Parsed:
    """The image_gui split (coact, openai_cua, agentoccam, gemini): one shared schema, one renderer."""
    p = Parsed(
        convention=(
            f"{framework} (whowhen_eval/render/gui.py, score.py): kind 'action' entries numbered "
            "by step_number (1-indexed); ground_truth.step is step_number; coact names the agent, "
            "the single-agent frameworks label every step with one agent"
        )
    )
    label = GUI_SINGLE_LABELS.get(framework)
    for entry in _entries(release.get("trajectory")):
        kind = entry.get("kind")
        if kind == "user":
            _user(p, entry, task_images)
            continue
        number = entry.get("step_number")
        if kind != "action" or not isinstance(number, int):
            continue
        # failforge's export keeps its own agent name in agent_id beside the label the renderer shows
        agent = str(entry.get("agent_id") or entry.get("agent") or label or "agent")
        calls = _calls(entry)
        body = text_of(entry.get("reasoning")).strip()
        if not calls and entry.get("action"):
            body = "\n".join(x for x in (body, f"[action]\n{text_of(entry.get('action')).strip()}") if x)
        if entry.get("error"):
            body = "\n".join(x for x in (body, f"[error]\n{text_of(entry.get('error')).strip()}") if x)
        p.add(
            "agent",
            agent,
            "action",
            body,
            label=str(number),
            calls=calls,
            images=images_of(entry.get("observation_images")),
        )
        followed = entry.get("observations")
        if isinstance(followed, list):  # failforge's export: what followed the step, one entry each
            for part in followed:
                if isinstance(part, dict) and part.get("kind") == "user":
                    p.add("user", "user", "user", text_of(part.get("content")))
                elif isinstance(part, dict):
                    p.add("tool", str(part.get("name") or "tool"), "tool", text_of(part.get("content")))
                    p.steps[-1].tool_call_id = part.get("tool_call_id")
        elif entry.get("observation"):
            p.add("tool", "environment", "observation", text_of(entry.get("observation")))
    _gold_label(p, _norm_step(gt.get("step")), "ground_truth.step")
    p.accepted = [i for i in (p.find(x) for x in _accepted_labels(gt)) if i is not None]
    return p


def _gold_agents(gt: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for value in (gt.get("agent"), gt.get("agents")):
        if isinstance(value, str) and value:
            out.append(value)
        elif isinstance(value, list):
            out.extend(str(v) for v in value if v)
    return out


#: framework (as the release writes it) -> how its trajectory is read; the harness's get_renderer() list.
_CONVENTIONS: dict[str, Callable[[dict[str, Any], dict[str, Any], list[ImageRef]], Parsed]] = {
    "smolagents": _smolagents,
    "alfagent": _alfagent,
    "magentic-one": _magentic,
    "magentic": _magentic,
    "macnet": _macnet,
    "mathchat": _mathchat,
    "metagpt": _metagpt,
    "eva": lambda r, g, t: _framed(r, g, t, dvd=False),
    "dvd": lambda r, g, t: _framed(r, g, t, dvd=True),
    "debate": lambda r, g, t: _rounds(r, g, t, "debate"),
    "dylan": lambda r, g, t: _rounds(r, g, t, "dylan"),
    "pixelcraft": lambda r, g, t: _rounds(r, g, t, "pixelcraft"),
    **{fw: partial(_gui, framework=fw) for fw in ("coact", "openai_cua", "agentoccam", "gemini")},
}
KNOWN_FRAMEWORKS = tuple(sorted(_CONVENTIONS))


def _convention(framework: str) -> Callable[[dict[str, Any], dict[str, Any], list[ImageRef]], Parsed]:
    reader = _CONVENTIONS.get(framework.strip().lower())
    if reader is None:
        raise Skip("framework", f"no step convention for framework {framework!r}; known: {', '.join(KNOWN_FRAMEWORKS)}")
    return reader


# --- rows ----------------------------------------------------------------------------------------------


def decode_field(row: dict[str, Any], key: str, default: Any) -> Any:
    """A JSON-encoded row field (the release writes strings); already-decoded values are accepted, as the harness
    does."""
    value = row.get(key)
    if value is None or value == "":
        return default
    if isinstance(value, (dict, list)):
        return value
    if not isinstance(value, str):
        raise Skip(key, f"expected a JSON-encoded string, found {type(value).__name__}")
    try:
        return parse_json(value)
    except SeedFormatError as exc:
        raise Skip(key, f"not valid JSON inside the string: {exc.problem.removeprefix('not valid JSON: ')}") from None


def release_of(row: dict[str, Any], split: str) -> dict[str, Any]:
    """The harness's ``release_from_row``: decode the four fields, splice extras into the top level."""
    for key in ("id", "framework"):
        if not isinstance(row.get(key), str) or not row.get(key):
            raise Skip(
                key, "missing" if row.get(key) is None else f"expected a non-empty string, found {row.get(key)!r}"
            )
    release: dict[str, Any] = {
        "id": row["id"],
        "framework": row["framework"],
        "benchmark": row.get("benchmark"),
        "modality": split,
        "task": decode_field(row, "task", {}),
        "trajectory": decode_field(row, "trajectory", []),
        "ground_truth": decode_field(row, "ground_truth", {}),
    }
    extras = decode_field(row, "extras", {})
    if isinstance(extras, dict):
        release.update({k: v for k, v in extras.items() if k not in release})
    if not isinstance(release["task"], dict):
        raise Skip("task", "expected an object")
    if not isinstance(release["ground_truth"], dict):
        raise Skip("ground_truth", "expected an object")
    return release


def _question(task: dict[str, Any]) -> str:
    query = text_of(task.get("query"))
    options = task.get("options")
    if isinstance(options, dict) and options:
        query += "\n" + "\n".join(f"({k}) {v}" for k, v in options.items())
    return query


def _mode(
    gt: dict[str, Any], release: dict[str, Any], warnings: list[str], taxonomy: set[str] | None
) -> tuple[str | None, str | None]:
    source_mode = gt.get("mode")
    if source_mode is not None and not isinstance(source_mode, str):
        raise Skip("ground_truth.mode", f"expected a code string, found {source_mode!r}")
    if source_mode and taxonomy is not None and source_mode not in taxonomy:
        warnings.append(f"mode {source_mode!r} is not in taxonomy.yaml")
    exact = canonical_code(release.get("failforge_mode"))
    if exact and source_mode and source_mode in (exact, to_release(exact)):
        return exact, source_mode
    if taxonomy is not None and FAILFORGE_ONLY & taxonomy:  # a taxonomy.yaml in failforge's 18 codes
        return canonical_code(source_mode), source_mode
    mode = from_release(source_mode)
    if source_mode and mode is None:
        warnings.append(f"release mode {source_mode!r} has no failforge counterpart")
    return mode, source_mode


def read_row(row: Any, split: str, path: str, line: int, taxonomy: set[str] | None) -> LabelledFailure:
    if not isinstance(row, dict):
        raise Skip("<row>", f"expected a JSON object, found {type(row).__name__}")
    release = release_of(row, split)
    gt = release["ground_truth"]
    task = release["task"]
    task_images = images_of(task.get("images"))
    framework = release["framework"].strip().lower()
    parsed = _convention(framework)(release, gt, task_images)
    if parsed.gold is None:
        raise Skip("ground_truth", "names no step")
    single = framework in SINGLE_AGENT_FRAMEWORKS
    named = _gold_agents(gt)
    agent = named[0] if named else (parsed.steps[parsed.gold].agent if single else None)
    if agent is None:
        raise Skip("ground_truth.agent", "missing for a multi-agent framework")
    warnings = list(parsed.warnings)
    mode, source_mode = _mode(gt, release, warnings, taxonomy)
    accepted_modes = [
        m
        for m in (from_release(a.get("mode")) for a in gt.get("accepted_predictions") or [] if isinstance(a, dict))
        if m
    ]
    accepted_agents = named[1:] + [
        str(a["agent_name"])
        for a in gt.get("accepted_predictions") or []
        if isinstance(a, dict) and a.get("agent_name")
    ]
    agents = release.get("agents")
    roster = (
        [str(a.get("id")) for a in agents if isinstance(a, dict) and a.get("id")] if isinstance(agents, list) else []
    )
    roles = (
        {str(a["id"]): str(a["role"]) for a in agents if isinstance(a, dict) and a.get("id") and a.get("role")}
        if isinstance(agents, list)
        else {}
    )
    for s in parsed.steps:
        if s.kind == "agent" and s.agent not in roster:
            roster.append(s.agent)
    if agent not in roster:
        roster.append(agent)
    extra = {
        k: v
        for k, v in release.items()
        if k not in ("id", "framework", "benchmark", "modality", "task", "trajectory", "ground_truth", "agents")
    }
    extra["ground_truth"] = gt
    extra["split"] = split
    return LabelledFailure(
        id=f"whowhen_pro/{release['id']}",
        source=f"whowhen_pro/{framework}",
        framework=framework,
        benchmark=str(release.get("benchmark")) if release.get("benchmark") is not None else None,
        topology="single" if single else "multi",
        modality="image" if split == "image_gui" else split if split in SPLITS else "text",  # type: ignore[arg-type]
        agents=roster,
        roles=roles,
        task=TaskInfo(question=_question(task), gold_answer=text_of(task.get("answer")) or None),
        steps=parsed.steps,
        gold=Gold(
            agent=agent,
            step=parsed.gold,
            mode=mode,
            source_mode=source_mode,
            step_label=parsed.label,
            accepted_steps=parsed.accepted,
            accepted_agents=accepted_agents,
            accepted_modes=accepted_modes,
        ),
        origin=Origin(
            format="whowhen-pro",
            path=path,
            line=line,
            row_id=release["id"],
            step_convention=parsed.convention,
            warnings=warnings,
        ),
        extra=extra,
    )


def load_taxonomy_codes(root: Path) -> set[str] | None:
    path = root / "taxonomy.yaml"
    if not path.is_file():
        return None
    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}  # a dataset's file: aliases bounded
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: declares no error modes (expected code: {{name, description}} entries)")
    return {str(code) for code, body in data.items() if isinstance(body, dict)}


def split_files(path: Path) -> tuple[Path, list[tuple[Path, str]]]:
    """(dataset root, [(split file, split name)]) for a dataset root, its data/ folder, or one split file."""
    if path.is_file():
        root = path.parent.parent if path.parent.name == "data" else path.parent
        return root, [(path, path.stem if path.stem in SPLITS else "text")]
    data = path / "data" if (path / "data").is_dir() else path
    files = [(data / f"{s}.jsonl", s) for s in SPLITS if (data / f"{s}.jsonl").is_file()]
    if not files:
        raise ConfigError(
            f"{path}: no data/text.jsonl, data/image.jsonl, data/image_gui.jsonl or data/video.jsonl "
            "(the Who&When Pro release layout)"
        )
    return (path if data != path else path.parent), files


@importers.register(
    "whowhen-pro", description="Who&When Pro release rows: data/{text,image,video}.jsonl + taxonomy.yaml"
)
def import_whowhen_pro(path: Path) -> Iterator[LabelledFailure | RecordProblem]:
    root, files = split_files(Path(path))
    taxonomy = load_taxonomy_codes(root)
    for file, split in files:
        for item in read_jsonl(file):
            if isinstance(item, SeedFormatError):
                yield RecordProblem.of(item)
                continue
            number, row = item
            try:
                record = read_row(row, split, str(file), number, taxonomy)
                missing = next(
                    (
                        i.path
                        for st in record.steps
                        for i in st.images
                        if i.path and i.path.startswith("images/") and not (root / i.path).is_file()
                    ),
                    None,
                )
                if missing is not None:  # the release layout's images/ folder lacks a screenshot the row names
                    raise Skip("images", f"record {record.id}: {missing} is missing from {root}")
                yield record
            except Skip as skip:
                yield skip.at(str(file), number)
            except (ValueError, TypeError, RecursionError) as exc:
                yield RecordProblem(
                    path=str(file),
                    line=number,
                    field="<row>",
                    problem=" ".join(str(exc).split())[:300] or type(exc).__name__,
                )
