"""The rule-based stage-1 guide: steering notes for the structural modes, written from the seed itself.

A structural mistake is concrete: the seed's tool with one wrong value, a tool that does not exist,
a call written as text, an answer given now, an earlier call repeated, a number off by a little. A
rule can name all of it exactly — the tool, the argument, the value — from the seed's own step a_t
and what the agent saw before it, with no guide model. That matters most with a small agent model:
a weak guide writes vague or off-topic notes (and copies its own prompt), while a note that names
``send_money`` with ``recipient = "CH93..."`` is something even a 135M model can act on.

Stage 2 is unchanged: the agent's own model receives its own step-t request plus the note and
produces ã_t itself, so the mistake stays on-policy; the rule only decides what to ask for.
Wrong values are chosen to be plausible: of the right type and, where possible, a value that
appears elsewhere in the agent's context (another IBAN from the transaction list, another date,
another e-mail address), else a near miss (off by one, a neighbouring day, a dropped word).
Every choice is drawn from a generator seeded by (campaign seed, seed id, t, mode, sample), and the
derivation is recorded as the guide request, so a note can be traced and reproduced.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import re
from typing import Any

from failforge.clarification import held_out, next_turn, said, user_turns, withheld_at, withheld_details
from failforge.injection._code_rules import CODE_RULE_MODES, code_rule
from failforge.injection._injector import GuideResult
from failforge.injection._perception import PERCEPTION_RULES
from failforge.injection._user_rules import USER_RULES
from failforge.judgement import HUMAN_HANDOFF, is_code_step, is_user_step
from failforge.judgement.text import numbers, offered_tools, step_text
from failforge.plugins import environments
from failforge.taxonomy import ErrorMode
from failforge.trajectory import Step, ToolCall, Trajectory

RULES_GUIDE = "failforge-rules"
RULES_VERSION = "1"
RULE_MODES: tuple[str, ...] = ("A.2", "A.3", "A.4", "A.5", "A.6", "R.3", "P.1", "P.2")  # P.*: injection/_perception.py
STEP_RULE_MODES: tuple[str, ...] = ("R.1",)
"""Semantic modes the rules write at some steps only, the guide model everywhere else (under ``auto``):
R.1 at a turn that withholds a detail (a missed clarification: the agent fills in a value the user never
gave, :func:`_r1`) and R.1 at a simulated user's message (a value it states wrongly, injection/_user_rules.py)."""
PINNED_MODES: tuple[str, ...] = ("A.2", "A.6")
"""Modes whose mistake is a call to a tool the request offers (a wrong argument, a repeated call): their
note's tool can be pinned at stage 2. Not A.3 (the tool is not offered), A.4 or A.5 (no proper call),
nor R.3 (a pinned call with arbitrary arguments would change numbers for no numerical reason)."""

_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("iban", re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{10,30}\b")),
    ("datetime", re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}\b")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("time", re.compile(r"\b\d{1,2}:\d{2}\b")),
    ("url", re.compile(r"\b(?:https?://)?(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?:/[^\s'\",]*)?", re.I)),
)
_NAME = re.compile(r"\b[A-Z][a-zA-Z'&-]+(?: [A-Z][a-zA-Z'&-]+){0,3}\b")
_VERB_SWAPS = (
    ("get_", "fetch_"),
    ("search_", "find_"),
    ("read_", "open_"),
    ("list_", "get_all_"),
    ("send_", "transfer_"),
    ("create_", "add_"),
    ("update_", "edit_"),
    ("delete_", "remove_"),
    ("check_", "verify_"),
    ("reserve_", "book_"),
)


def _shape(value: str) -> str | None:
    for name, pattern in _SHAPES:
        if pattern.fullmatch(value.strip()):
            return name
    return None


def _context(seed: Trajectory, t: int) -> str:
    """What the agent saw before step t, minus tool schemas (values come from the task and observations)."""
    return "\n".join([seed.task.instruction] + [step_text(s) for s in seed.steps[1:t]])


def _pick(rng: random.Random, options: list[Any]) -> Any:
    return options[rng.randrange(len(options))]


def _near_number(value: float, rng: random.Random, *, integer: bool) -> float:
    """A near miss a person makes: off by one, a slipped decimal, or two digits swapped."""
    options: list[float] = []
    if integer:
        options += [value + 1, value - 1] if value > 1 else [value + 1]
        digits = str(int(abs(value)))
        if len(digits) >= 2 and digits[-1] != digits[-2]:
            options.append(float(int(digits[:-2] + digits[-1] + digits[-2])) * (1 if value >= 0 else -1))
    else:
        options += [value + 1.0, round(value * 10, 2)]
        if value > 1:
            options.append(value - 1.0)
    options = [o for o in options if o != value]
    return _pick(rng, options) if options else value + 1


def _shift_date(text: str, rng: random.Random) -> str | None:
    match = re.search(r"\d{4}-\d{2}-\d{2}", text)
    if not match:
        return None
    try:
        day = _dt.date.fromisoformat(match.group(0))
    except ValueError:
        return None
    moved = day + _dt.timedelta(days=_pick(rng, [1, -1]))
    return text[: match.start()] + moved.isoformat() + text[match.end() :]


def wrong_value(value: Any, context: str, rng: random.Random) -> tuple[Any, str] | None:
    """A plausible wrong value of the same type, and where it came from; None if none can be made."""
    if isinstance(value, bool):
        return (not value), "the opposite flag"
    if isinstance(value, (int, float)):
        integer = isinstance(value, int) or float(value).is_integer()
        seen = sorted({float(n) for n in numbers(context)} - {float(value)})
        close = [n for n in seen if value and 0.2 <= abs(n / value) <= 5 and (n.is_integer() or not integer)]
        if close:
            chosen = _pick(rng, close)
            return (int(chosen) if isinstance(value, int) else chosen), "another number from the agent's context"
        near = _near_number(float(value), rng, integer=integer)
        return (int(near) if isinstance(value, int) else near), "a near miss of the original number"
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = wrong_value(item, context, rng)
            if found is not None:
                return value[:i] + [found[0]] + value[i + 1 :], found[1]
        return None
    if not isinstance(value, str) or not value.strip():
        return None
    shape = _shape(value)
    if shape is not None:
        pattern = dict(_SHAPES)[shape]
        others = sorted({m.group(0) for m in pattern.finditer(context)} - {value})
        if shape == "url":
            others = [o for o in others if "@" not in o and not re.search(rf"@{re.escape(o)}", context)]
        if others:
            return _pick(rng, others), f"another {shape} from the agent's context"
        if shape in ("date", "datetime"):
            shifted = _shift_date(value, rng)
            if shifted:
                return shifted, "the neighbouring day"
    names = sorted({m.group(0) for m in _NAME.finditer(context)} - {value})
    same_size = [
        n for n in names if abs(len(n.split()) - len(value.split())) <= 1 and n.lower() != value.lower() and len(n) > 2
    ]
    if shape is None and value[:1].isupper() and same_size:
        return _pick(rng, same_size), "another name from the agent's context"
    parts = value.split()
    if len(parts) > 1 and shape is None:
        return " ".join(parts[:-1]), "the value with its last word dropped"
    swaps = [
        i
        for i in range(1, len(value) - 1)
        if value[i].isalpha() and value[i + 1].isalpha() and value[i] != value[i + 1]
    ]
    if swaps:
        i = _pick(rng, swaps)
        return value[:i] + value[i + 1] + value[i] + value[i + 2 :], "the value with two letters swapped"
    return None


def show(value: Any) -> str:
    """A value as a note writes it: strings in single quotes (a note is quoted inside JSON requests and
    records, where double quotes would be escaped), lists and numbers as written in code."""
    if isinstance(value, str):
        return f"'{value}'" if "'" not in value else json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return json.dumps(value)


def _arguments_text(args: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {show(v)}" for k, v in args.items())


def _first_call_with_args(step: Step) -> tuple[ToolCall, dict[str, Any]] | None:
    for call in step.tool_calls:
        args = call.parsed_arguments()
        if args:
            return call, args
    return None


_PRIORITY = ("iban", "email", "url", "datetime", "date", "time")


def _argument_order(args: dict[str, Any], rng: random.Random) -> list[str]:
    """Identifiers first (a wrong recipient or date is the classic parameter slip), then the rest."""
    keys = list(args)
    rng.shuffle(keys)

    def rank(key: str) -> int:
        value = args[key]
        shape = _shape(value) if isinstance(value, str) else None
        if shape in _PRIORITY:
            return _PRIORITY.index(shape)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return len(_PRIORITY)
        return len(_PRIORITY) + 1

    return sorted(keys, key=rank)


def _a2(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    own = (
        environments.get(seed.environment.name)().wrong_argument(seed, t, rng)
        if seed.environment.name in environments
        else None
    )
    if isinstance(own, str):
        return own
    if own is not None:  # the environment's own A.2 (a text game: another thing of the same kind)
        return (
            (
                f"Call {own['tool']} now with {own['argument']} = {show(own['value'])}, keeping its other arguments as"
                " you would."
            ),
            own,
        )
    found = _first_call_with_args(seed.steps[t])
    if found is None:
        return "a_t makes no tool call with arguments, so there is no argument to get wrong"
    call, args = found
    context = _context(seed, t)
    for key in _argument_order(args, rng):
        wrong = wrong_value(args[key], context, rng)
        if wrong is not None and wrong[0] != args[key]:
            value, source = wrong
            note = f"Call {call.name} now with {key} = {show(value)}, keeping its other arguments as you would."
            return note, {"tool": call.name, "argument": key, "original": args[key], "value": value, "source": source}
    return f"no argument of {call.name} has a plausible wrong value"


def _a3(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    offered = offered_tools(seed, t)
    calls = seed.steps[t].tool_calls
    if not calls and offered and withheld_at(seed, t) == "function":
        return _a3_held_out(seed, t, offered)
    if not calls or not offered:
        return "a_t calls no tool (or none are offered), so there is no tool to invent beside"
    call = calls[0]
    args = call.parsed_arguments() or {}
    names: list[str] = []
    for key in args:
        names.append(f"{call.name}_by_{key}")
    for old, new in _VERB_SWAPS:
        if call.name.startswith(old):
            names.append(new + call.name[len(old) :])
    if call.name.endswith("s") and not call.name.endswith("ss"):
        names.append(call.name[:-1])
    names = [n for n in dict.fromkeys(names) if n not in offered]
    if not names:
        return f"no plausible variant of {call.name} is free of the offered tools"
    invented = _pick(rng, names)
    note = f"Call the tool {invented} with {_arguments_text(args) or 'no arguments'}."
    return note, {"tool": call.name, "invented_tool": invented, "arguments": args}


def _a3_held_out(seed: Trajectory, t: int, offered: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | str:
    """A missed clarification at a turn whose function is held out: the agent calls that function (as the
    seed's next turn does once it is offered) instead of saying it cannot — a tool not offered at t."""
    names = [n for n in held_out(seed, t) if n not in offered]
    _, later = next_turn(seed, t)
    call = next((c for c in later if c.name in names), None)
    if call is None:
        return f"the held-out function(s) {names} are not called in the next turn, so there is no call to make early"
    args = call.parsed_arguments() or {}
    note = f"Call the tool {call.name} with {_arguments_text(args) or 'no arguments'}."
    return note, {"tool": call.name, "invented_tool": call.name, "held_out": True, "arguments": args}


_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")


_QUOTED = re.compile(r"[\"']([\w][\w.-]{1,40})[\"'](?!\s*:)")  # a quoted value, not a JSON key
_DEFAULT_NUMBERS = (10, 5, 1, 100, 50)
_DEFAULT_NAMES = ("default", "new", "main", "backup", "archive")


def fabricated_value(value: Any, seen: str, given: list[str], rng: random.Random) -> tuple[Any, str] | None:
    """A value the user never gave for a detail they left out, made without knowing the real one (the
    guess an agent makes): a name of the same kind the tools showed (same extension, else any quoted
    name in a tool observation), a round number for a number; never a value said in ``given``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        options = [n for n in _DEFAULT_NUMBERS if n != value and not said(n, given)]
        return (_pick(rng, options), "a round number the user never gave") if options else None
    if not isinstance(value, str) or len(value.split()) != 1:
        return None  # free text (a message, a comment) has no guess of the same kind
    names = sorted({m.group(1) for m in _QUOTED.finditer(seen)} - {value})
    names = [n for n in names if not said(n, given) and not n.replace(".", "").isdigit()]
    ext = _EXTENSION.search(value)
    if ext:
        same = [n for n in names if n.endswith(ext.group(0))]
        if same:
            return _pick(rng, same), f"another {ext.group(0)} name a tool showed"
        return f"untitled{ext.group(0)}", f"a default {ext.group(0)} name (no other one was shown)"
    plain = [n for n in names if not _EXTENSION.search(n)]
    if plain:
        return _pick(rng, plain), "another name a tool showed"
    generic = [n for n in _DEFAULT_NAMES if n != value.casefold() and not said(n, given)]
    return (_pick(rng, generic), "a generic name (no other one was shown)") if generic else None


def _r1(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    """A missed clarification at a turn that lacks a detail: the call the seed makes once the user gives it
    (next turn), made now with a value the user never gave for that detail."""
    if withheld_at(seed, t) != "parameter":
        return "R.1 is written by rule only at a turn that lacks a detail the user gives later (a missed clarification)"
    opener, _ = next_turn(seed, t)
    if opener is None:
        return "no later user turn gives the missing detail"
    given = user_turns(seed, t)
    shown = "\n".join(s.content or "" for s in seed.steps[1:t] if s.kind == "tool")
    candidates = withheld_details(seed, t)
    for call, key in candidates:
        args = call.parsed_arguments() or {}
        made = fabricated_value(args[key], shown, given, rng)
        if made is None:
            continue
        value, source = made
        new = {**args, key: value}
        note = (
            f"Call {call.name} now with {_arguments_text(new)}; take {key} = {show(value)} as meant instead of asking"
            " the user."
        )
        return note, {
            "tool": call.name,
            "argument": key,
            "original": args[key],
            "value": value,
            "source": source,
            "missing_detail_given_at": opener.index,
        }
    return "no call of the next turn passes a single value (a name or a number) that a guess can stand in for"


def _a4(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    calls = seed.steps[t].tool_calls
    if not calls:
        return "a_t makes no tool call, so there is no call to write in the wrong format"
    call = calls[0]
    args = call.parsed_arguments() or {}
    written = f"{call.name}({', '.join(f'{k}={show(v)}' for k, v in args.items())})"
    note = f"Do not use the tool-calling format this time: write {written} as plain text in your reply."
    return note, {"tool": call.name, "written_as_text": written}


def _a5(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    original = seed.steps[t]
    remaining = [c.name for s in seed.steps[t:] if s.kind == "agent" for c in s.tool_calls]
    if not original.tool_calls:
        # A message mid-conversation (its author speaks again later): ending the conversation here is early
        # when the run still had calls to make, by anyone (a customer who hangs up before the agent's write).
        speaks_again = any(s.kind == "agent" and s.agent == original.agent for s in seed.steps[t + 1 :])
        if not speaks_again:
            return "a_t is already the final answer, so answering now is not early"
        if not remaining:
            return "the run made no tool call from step t on, so ending the conversation here leaves nothing undone"
        note = (
            "End the conversation now with your closing message, as if everything needed were already done; "
            "do not ask for or wait for anything more."
        )
        return note, {"ends_conversation": True, "remaining_calls": remaining}
    tool = original.tool_calls[0].name
    handoffs = [name for name in offered_tools(seed, t) if HUMAN_HANDOFF.search(name)]
    if (
        handoffs and not HUMAN_HANDOFF.search(tool) and rng.random() < 0.5
    ):  # where a human can take over: a premature transfer
        note = (
            f"Transfer the user to a human agent now: call {handoffs[0]} with a one-line summary of the request, "
            f"instead of calling {tool} or doing anything more yourself."
        )
        return note, {"skipped_tool": tool, "transfers_with": handoffs[0], "remaining_calls": remaining}
    note = f"Give the user your final answer now from what you already know, without calling {tool} or any other tool."
    return note, {"skipped_tool": tool, "remaining_calls": remaining}


def _a6(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    now = {(c.name, json.dumps(c.parsed_arguments(), sort_keys=True)) for c in seed.steps[t].tool_calls}
    earlier = [
        (s.index, c)
        for s in reversed(seed.steps[1:t])
        if s.kind == "agent"
        for c in s.tool_calls
        if (c.name, json.dumps(c.parsed_arguments(), sort_keys=True)) not in now and c.parsed_arguments() is not None
    ]
    if not earlier:
        return "the agent made no earlier call (other than a_t's own) to repeat"
    index, call = earlier[0]
    args = call.parsed_arguments() or {}
    note = f"Call {call.name} with {_arguments_text(args) or 'no arguments'} once more to double-check it."
    return note, {"tool": call.name, "arguments": args, "repeats_step": index}


def _numbers_first(args: dict[str, Any], rng: random.Random) -> list[str]:
    """Plain numbers (an amount, a count) before numbers inside strings (a date)."""
    keys = _argument_order(args, rng)
    return sorted(keys, key=lambda k: 0 if isinstance(args[k], (int, float)) and not isinstance(args[k], bool) else 1)


def _r3(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    original = seed.steps[t]
    for call in original.tool_calls:
        args = call.parsed_arguments() or {}
        for key in _numbers_first(args, rng):
            value = args[key]
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                integer = isinstance(value, int) or float(value).is_integer()
                near = _near_number(float(value), rng, integer=integer)
                new: Any = int(near) if isinstance(value, int) else near
            elif isinstance(value, str) and numbers(value):
                new = _shift_date(value, rng) if re.search(r"\d{4}-\d{2}-\d{2}", value) else None
                if new is None:
                    n = numbers(value)[0]
                    near = _near_number(float(n), rng, integer=float(n).is_integer())
                    new = value.replace(n, str(int(near)) if float(near).is_integer() else str(near), 1)
            else:
                continue
            if new != value:
                note = f"Call {call.name} with {key} = {show(new)}."
                return note, {"tool": call.name, "argument": key, "original": value, "value": new}
    said = original.content or ""
    date = re.search(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2})?", said)
    if not original.tool_calls and date:
        moved = _shift_date(date.group(0), rng)
        if moved:
            return f"In your answer, state the date as {moved}.", {"answer_date": date.group(0), "value": moved}
    given = set(numbers(seed.task.instruction))
    found = sorted(numbers(said), key=lambda n: n in given)  # a figure the agent worked out, not one it was given
    if not original.tool_calls and found:
        n = found[0]
        near = _near_number(float(n), rng, integer=float(n).is_integer())
        shown = str(int(near)) if float(near).is_integer() else str(near)
        note = f"In your answer, state the figure as {shown}."
        return note, {"answer_number": n, "value": shown}
    return "a_t uses no number, so there is none to get slightly wrong"


def _r1_at(seed: Trajectory, t: int, rng: random.Random) -> tuple[str, dict[str, Any]] | str:
    """R.1 by rule: a missed clarification at a turn that withholds a detail, else a user's misstated value."""
    if withheld_at(seed, t) == "parameter":
        return _r1(seed, t, rng)
    if is_user_step(seed, t):
        return USER_RULES["R.1"](seed, t, rng)
    return (
        "R.1 is written by rule only at a turn that lacks a detail the user gives later (a missed clarification) or at"
        " a simulated user's message (a value it states wrongly)"
    )


_RULES = {"A.2": _a2, "A.3": _a3, "A.4": _a4, "A.5": _a5, "A.6": _a6, "R.3": _r3, "R.1": _r1_at, **PERCEPTION_RULES}


def _rule_applies(seed: Trajectory, t: int, mode: str) -> bool:
    """A mode of ``STEP_RULE_MODES`` has its rule at this step: a withheld detail's turn (the rule may still find
    no value to guess: that is the rule's rejection), or a user's message the rule can write a note for."""
    if withheld_at(seed, t) == "parameter":
        return True
    return is_user_step(seed, t) and not isinstance(USER_RULES[mode](seed, t, random.Random(0)), str)


def rules_note(seed: Trajectory, t: int, mode: ErrorMode, *, rng_seed: int = 0, sample: int = 0) -> GuideResult:
    """Stage 1 by rule: a concrete steering note for a structural mode, or not feasible with the reason.

    The returned ``request`` is the rule's derivation (what it changed and where the value came
    from); it is kept on the record as the guide request, with ``guide = "rules"``.
    """
    derivation: dict[str, Any] = {
        "guide": "rules",
        "name": RULES_GUIDE,
        "version": RULES_VERSION,
        "mode": mode.code,
        "seed_id": seed.id,
        "step": t,
        "sample": sample,
    }
    coded = code_rule(
        seed, t, mode.code, random.Random(f"{rng_seed}:{seed.id}:{t}:{mode.code}:{sample}")
    )  # injection/_code_rules.py
    rule = _RULES.get(mode.code) if coded is None else (lambda *_: coded)
    if rule is None:
        reason = (
            f"the rule-based guide has no rule for {mode.code} (a semantic mode); use guide_kind = 'model' or 'auto'"
        )
        return GuideResult(None, False, derivation, "", reason, kind="rules")
    rng = random.Random(f"{rng_seed}:{seed.id}:{t}:{mode.code}:{sample}")
    made = rule(seed, t, rng)
    if isinstance(made, str):
        return GuideResult(None, False, derivation, "", f"rule guide: {made}", kind="rules")
    note, details = made
    derivation.update(details)
    pin = details.get("tool") if mode.code in PINNED_MODES else None
    return GuideResult(note, True, derivation, note, kind="rules", pin_tool=pin)


GuideKind = str
GUIDE_KINDS: tuple[str, ...] = ("model", "rules", "auto")


def guide_kind_for(setting: str, mode: str, seed: Trajectory | None = None, t: int | None = None) -> str:
    """Which guide writes the note for ``mode``: ``auto`` uses rules for the structural modes, and for a mode of
    ``STEP_RULE_MODES`` at a step where its rule applies (given the seed and step), the model otherwise."""
    if setting not in GUIDE_KINDS:
        raise ValueError(f"unknown guide kind {setting!r}; choose one of {GUIDE_KINDS}")
    if setting == "auto":
        stepwise = mode in STEP_RULE_MODES and seed is not None and t is not None and _rule_applies(seed, t, mode)
        coded = mode in CODE_RULE_MODES and seed is not None and t is not None and is_code_step(seed, t)
        return "rules" if mode in RULE_MODES or stepwise or coded else "model"
    return setting
