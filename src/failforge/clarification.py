"""Turns where the right move is to ask the user or to say it cannot be done ("missed clarification").

Some benchmarks mark a user turn that cannot be carried out as asked: BFCL's ``miss_param`` turns leave
out a detail the call needs (the user gives it one turn later), its ``miss_func`` turns need a function
that is only offered one turn later. The correct control decision there is Ask (or Refuse), and a
gold record that makes the agent act instead is a failure known by construction. The environment says
which turns are such in the task's metadata (:data:`METADATA_KEY`, turn number -> what is withheld); this
module reads it back for the taxonomy's applicability, the rule guide and the conformance rule, so none
of them needs to know the benchmark.

Turns are counted as the harness records them: step 0 is turn 0, every later ``task`` step opens the
next turn (``failforge.multi_turn``).
"""

from __future__ import annotations

import re
from typing import Any, Literal, cast

from failforge.trajectory import Step, ToolCall, Trajectory

Withheld = Literal["parameter", "function"]
METADATA_KEY = "clarification_turns"
"""Task metadata: ``{"3": "parameter"}`` — turn 3 lacks a detail; ``"function"``: it needs a held-out function."""
HELD_OUT_KEY = "missed_function"
"""Task metadata: ``{"4": ["sort"]}`` — the functions offered from turn 4 on (BFCL's own field)."""


def turn_of(seed: Trajectory, t: int) -> int:
    """The user turn step ``t`` belongs to (the number of ``task`` steps up to it, less one)."""
    return sum(1 for s in seed.steps[: t + 1] if s.kind == "task") - 1


def withheld_turns(seed: Trajectory) -> dict[int, Withheld]:
    raw = seed.task.metadata.get(METADATA_KEY) or {}
    return {int(k): cast(Withheld, v) for k, v in dict(raw).items() if v in ("parameter", "function")}


def withheld_at(seed: Trajectory, t: int) -> Withheld | None:
    """What step ``t``'s turn withholds, when ``t`` is an agent step of such a turn; else None."""
    if not 0 <= t < len(seed.steps) or seed.steps[t].kind != "agent":
        return None
    return withheld_turns(seed).get(turn_of(seed, t))


def user_turns(seed: Trajectory, t: int) -> list[str]:
    """What the user has said up to step ``t`` (the task and every later user turn), in order."""
    return [s.content or "" for s in seed.steps[: t + 1] if s.kind == "task"]


def next_turn(seed: Trajectory, t: int) -> tuple[Step | None, list[ToolCall]]:
    """The user step that opens the turn after ``t``'s and the tool calls the seed made in that turn."""
    opener: Step | None = None
    calls: list[ToolCall] = []
    for step in seed.steps[t + 1 :]:
        if step.kind == "task":
            if opener is not None:
                break
            opener = step
        elif opener is not None and step.kind == "agent":
            calls.extend(step.tool_calls)
    return opener, calls


def held_out(seed: Trajectory, t: int) -> list[str]:
    """The functions step ``t``'s turn lacks: those offered from the next turn on."""
    raw: dict[str, Any] = dict(seed.task.metadata.get(HELD_OUT_KEY) or {})
    return [str(n) for n in raw.get(str(turn_of(seed, t) + 1)) or []]


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _scalars(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _scalars(v)]
    return [value]


def said(value: Any, texts: list[str]) -> bool:
    """Whether the user gave ``value``: a bool never counts as given or not (there is no word for it);
    a number or a string counts when it appears in one of ``texts`` as a whole word (case-insensitive, 20 and
    20.0 alike; 20 is not said by 2023)."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    needle = str(value).casefold().strip()
    if not needle:
        return True
    pattern = re.compile(rf"(?<![\w.]){re.escape(needle)}(?![\w]|\.\d)")
    return any(pattern.search(text.casefold()) for text in texts)


def unsaid_arguments(arguments: dict[str, Any] | None, texts: list[str]) -> list[str]:
    """The argument names whose value (or a scalar inside it) the user never gave in ``texts``."""
    return [k for k, v in (arguments or {}).items() if any(not said(x, texts) for x in _scalars(v))]


def _valued(call: ToolCall) -> dict[str, Any]:
    return {
        k: v
        for k, v in (call.parsed_arguments() or {}).items()
        if isinstance(v, (str, int, float)) and not isinstance(v, bool)
    }


def withheld_details(seed: Trajectory, t: int) -> list[tuple[ToolCall, str]]:
    """The (call, argument) pairs that carry the detail turn ``t`` withholds, best first: in the calls the seed
    makes once the user gives it (the next turn), a value only the next turn's words give; else (BFCL sometimes
    names it earlier too) one they repeat; else one the user points at without saying it ("the first file
    there"), latest call first. The rule guide fills one in with a guess; the R.1 check counts only these."""
    opener, later = next_turn(seed, t)
    if opener is None:
        return []
    given, clarified = user_turns(seed, t), user_turns(seed, opener.index)
    found = [
        (call, key)
        for call in later
        for key in unsaid_arguments(_valued(call), given)
        if key not in unsaid_arguments(_valued(call), clarified)
    ]
    found += [
        (call, key)
        for call in later
        for key in _valued(call)
        if key not in unsaid_arguments(_valued(call), [opener.content or ""])
    ]
    found += [(call, key) for call in reversed(later) for key in unsaid_arguments(_valued(call), clarified)]
    unique: dict[tuple[str, str], tuple[ToolCall, str]] = {}
    for call, key in found:
        unique.setdefault((call.id or call.name, key), (call, key))
    return list(unique.values())
