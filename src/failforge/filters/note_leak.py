"""Reject branches where the steering note shows through: copied wording or meta talk about guidance.

A gold trajectory must look like the agent's own mistake. Verbatim n-gram overlap between the note and
ã_t or any later agent step, or phrases such as "as instructed", would let an attribution model find
the injection by its fingerprints rather than by understanding the failure.
"""

from __future__ import annotations

import re

from failforge.filters._context import FilterContext, verdict
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict, Step

NAME = "note_leak"
NGRAM = 5
META_PHRASES = (
    "as instructed",
    "as directed",
    "as you instructed",
    "as the note",
    "steering note",
    "private guidance",
    "the guidance",
    "i was told to",
    "i've been told",
    "i have been told",
    "per your guidance",
    "as suggested by the guide",
    "intentional mistake",
    "deliberate mistake",
    "deliberately",
    "on purpose",
    "error mode",
    "inject",
)
_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _text(step: Step) -> str:
    return " ".join([step.content or ""] + [f"{c.name} {c.arguments}" for c in step.tool_calls])


@filters.register(NAME, order=10, default=True)
def check(ctx: FilterContext, n: int = NGRAM) -> FilterVerdict:
    note_grams = _ngrams(_words(ctx.note), n)
    # Wording the task or the seed already used is not a leak even if the note repeats it.
    known = _ngrams(_words(" ".join(_text(s) for s in ctx.seed.steps[: ctx.step + 1] if s.kind != "tool")), n)
    known |= _ngrams(_words(ctx.seed.task.instruction), n)
    leaked = note_grams - known
    for step in ctx.agent_steps_from_t():
        text = _text(step)
        lowered = text.lower()
        for phrase in META_PHRASES:
            if phrase in lowered and phrase not in ctx.seed.task.instruction.lower():
                return verdict(NAME, False, f"step {step.index} contains the meta phrase {phrase!r}")
        shared = leaked & _ngrams(_words(text), n)
        if shared:
            sample = " ".join(sorted(shared)[0])
            return verdict(NAME, False, f"step {step.index} repeats the note verbatim ({len(shared)} shared {n}-grams, e.g. {sample!r})")
    return verdict(NAME, True, f"no {n}-gram of the note and no meta phrase in steps {ctx.step}..{len(ctx.branch.steps) - 1}")
