"""Deterministic conformance: does ã_t show the structural error its label names?

Six modes leave a mark that can be read off the step itself, compared with the seed's a_t and the
request the agent answered: A.2 (the seed's tool, one argument changed), A.3 (a tool that was not
offered), A.4 (a malformed call, or a call written as text), A.5 (a final answer while the seed still
had tool calls to make from t on), A.6 (a call the agent already made earlier), R.3 (a number of a_t
changed). For these a rule decides, so the verdict costs nothing and is the same on every run. An
answer (A.5, R.3 in an answer) must also be made of the task's words: off-topic text that happens to
end the run, or happens to contain a number, is not the mode it would otherwise pass for.

The other modes need understanding (was the inference invalid? was the verification skipped?). No
rule can say they *are* exhibited, but one can say they are *not*: a step that shares no word, value
or tool with the task and what the agent saw is not a mistake at doing this task, whatever its label.
That precondition runs first; what it lets through goes to the judge, or stays unverified.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from failforge.clarification import unsaid_arguments, user_turns, withheld_at, withheld_details
from failforge.judgement._code import check_code_step
from failforge.judgement._perception import PERCEPTION_CHECKS
from failforge.judgement._user import check_user_value
from failforge.judgement._verdict import ConformanceVerdict
from failforge.judgement.text import content_lemmas, lemma, numbers, offered_tools, seen_text, step_text
from failforge.plugins import environments
from failforge.trajectory import Step, ToolCall, Trajectory

STRUCTURAL_MODES: tuple[str, ...] = ("A.2", "A.3", "A.4", "A.5", "A.6", "R.3")
"""Modes whose conformance a rule decides (and for which the rule-based guide writes notes)."""

Outcome = tuple[bool, str]
GROUNDED_MIN = 0.5
"""Share of an answer's content words that must come from what the agent saw (or from a_t) for it to
count as an answer to this task rather than off-topic text that happens to stop the run."""

_GENERIC = frozenset(
    lemma(w)
    for w in """
    nothing anything something everything need needs needed already task tasks complete completed done finish finished
    result results thank thanks here help sorry information found find look seem think know go going right good great
    fine able unable also still though request requested ask asked user answer question further want make made see take
    give given best check checked time today perfect happy glad note noted update updated successfully success way
    """.split()
)
"""Conversational words any answer may use; they say nothing about which task it answers."""


def off_topic(share: float, foreign: list[str]) -> bool:
    """Off-topic: at least two content words from outside the task, and they are most of the text.
    (One stray word, as in "everything is in order", says nothing.)"""
    return len(foreign) >= 2 and share < GROUNDED_MIN


def grounded(text: str, seed: Trajectory, t: int) -> tuple[float, list[str]]:
    """Share of ``text``'s content words (numbers aside) found in the agent's context or in a_t, and
    the words that were not: a wrong answer to the task is made of the task's words."""
    mine = sorted(w for w in content_lemmas(text) if not w[0].isdigit() and not w.startswith("-") and w not in _GENERIC)
    if not mine:
        return 1.0, []
    known = content_lemmas(seen_text(seed, t)) | content_lemmas(step_text(seed.steps[t]))
    foreign = [w for w in mine if w not in known]
    return 1 - len(foreign) / len(mine), foreign


def _norm(value: Any) -> Any:
    """Compare argument values the way a reader would: case, spacing and 100 vs 100.0 do not count."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in sorted(value.items())}
    return value


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _changed_arguments(original: dict[str, Any], injected: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(original) | set(injected)):
        if key not in injected:
            out.append(f"{key} dropped (was {_short(original[key])})")
        elif key not in original:
            out.append(f"{key} added ({_short(injected[key])})")
        elif _norm(original[key]) != _norm(injected[key]):
            out.append(f"{key}: {_short(original[key])} -> {_short(injected[key])}")
    return out


def check_a2(seed: Trajectory, injected: Step, t: int) -> Outcome:
    original = seed.steps[t]
    if not injected.tool_calls:
        return False, "ã_t calls no tool; A.2 needs the seed's tool called with a changed argument"
    same_tool = False
    for call in injected.tool_calls:
        new = call.parsed_arguments()
        for orig in (c for c in original.tool_calls if c.name == call.name):
            same_tool = True
            old = orig.parsed_arguments()
            if new is None or old is None:
                continue
            changed = _changed_arguments(old, new)
            own = (
                environments.get(seed.environment.name)().changed_argument(seed, t, old, new)
                if changed and seed.environment.name in environments
                else None
            )
            if own is not None:  # the environment's own A.2 (a text game: a wrong object, not any changed text)
                return own
            if changed:
                return True, f"{call.name} is called as at a_t with a changed argument: {'; '.join(changed)}"
    if same_tool:
        return False, "ã_t calls the seed's tool with the same arguments (or unreadable ones)"
    names = sorted({c.name for c in injected.tool_calls})
    return False, f"ã_t calls {names}, not the seed's tool(s) {sorted({c.name for c in original.tool_calls})}"


def check_a3(seed: Trajectory, injected: Step, t: int) -> Outcome:
    offered = offered_tools(seed, t)
    if not offered:
        return False, "no tools were offered at this step, so none can be invented beyond them"
    invented = [c.name for c in injected.tool_calls if c.name.strip() and c.name not in offered]
    if invented:
        return True, f"ã_t calls {invented[0]!r}, which is not among the {len(offered)} offered tools"
    if not injected.tool_calls:
        return False, "ã_t calls no tool; A.3 needs a call to a tool that was not offered"
    return False, f"every tool ã_t calls is offered ({sorted({c.name for c in injected.tool_calls})})"


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """A shallow JSON-schema type check: enough to see a string where a list was required."""
    if not isinstance(schema, dict):
        return True
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options:
        return any(_fits(value, o) for o in options)
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    return any(_JSON_TYPES.get(k, lambda v: True)(value) for k in kinds)


def _schema_violations(call: ToolCall, schema: dict[str, Any]) -> list[str]:
    args = call.parsed_arguments() or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    out = [f"required argument {name!r} is missing" for name in schema.get("required", []) if name not in args]
    if isinstance(props, dict):
        out += [f"argument {name!r} is not in the tool's schema" for name in args if name not in props]
        out += [
            f"argument {name!r} has the wrong type ({type(value).__name__})"
            for name, value in args.items()
            if name in props and not _fits(value, props[name])
        ]
    return out


_CALL_AS_TEXT = re.compile(r"<tool_call>|\"(?:name|function)\"\s*:\s*\"[A-Za-z_]\w*\"|```(?:json|tool)", re.I)


def check_a4(seed: Trajectory, injected: Step, t: int) -> Outcome:
    offered = offered_tools(seed, t)
    for call in injected.tool_calls:
        if not call.name.strip():
            return True, "a tool call in ã_t has no name"
        if call.parsed_arguments() is None:
            return True, f"{call.name} is called with arguments that are not a JSON object: {call.arguments[:60]!r}"
        if call.name in offered:
            problems = _schema_violations(call, offered[call.name])
            if problems:
                return True, f"{call.name} is called against its schema: {problems[0]}"
    text = injected.content or ""
    if not injected.tool_calls and text.strip():
        written = [name for name in offered if re.search(rf"\b{re.escape(name)}\s*\(", text)]
        if written:
            return True, f"ã_t writes a call to {written[0]} as text instead of making the tool call"
        if _CALL_AS_TEXT.search(text):
            return True, "ã_t writes tool-call syntax as text instead of making the tool call"
    return False, "ã_t is well-formed: its calls parse and fit their schemas, and it writes no call as text"


#: A tool that hands the conversation to a human (tau2's ``transfer_to_human_agents``): calling it ends the agent's
#: work.
HUMAN_HANDOFF = re.compile(r"(?:transfer|hand_?off|escalate)_to_human", re.I)


def check_a5(seed: Trajectory, injected: Step, t: int) -> Outcome:
    handoffs = [c.name for c in injected.tool_calls if HUMAN_HANDOFF.search(c.name)]
    if handoffs and len(handoffs) == len(injected.tool_calls):  # a premature transfer to a human: the task is given up
        remaining = [
            c.name
            for s in seed.steps[t:]
            if s.kind == "agent"
            for c in s.tool_calls
            if not HUMAN_HANDOFF.search(c.name)
        ]
        if not remaining:
            return (
                False,
                f"ã_t calls {handoffs[0]}, but the seed made no other tool call from step t on: nothing is left undone",
            )
        return (
            True,
            (
                f"ã_t hands the conversation to a human ({handoffs[0]}) while the seed still made {len(remaining)} tool"
                f" call(s) from step {t} on ({', '.join(remaining[:3])})"
            ),
        )
    if injected.tool_calls:
        return (
            False,
            (
                f"ã_t still calls {injected.tool_calls[0].name}; A.5 needs a final answer (or a transfer to a human)"
                " with no further call"
            ),
        )
    if not (injected.content or "").strip():
        return False, "ã_t is empty, not a final answer"
    remaining = [c.name for s in seed.steps[t:] if s.kind == "agent" for c in s.tool_calls]
    if not remaining:
        return False, "the seed made no tool call from step t on, so answering now leaves nothing undone"
    share, foreign = grounded(injected.content or "", seed, t)
    if off_topic(share, foreign):
        return (
            False,
            (
                f"ã_t stops, but its text is not an answer to this task ({share:.0%} of its words come from the agent's"
                f" context; e.g. {', '.join(foreign[:4])})"
            ),
        )
    return (
        True,
        (
            f"ã_t answers and stops while the seed still made {len(remaining)} tool call(s) from step {t} on"
            f" ({', '.join(remaining[:3])})"
        ),
    )


def check_a6(seed: Trajectory, injected: Step, t: int) -> Outcome:
    earlier = [(s.index, c) for s in seed.steps[1:t] if s.kind == "agent" for c in s.tool_calls]
    for call in injected.tool_calls:
        new = call.parsed_arguments()
        for index, old in earlier:
            if old.name == call.name and new is not None and _norm(old.parsed_arguments()) == _norm(new):
                return True, f"ã_t repeats the call {call.name}({call.arguments[:60]}) already made at step {index}"
    said = " ".join((injected.content or "").split()).casefold()
    if said and not injected.tool_calls:
        for s in seed.steps[1:t]:
            if s.kind == "agent" and " ".join((s.content or "").split()).casefold() == said:
                return True, f"ã_t repeats word for word what the agent said at step {s.index}"
    if not earlier:
        return False, "the agent made no tool call before step t, so there is nothing to repeat"
    return False, "ã_t repeats none of the agent's earlier calls"


def check_r3(seed: Trajectory, injected: Step, t: int) -> Outcome:
    original = seed.steps[t]
    if not numbers(step_text(original)):
        return False, "a_t uses no number, so ã_t cannot get one of its numbers wrong"
    if original.tool_calls:
        for call in injected.tool_calls:
            new = call.parsed_arguments()
            for orig in (c for c in original.tool_calls if c.name == call.name):
                old = orig.parsed_arguments()
                if new is None or old is None:
                    continue
                for key, value in old.items():
                    before, after = numbers(str(value)), numbers(str(new.get(key, "")))
                    if before and after and before != after:
                        return True, f"{call.name}.{key}: the number(s) {', '.join(before)} became {', '.join(after)}"
        return False, "ã_t does not call the seed's tool with a changed number in the same argument"
    if injected.tool_calls:
        return False, "a_t is an answer with numbers; ã_t makes a tool call instead"
    used = set(numbers(original.content or ""))
    given = (used - set(numbers(seed.task.instruction))) or used  # what a_t worked out, not what the task stated
    written = set(numbers(injected.content or ""))
    dropped, added = given - written, written - used
    slips = [(x, y) for x in sorted(dropped) for y in sorted(added) if _near(float(x), float(y))]
    if not slips:
        if dropped and added:
            return (
                False,
                (
                    f"ã_t's answer has other numbers ({', '.join(sorted(added))}) but none is a slip of a_t's"
                    f" ({', '.join(sorted(dropped))}): not within a factor of ten"
                ),
            )
        return False, "ã_t's answer does not replace any number of a_t's answer with another"
    if len(dropped) > max(1, len(given) // 2):
        return (
            False,
            (
                f"ã_t's answer loses most of a_t's numbers ({', '.join(sorted(dropped))}): another answer, not one"
                " number slipped"
            ),
        )
    share, foreign = grounded(injected.content or "", seed, t)
    if off_topic(share, foreign):
        return (
            False,
            (
                f"ã_t has another number but is not an answer to this task ({share:.0%} of its words come from the"
                f" agent's context; e.g. {', '.join(foreign[:4])})"
            ),
        )
    x, y = slips[0]
    return True, f"ã_t's answer gives {y} where a_t gave {x}"


def _near(x: float, y: float) -> bool:
    """A slip, not another quantity: off by a little, a slipped decimal or transposed digits (within 10x)."""
    if x == 0 or y == 0:
        return abs(x - y) <= 1
    ratio = abs(y / x)
    return x * y > 0 and 0.1 <= ratio <= 10


def check_r1_clarification(seed: Trajectory, injected: Step, t: int) -> Outcome:
    """R.1 at a turn that lacks a detail (a missed clarification): ã_t calls the tool that takes the withheld
    detail (:func:`failforge.clarification.withheld_details`: what the seed passes once the user gives it) with
    a value for it that the user gave in no turn so far — acted on a detail it assumed instead of asking. Any
    other call, or a value for another argument, does not show this mistake."""
    given = user_turns(seed, t)
    details = {(call.name, key) for call, key in withheld_details(seed, t)}
    if not details:
        return False, "no later call of the seed takes the detail this turn withholds, so no call can show it filled in"
    for call in injected.tool_calls:
        args = call.parsed_arguments() or {}
        made_up = [key for key in unsaid_arguments(args, given) if (call.name, key) in details]
        if call.name in offered_tools(seed, t) and made_up:
            return (
                True,
                (
                    f"ã_t calls {call.name} with {made_up[0]} = {_short(args[made_up[0]])}, the detail this turn"
                    f" withholds, a value the user gave in none of the {len(given)} turn(s) so far"
                ),
            )
    if not injected.tool_calls:
        return False, "ã_t calls no tool; R.1 at a turn lacking a detail needs a call with a value the user never gave"
    wanted = ", ".join(sorted(f"{name}.{key}" for name, key in details))
    return False, f"ã_t fills in none of the details this turn withholds ({wanted}) with a value the user never gave"


#: Semantic modes a rule decides at a turn that withholds something (:mod:`failforge.clarification`).
CLARIFICATION_CHECKS: dict[str, tuple[str, Callable[[Trajectory, Step, int], Outcome]]] = {
    "R.1": ("parameter", check_r1_clarification)
}


STRUCTURAL_CHECKS: dict[str, Callable[[Trajectory, Step, int], Outcome]] = {
    "A.2": check_a2,
    "A.3": check_a3,
    "A.4": check_a4,
    "A.5": check_a5,
    "A.6": check_a6,
    "R.3": check_r3,
}


def on_task(seed: Trajectory, injected: Step, t: int) -> Outcome:
    """Necessary for every mode: ã_t engages with this task (an offered tool, or a shared word/value)."""
    offered = offered_tools(seed, t)
    called = [c.name for c in injected.tool_calls if c.name in offered]
    if called:
        return True, f"ã_t calls the offered tool {called[0]}"
    context = " ".join([seed.task.instruction] + [step_text(s) for s in seed.steps[1:t]])
    shared = content_lemmas(step_text(injected)) & content_lemmas(context)
    if shared:
        return (
            True,
            f"ã_t shares {len(shared)} word(s) or value(s) with the task and the prefix (e.g. {sorted(shared)[0]!r})",
        )
    return (
        False,
        (
            "ã_t shares no word, value or tool with the task and what the agent saw before t: it is not a mistake at"
            " this task"
        ),
    )


def check_structural(seed: Trajectory, injected: Step, t: int, mode: str) -> ConformanceVerdict:
    """The deterministic verdict for a structural mode (raises KeyError for any other mode)."""
    exhibited, reason = STRUCTURAL_CHECKS[mode](seed, injected, t)
    return ConformanceVerdict(mode=mode, exhibited=exhibited, method="deterministic", reason=reason)


def deterministic_verdict(seed: Trajectory, injected: Step, t: int, mode: str) -> ConformanceVerdict:
    """Structural modes: decided. Semantic modes: False when off-task, else unverified (judge needed)."""
    if mode in PERCEPTION_CHECKS:  # P.1 / P.2 on a screenshot agent's step: decided where the DOM gives the truth
        decided, why = PERCEPTION_CHECKS[mode](seed, injected, t)
        return ConformanceVerdict(
            mode=mode, exhibited=decided, method="deterministic" if decided is not None else "unverified", reason=why
        )
    coded = check_code_step(seed, injected, t, mode)  # a code action (DA-Bench's interpreter): judgement/_code.py
    if coded is not None:
        return ConformanceVerdict(mode=mode, exhibited=coded[0], method="deterministic", reason=coded[1])
    if mode in STRUCTURAL_CHECKS:
        return check_structural(seed, injected, t, mode)
    if mode in CLARIFICATION_CHECKS and withheld_at(seed, t) == CLARIFICATION_CHECKS[mode][0]:
        exhibited, reason = CLARIFICATION_CHECKS[mode][1](seed, injected, t)
        return ConformanceVerdict(mode=mode, exhibited=exhibited, method="deterministic", reason=reason)
    if mode == "R.1":  # a user's value stated wrongly is decided by rule; anything else is judged
        decided, why = check_user_value(seed, injected, t)
        if decided is not None:
            return ConformanceVerdict(mode=mode, exhibited=decided, method="deterministic", reason=why)
    engaged, why = on_task(seed, injected, t)
    if not engaged:
        return ConformanceVerdict(mode=mode, exhibited=False, method="deterministic", reason=why)
    return ConformanceVerdict(
        mode=mode,
        exhibited=None,
        method="unverified",
        reason=f"{mode} is a semantic mode: no rule can confirm it ({why})",
    )
