"""RCTA-like root-cause trajectory analysis (LongRCA), as a judge method: ``rcta``.

LongRCA's paper describes RCTA in four stages; its code is not released, so this follows the stages as
described (``../shared/research/seed_systems.md``) and is called *RCTA-like* wherever it is reported:

- **A1, the candidate package.** The non-system steps are cut into consecutive segments of at most
  :data:`SEGMENT_STEPS` steps with stable ids (``seg-0``, ``seg-1`` … and their first and last step); one
  task-conditioned call per segment (the :data:`OVERLAP` steps before it shown as context) summarises it
  and proposes failure-relevant steps, each tagged root / manifestation / terminal / other, optionally
  "recovered"; one call turns the summaries into an outline. Proposed ids are pooled and ordered by
  priority (manifestation 0, root 1, terminal 2, other 3; "recovered" adds 3; ties by ascending id), the
  first :data:`MAX_CANDIDATES` kept, and their original text retrieved from the record (never the
  summary's paraphrase).
- **A2, handoff evidence.** A handoff is a recorded step addressed to another agent (``recipient``). Each
  candidate gets the nearest strictly earlier handoff whose recipient is the candidate's agent, exactly as
  recorded (no case folding, no fallback to a similar name); a candidate with none gets the nearest earlier
  handoff as plan context, marked so.
- **A3, backward instruction–execution reasoning.** One final call with the outline, the candidates and
  their handoffs, and the handoff rule (an erroneous instruction faithfully executed is the root, not its
  execution), returning the responsible agent and the root step in separate fields (and the mode).
- **A4, validation.** The agent must be a recorded agent, the step a recorded non-system step, a cited
  handoff one of those shown, the mode one of the 18 (or, free-text, one that maps). A reply with an invalid
  field gets one retry naming the problems; each field is then kept from whichever reply had it valid, the
  retry first. A field invalid in both stays invalid (None, scored wrong, problem kept); the agent is never
  read off the step's author.

Every call goes through the judge session (the model boundary), so a finished run re-scores at 0 tokens
and an interrupted one resumes. The prompts are data: ``failforge/data/prompts/rcta.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from failforge.attribution._answers import OutlineAnswer, rcta_final_answer, rcta_segment_answer
from failforge.attribution._fields import check_agent, check_mode, check_step, mode_parts, recorded_agents
from failforge.attribution._methods import MethodContext, Outcome, methods
from failforge.attribution._prompts import Messages, PromptConfig, render_step
from failforge.attribution._record import LabelledFailure
from failforge.llm import last_complete_block

SEGMENT_STEPS = 40
OVERLAP = 2
MAX_CANDIDATES = 80
TAG_PRIORITY = {"manifestation": 0, "root": 1, "terminal": 2, "other": 3}
RECOVERED_PENALTY = 3

# Not after '#': "&#34;" (a character reference a weak model writes for a quote) is no step 34.
_CANDIDATE = re.compile(
    r"(?<![\w.#])(\d+)\s*[:(\-]?\s*(manifestation|root|terminal|other)?\s*\)?\s*(recovered)?", re.IGNORECASE
)
_LINE = re.compile(
    r"^[ \t*]*(Role|Step|Handoff|Mode|Reason|Summary|Candidates|Outline)[ \t*]*:[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)


@cache
def prompts() -> dict[str, str]:
    text = resources.files("failforge").joinpath("data/prompts/rcta.yaml").read_text(encoding="utf-8")
    loaded: dict[str, str] = yaml.safe_load(text)
    return loaded


@dataclass(frozen=True)
class Segment:
    id: str
    steps: list[int]


@dataclass(frozen=True)
class Candidate:
    step: int
    priority: int


def segments(record: LabelledFailure, size: int = SEGMENT_STEPS) -> list[Segment]:
    steps = record.candidate_steps()
    return [Segment(id=f"seg-{n}", steps=steps[i : i + size]) for n, i in enumerate(range(0, len(steps), size))]


def handoffs(record: LabelledFailure) -> list[int]:
    return [s.index for s in record.steps if s.recipient]


def handoff_for(record: LabelledFailure, step: int) -> tuple[int | None, bool]:
    """(the handoff that instructs ``step``'s agent, True), or (the nearest earlier handoff, False) as plan context."""
    agent = record.steps[step].agent
    earlier = [h for h in handoffs(record) if h < step]
    addressed = [h for h in earlier if record.steps[h].recipient == agent]
    if addressed:
        return addressed[-1], True
    return (earlier[-1], False) if earlier else (None, False)


def _limit(config: PromptConfig, shown: int) -> int:
    return max(config.min_step_chars, min(config.max_step_chars, config.budget_chars // max(1, shown)))


def _answer_line(record: LabelledFailure, config: PromptConfig) -> str:
    return (
        f"The correct answer is: {record.task.gold_answer}\n" if config.with_answer and record.task.gold_answer else ""
    )


def _messages(prompt: str) -> Messages:
    return [{"role": "system", "content": prompts()["system"]}, {"role": "user", "content": prompt}]


def segment_prompt(record: LabelledFailure, segment: Segment, config: PromptConfig) -> Messages:
    all_steps = record.candidate_steps()
    start = all_steps.index(segment.steps[0])
    context_steps = all_steps[max(0, start - OVERLAP) : start]
    limit = _limit(config, len(segment.steps) + len(context_steps))
    context = (
        "Context:\n" + "\n".join(render_step(record.steps[i], limit) for i in context_steps) + "\n"
        if context_steps
        else ""
    )
    return _messages(
        prompts()["segment"].format(
            question=record.task.question,
            answer_line=_answer_line(record, config),
            first=segment.steps[0],
            last=segment.steps[-1],
            context=context,
            steps="\n".join(render_step(record.steps[i], limit) for i in segment.steps),
        )
    )


def outline_prompt(record: LabelledFailure, summaries: list[tuple[Segment, str]], config: PromptConfig) -> Messages:
    lines = "\n".join(f"{seg.id} (steps {seg.steps[0]}-{seg.steps[-1]}): {text}" for seg, text in summaries)
    return _messages(
        prompts()["outline"].format(
            question=record.task.question, answer_line=_answer_line(record, config), summaries=lines
        )
    )


def candidate_block(record: LabelledFailure, candidates: list[Candidate], config: PromptConfig) -> tuple[str, set[int]]:
    """The candidates' original text with their handoff evidence, and the handoff steps shown (for provenance)."""
    limit = _limit(config, 2 * len(candidates))
    blocks: list[str] = []
    shown: set[int] = set()
    for c in sorted(candidates, key=lambda c: c.step):
        handoff, addressed = handoff_for(record, c.step)
        text = f"[candidate] {render_step(record.steps[c.step], limit)}"
        if handoff is None:
            text += "\n  handoff: none recorded before it"
        else:
            shown.add(handoff)
            label = (
                "handoff to this agent"
                if addressed
                else "nearest earlier handoff (plan context, not addressed to this agent)"
            )
            text += f"\n  {label}: {render_step(record.steps[handoff], limit)}"
        blocks.append(text)
    return "\n".join(blocks), shown


def final_prompt(record: LabelledFailure, outline: str, block: str, config: PromptConfig) -> Messages:
    mode_ask, mode_line = mode_parts(config)
    return _messages(
        prompts()["final"].format(
            question=record.task.question,
            answer_line=_answer_line(record, config),
            outline=outline,
            candidates=block,
            mode_ask=mode_ask,
            mode_line=mode_line,
        )
    )


def reply_fields(reply: str, required: tuple[str, ...] = ()) -> dict[str, str]:
    """The reply's fields; with ``required``, from its last complete answer block (a self-revising judge)."""
    pairs = [(m.group(1).title(), m.group(2).strip().strip("*`'\" ").strip()) for m in _LINE.finditer(reply or "")]
    return last_complete_block(pairs, required)


FINAL_FIELDS = ("Role", "Step")


@cache
def _format_hint() -> str:
    """What the segment prompt itself writes after ``Candidates:`` (its format hint, with an example)."""
    line = next(line for line in prompts()["segment"].splitlines() if line.strip().startswith("Candidates:"))
    return line.split(":", 1)[1].strip()


def parse_candidates(value: str | None, segment: Segment) -> tuple[list[Candidate], list[str]]:
    if not value or value.strip().lower().startswith("none"):
        return [], []
    if value.strip().startswith(_format_hint().split("e.g.")[0].strip()):
        # The reply copies the prompt's hint, whose example steps ("12 root; 15 manifestation") are no proposal.
        return [], [f"{segment.id}: the reply repeats the format hint instead of proposing steps"]
    inside = set(segment.steps)
    found: list[Candidate] = []
    problems: list[str] = []
    for match in _CANDIDATE.finditer(value):
        step = int(match.group(1))
        if step not in inside:
            problems.append(f"{segment.id}: proposed step {step} is not in the segment")
            continue
        priority = TAG_PRIORITY[(match.group(2) or "other").lower()] + (RECOVERED_PENALTY if match.group(3) else 0)
        found.append(Candidate(step=step, priority=priority))
    return found, problems


def pool(proposals: list[Candidate], limit: int = MAX_CANDIDATES) -> list[Candidate]:
    """Best (lowest) priority per step, ordered by (priority, step), the first ``limit``."""
    best: dict[int, int] = {}
    for c in proposals:
        best[c.step] = min(c.priority, best.get(c.step, c.priority))
    return [Candidate(step=s, priority=p) for s, p in sorted(best.items(), key=lambda kv: (kv[1], kv[0]))][:limit]


def validate(
    record: LabelledFailure, fields: dict[str, str], shown_handoffs: set[int], config: PromptConfig
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each field's value where valid (agent, step, mode, description, handoff), and what is wrong with the others (by
    field)."""
    valid: dict[str, Any] = {}
    problems: dict[str, str] = {}
    check_agent(record, "Role", fields.get("Role"), valid, problems)
    check_step(record, fields.get("Step"), valid, problems)
    cited = fields.get("Handoff", "none")
    cited_digits = re.search(r"\d+", cited)
    if cited_digits and int(cited_digits.group(0)) not in shown_handoffs:
        problems["handoff"] = f"Handoff {cited_digits.group(0)} is not one of the handoffs shown"
    elif cited_digits:
        valid["handoff"] = int(cited_digits.group(0))
    check_mode(config, fields.get("Mode"), valid, problems)
    return valid, problems


@methods.register(
    "rcta",
    description=(
        "RCTA-like (LongRCA): segment summaries, outline, pooled candidates with handoffs, backward reasoning,"
        " validation"
    ),
)
class Rcta:
    kind = "judge"

    def predict(self, ctx: MethodContext) -> Outcome:
        assert ctx.judge is not None
        record, config, judge = ctx.record, ctx.prompt, ctx.judge
        out = Outcome()
        summaries: list[tuple[Segment, str]] = []
        proposals: list[Candidate] = []
        parts = segments(record)
        for segment in parts:
            answer = rcta_segment_answer(segment.steps, only_segment=len(parts) == 1)
            fields = reply_fields(judge.ask(segment_prompt(record, segment, config), schema=answer))
            summaries.append((segment, fields.get("Summary") or "(no summary)"))
            found, outside = parse_candidates(fields.get("Candidates"), segment)
            proposals.extend(found)
            out.problems.extend(outside)
        outline = (
            reply_fields(judge.ask(outline_prompt(record, summaries, config), schema=OutlineAnswer)).get("Outline")
            or "(no outline)"
        )
        candidates = pool(proposals)
        if not candidates:
            out.problems.append("no segment proposed a candidate step")
            return out
        block, shown = candidate_block(record, candidates, config)
        answer = rcta_final_answer(record, config, sorted(shown))
        reply = judge.ask(final_prompt(record, outline, block, config), schema=answer)
        valid, problems = validate(record, reply_fields(reply, FINAL_FIELDS), shown, config)
        if problems:
            _, mode_line = mode_parts(config)
            retry_prompt = prompts()["retry"].format(
                problems="; ".join(problems.values()),
                agents=", ".join(sorted(set(recorded_agents(record).values()))),
                mode_line=mode_line,
            )
            messages = [
                *final_prompt(record, outline, block, config),
                {"role": "assistant", "content": reply},
                {"role": "user", "content": retry_prompt},
            ]
            reply = judge.ask(messages, schema=answer)
            again, still = validate(record, reply_fields(reply, FINAL_FIELDS), shown, config)
            valid = {**valid, **again}
            out.problems.extend(f"after one retry: {message}" for field, message in still.items() if field not in valid)
        out.agent, out.step, out.step_text = valid.get("agent"), valid.get("step"), valid.get("step_text")
        out.mode, out.description, out.reply = valid.get("mode"), valid.get("description"), reply
        return out
