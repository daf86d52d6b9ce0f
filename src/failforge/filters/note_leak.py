"""Reject branches where the injection shows through: the note's wording, the guide's prompt, meta talk.

A gold trajectory must look like the agent's own mistake. Anything that lets an attribution model
find the injection by its fingerprints rather than by understanding the failure disqualifies it:

- ``meta_phrase``: talk about guidance or deliberate mistakes ("as instructed", "on purpose");
- ``third_person``: the agent speaking of itself as "the agent", the guide's word for it;
- ``bracket_hint``: bracketed labels such as "(correct)" or "[wrong]" that annotate rather than act;
- ``html_entity``: character references (``&#39;``) the note carries and the agent's context does not;
- ``guide_wording`` / ``guide_values``: 5-grams of the guide's own prompt, or values (numbers, IDs)
  from its system prompt, e.g. a worked example's, that the agent's context does not contain;
- ``verbatim``: 5-grams of the note (outside what it quotes) not found in what the agent saw;
- ``paraphrase``: the note reworded: several of its content words and numbers (lemmatised) that the
  agent's context does not contain, reused in the agent's prose (text the note quotes is the payload it
  prescribes and does not count; a prescribed number alone is not enough: at least two words must recur).

For a changed observation (an injected tool result), the one check is that the injected text reaches the agent
only as that observation: no failforge note in any request, the text in no system or user message.

Each check looks at ã_t and every later agent step, and ignores wording the agent could have taken
from its own context (its step-t request: system prompt, task, observations, tool schemas). A tool
call's name and arguments are the intended effect of a note (the invented tool, the wrong value it
names), so the verbatim and paraphrase checks read prose only; the others read calls too. Checks are
kept in :data:`CHECKS`, name ->
function, and every failing one is reported.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from failforge.gold import FilterContext, verdict
from failforge.judgement.text import (
    content_lemmas,
    entities,
    ngrams,
    numbers,
    request_text,
    seen_text,
    shown,
    step_text,
    words,
)
from failforge.plugins import filters
from failforge.replay import NOTE_PREFIX
from failforge.trajectory import FilterVerdict, Step

NAME = "note_leak"
NGRAM = 5
PARAPHRASE_MIN_SHARED = 3
PARAPHRASE_MIN_SHARE = 0.2
PARAPHRASE_ALWAYS = 5
PARAPHRASE_MIN_WORDS = 2
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
_THIRD_PERSON = re.compile(r"\b(?:the|this) (?:ai |language model |)(?:agent|assistant)\b", re.I)
_BRACKET_HINT = re.compile(
    r"[(\[]\s*(?:the\s+|a\s+|an\s+)?(?:correct|incorrect|wrong|right|error|mistake|intentional|deliberate|injected|typo|fake|"
    r"invented|hallucinated|hint|note|modified|changed|altered|oops)(?:\s+[\w-]+){0,2}\s*[)\]]",
    re.I,
)
_VALUE_TOKEN = re.compile(r"\b[A-Za-z]+\d+[A-Za-z0-9]*\b")
_QUOTED = re.compile(r"(?<![A-Za-z])'[^'\n]+'(?![A-Za-z])|\"[^\"]*\"|`[^`]*`|“[^”]*”")
"""Quoted text in a note is the payload it prescribes (what to write or pass), not the note's wording."""


@dataclass
class LeakScan:
    """One candidate as the checks see it; the expensive views are computed once, on demand."""

    ctx: FilterContext

    @cached_property
    def steps(self) -> list[Step]:
        return self.ctx.agent_steps_from_t()

    @cached_property
    def seen(self) -> str:
        return seen_text(self.ctx.seed, self.ctx.step)

    @cached_property
    def seen_lower(self) -> str:
        return self.seen.lower()

    @cached_property
    def seen_grams(self) -> set[tuple[str, ...]]:
        return ngrams(words(self.seen), NGRAM) | ngrams(words(step_text(self.ctx.original)), NGRAM)

    @cached_property
    def seen_lemmas(self) -> set[str]:
        return content_lemmas(self.seen) | content_lemmas(step_text(self.ctx.original))

    @cached_property
    def guide_prompt(self) -> tuple[str, str]:
        """(whole prompt, system prompt) of a model guide; empty for the rule-based guide."""
        request = self.ctx.guide_request or {}
        if not request.get("messages"):
            return "", ""
        system = " ".join(
            str(m.get("content") or "")
            for m in request["messages"]
            if isinstance(m, dict) and m.get("role") == "system"
        )
        return request_text(request), system


Check = Callable[[LeakScan], "str | None"]


def meta_phrase(scan: LeakScan) -> str | None:
    for step in scan.steps:
        lowered = step_text(step).lower()
        for phrase in META_PHRASES:
            if phrase in lowered and phrase not in scan.seen_lower:
                return f"step {step.index} contains the meta phrase {phrase!r}"
    return None


def third_person(scan: LeakScan) -> str | None:
    for step in scan.steps:
        match = _THIRD_PERSON.search(step_text(step))
        if match and match.group(0).lower() not in scan.seen_lower:
            return f"step {step.index} speaks of the agent in the third person ({match.group(0)!r}), as the guide does"
    return None


def bracket_hint(scan: LeakScan) -> str | None:
    for step in scan.steps:
        match = _BRACKET_HINT.search(step_text(step))
        if match and match.group(0).lower() not in scan.seen_lower:
            return f"step {step.index} carries the bracketed hint {match.group(0)!r}"
    return None


def html_entity(scan: LeakScan) -> str | None:
    only_note = entities(scan.ctx.note) - entities(scan.seen)
    for step in scan.steps:
        text = step_text(step)
        shared = (
            entities(text) | entities(html.unescape(text))
        ) & only_note  # also "&amp;#39;": the note's entity escaped again
        if shared:
            return (
                f"step {step.index} contains the HTML entity {sorted(shared)[0]!r}, which the note carries and the"
                " agent's context does not"
            )
    return None


def _values(text: str) -> set[str]:
    long_numbers = {n for n in numbers(text) if len(n.lstrip("-")) >= 3 or "." in n}
    return long_numbers | {v.lower() for v in _VALUE_TOKEN.findall(text)}


def guide_wording(scan: LeakScan) -> str | None:
    prompt, _ = scan.guide_prompt
    if not prompt:
        return None
    grams = ngrams(words(prompt), NGRAM) - scan.seen_grams
    for step in scan.steps:
        shared = grams & ngrams(words(step_text(step)), NGRAM)
        if shared:
            return f"step {step.index} copies the guide's prompt ({' '.join(sorted(shared)[0])!r})"
    return None


def guide_values(scan: LeakScan) -> str | None:
    _, system = scan.guide_prompt
    values = _values(system) - _values(scan.seen)
    if not values:
        return None
    for step in scan.steps:
        copied = values & _values(step_text(step))
        if copied:
            return (
                f"step {step.index} uses the value {sorted(copied)[0]!r} from the guide's prompt, found nowhere in the"
                " agent's context"
            )
    return None


def verbatim(scan: LeakScan) -> str | None:
    leaked = ngrams(words(_QUOTED.sub(" | ", scan.ctx.note)), NGRAM) - scan.seen_grams
    for step in scan.steps:
        shared = leaked & ngrams(words(step.content or ""), NGRAM)
        if shared:
            return (
                f"step {step.index} repeats the note verbatim ({len(shared)} shared {NGRAM}-grams, e.g."
                f" {' '.join(sorted(shared)[0])!r})"
            )
    return None


def _is_number(lemma: str) -> bool:
    return lemma.lstrip("-")[:1].isdigit()


def paraphrase(scan: LeakScan) -> str | None:
    # Text the note quotes is the payload it prescribes (what the agent should write or pass), not its
    # wording; what is left is how the note says it, and that must not resurface in the agent's prose.
    novel = content_lemmas(_QUOTED.sub(" ", scan.ctx.note)) - scan.seen_lemmas
    if not novel:
        return None
    for step in scan.steps:
        shared = novel & content_lemmas(step.content or "")
        words_shared = [w for w in shared if not _is_number(w)]
        enough = len(shared) >= PARAPHRASE_ALWAYS or (
            len(shared) >= PARAPHRASE_MIN_SHARED
            and len(words_shared) >= PARAPHRASE_MIN_WORDS
            and len(shared) >= PARAPHRASE_MIN_SHARE * len(novel)
        )
        if enough:
            return (
                f"step {step.index} rewords the note: {len(shared)} of its {len(novel)} words and numbers that the"
                f" agent's context lacks ({', '.join(sorted(shared)[:6])})"
            )
    return None


CHECKS: dict[str, Check] = {
    "meta_phrase": meta_phrase,
    "third_person": third_person,
    "bracket_hint": bracket_hint,
    "html_entity": html_entity,
    "guide_wording": guide_wording,
    "guide_values": guide_values,
    "verbatim": verbatim,
    "paraphrase": paraphrase,
}


def injected_text_leaks(ctx: FilterContext, text: str) -> list[str]:
    """For a changed observation: where the change reaches the agent other than as that observation — a failforge
    note in any recorded request, or the injected text in a system or user message (the agent's own instructions)."""
    leaks = []
    for step in ctx.branch.steps:
        request = step.model_call.request if step.model_call else {}
        for message in request.get("messages", []) if isinstance(request, dict) else []:
            content = message.get("content") if isinstance(message, dict) else None
            body = content if isinstance(content, str) else str(content or "")
            if NOTE_PREFIX in body:
                leaks.append(f"step {step.index}: a failforge note in a {message.get('role')} message")
            elif message.get("role") in ("system", "user") and shown(text, body):
                leaks.append(f"step {step.index}: the attack text in a {message.get('role')} message")
    return leaks


@filters.register(
    NAME,
    order=10,
    default=True,
    description="nothing betrays the change: the note's or guide's wording, meta talk, injected text out of place",
)
def check(ctx: FilterContext) -> FilterVerdict:
    injected = ctx.facts.get("injected_text")
    if isinstance(
        injected, str
    ):  # an observation change: the injected text must reach the agent only as that observation
        leaks = injected_text_leaks(ctx, injected)
        return verdict(NAME, not leaks, "; ".join(leaks[:3]) or "the attack reaches the agent only as the observation")
    scan = LeakScan(ctx)
    found = [f"{name}: {reason}" for name, fn in CHECKS.items() if (reason := fn(scan))]
    if found:
        return verdict(NAME, False, "; ".join(found))
    return verdict(
        NAME,
        True,
        f"no sign of the note or the guide in steps {ctx.step}..{len(ctx.branch.steps) - 1} ({', '.join(CHECKS)})",
    )
