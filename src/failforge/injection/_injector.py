"""Two-stage on-policy injection.

Stage 1: a guide model reads the task, the replayed prefix, the original step a_t and the error mode,
and writes a short steering note (or says NOT FEASIBLE). Stage 2: the agent's *own* model gets its own
step-t request, exactly as the harness sent it, plus the note, and produces ã_t. The note lives only in
that one stage-2 request: the harness appends ã_t to its history as if the model had produced it
unaided, so no later step ever sees the note. Both prompts are kept for the gold record's provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from failforge.injection._note_check import note_problem
from failforge.injection._roster import render_message, roster_context
from failforge.judgement import render_step as judged_step
from failforge.llm import Responder, read_structured, with_structured
from failforge.taxonomy import ErrorMode
from failforge.trajectory import Step, Trajectory

NOT_FEASIBLE = "NOT FEASIBLE"

GUIDE_SYSTEM = (
    "You design realistic mistakes for a dataset of AI-agent failures. You are shown a task, what the agent "
    "has done so far, the action it took next in a run that succeeded, and one error mode. Reply with ONE short "
    "imperative sentence (at most thirty words), addressed to the agent as 'you', telling it what to do next so "
    "that it commits exactly that error, as a natural mistake it could make on its own. Name the concrete tool, "
    "argument and value, taken from this task and its context only. Never mention error modes, notes, datasets, "
    "tests, instructions, or which action is right or wrong. If this error mode cannot realistically happen at "
    f"this step, answer exactly: {NOT_FEASIBLE}."
)
"""The guide's system prompt. It carries no worked example on purpose: a weak guide copies an example's
tool and values into its note (and the agent into its step), which makes a record about the prompt, not
about the task. The note-leak filter also rejects any wording or value of this prompt found in a branch."""


class GuideNote(BaseModel):
    """The guide's answer as a schema: the one sentence (or NOT FEASIBLE)."""

    model_config = ConfigDict(extra="forbid")
    note: str = Field(max_length=240)


def render_step(step: Step, limit: int = 400) -> str:
    """One line per step in the guide's prompt (the mode judge's renderer, cut at ``limit`` characters)."""
    return judged_step(step, limit)


def guide_request(
    seed: Trajectory,
    t: int,
    mode: ErrorMode,
    *,
    model: str,
    temperature: float,
    max_tokens: int = 160,
    seed_value: int | None = None,
) -> dict[str, Any]:
    # A team's steps are messages between agents: render sender -> recipient, and say who is acting at t
    # (a single-agent prompt is unchanged: its roster context is empty).
    team = roster_context(seed, t)
    render = render_message if team else render_step
    prefix = "\n".join(render(s, 300) for s in seed.steps[:t][-12:])
    user = (
        f"Task: {seed.task.instruction}\n\n" + (f"{team}\n\n" if team else "") + f"Steps so far:\n{prefix}\n\n"
        f"Next step in the successful run:\n{render(seed.steps[t])}\n\n"
        f"Error mode {mode.code} ({mode.name}): {mode.definition}\n"
        f"How to craft it: {mode.guide_hint}\n\n"
        "Reply with the one sentence now."
    )
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "system", "content": GUIDE_SYSTEM}, {"role": "user", "content": user}],
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if seed_value is not None:
        body["seed"] = seed_value
    return body


@dataclass
class GuideResult:
    note: str | None
    feasible: bool
    request: dict[str, Any]
    raw: str
    reason: str = ""
    kind: str = "model"
    """Which guide wrote the note: ``model`` (a guide model's reply) or ``rules`` (the rule-based guide)."""
    pin_tool: str | None = None
    """A tool the note asks ã_t to call. Stage 2 may pin it with ``tool_choice`` so that a model too small
    to follow the note still answers with a call to that tool; every argument stays the model's own."""


def write_steering_note(guide: Responder, request: dict[str, Any], mode: ErrorMode | None = None) -> GuideResult:
    """Stage 1. An empty answer, NOT FEASIBLE, or (given the mode) a reply that is no note for it — a
    refusal, a restatement of the instructions, nothing of the task named — means no attempt is made
    (kept as a rejection, stage ``guide``)."""
    request = with_structured(request, GuideNote, guide)  # the endpoint's own mechanism, where it has one
    response = guide(request)
    raw = str(((response.get("choices") or [{}])[0].get("message") or {}).get("content") or "").strip()
    answer = read_structured(raw, GuideNote)
    text = answer.note.strip() if isinstance(answer, GuideNote) else raw  # raw (kept) is the JSON when structured
    if not text:
        return GuideResult(None, False, request, raw, "guide model returned an empty note")
    if NOT_FEASIBLE.lower() in text.lower()[: len(NOT_FEASIBLE) + 20]:
        return GuideResult(None, False, request, raw, "guide model judged the mode not feasible at this step")
    note = clean_note(text)
    if not note:
        return GuideResult(None, False, request, raw, "guide model wrote only a preamble, no usable note")
    if mode is not None:
        problem = note_problem(
            note,
            request,
            instructions=GUIDE_SYSTEM,
            mode_text=f"{mode.code} {mode.name} {mode.definition} {mode.guide_hint}",
        )
        if problem is not None:
            return GuideResult(None, False, request, raw, problem)
    return GuideResult(note, True, request, raw)


_PREAMBLES = ("here is", "here's", "steering note", "reply:", "note:", "sure", "certainly")


def clean_note(raw: str, max_sentences: int = 2) -> str:
    """Drop preamble lines ("Here is the steering note:") and quotes; keep the first sentences."""
    import re

    lines = [ln.strip().strip('"').strip() for ln in raw.splitlines() if ln.strip()]
    while lines and (lines[0].lower().startswith(_PREAMBLES) and (len(lines) > 1 or lines[0].endswith(":"))):
        lines.pop(0)
    text = " ".join(lines)
    text = re.sub(r"^(reply|note|answer)\s*:\s*", "", text, flags=re.I).strip().strip('"').strip()
    sentences = [part.strip().strip('"').strip() for part in re.split(r"(?<=[.!?])[\"”']?\s+", text)]
    return " ".join(p for p in sentences[:max_sentences] if p).strip()
