"""The judge prompts of the attribution protocols, after Who&When's ``Automated_FA/Lib/utils.py``.

The wording follows the original all-at-once, step-by-step and binary-search prompts, with three
changes: steps are numbered by the record's own 0-based index (``Step 3 - WebSurfer: ...``) so a
prediction is directly an index; the error mode is asked for, either from the 18-mode menu or as
free text that is mapped to a mode afterwards (the label-menu ablation); and the gold answer line is
present only in the with-answer variant.

Long logs are cut to a character budget: every step keeps its head, ``max_step_chars`` at most and
an equal share of ``budget_chars`` at least ``min_step_chars``. The cut depends only on the record,
so the history shared by successive step-by-step prompts renders identically each time (which also
lets a llama.cpp server reuse its cached prefix).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

import yaml
from pydantic import BaseModel, Field

from failforge.attribution._record import FailureStep, LabelledFailure
from failforge.taxonomy import MODES

Messages = list[dict[str, str]]


class PromptConfig(BaseModel):
    with_answer: bool = True
    menu: bool = True
    #: With ``menu``: the taxonomy's own names and definitions, or the same codes reworded (the label-menu ablation).
    paraphrased_menu: bool = False
    max_step_chars: int = Field(default=600, ge=40)
    min_step_chars: int = Field(default=60, ge=10)
    budget_chars: int = Field(default=9000, ge=200, description="characters of trajectory text in one prompt")


def step_chars(record: LabelledFailure, config: PromptConfig) -> int:
    shown = max(1, len(record.candidate_steps()))
    return max(config.min_step_chars, min(config.max_step_chars, config.budget_chars // shown))


def step_body(step: FailureStep) -> str:
    text = " ".join(step.content.split())
    calls = " ".join(f"[call {c.name}({' '.join(c.arguments.split())})]" for c in step.tool_calls)
    return " ".join(x for x in (text, calls) if x) or "(empty)"


def render_step(step: FailureStep, limit: int) -> str:
    body = step_body(step)
    if len(body) > limit:
        body = body[: limit - 6].rstrip() + " [...]"
    return f"Step {step.index} - {step.agent}: {body}"


def render_steps(record: LabelledFailure, indices: list[int], config: PromptConfig) -> str:
    limit = step_chars(record, config)
    return "\n".join(render_step(record.steps[i], limit) for i in indices)


def _answer_line(record: LabelledFailure, config: PromptConfig) -> str:
    if config.with_answer and record.task.gold_answer:
        return f"The Answer for the problem is: {record.task.gold_answer}\n"
    return ""


@cache
def mode_paraphrases() -> dict[str, str]:
    text = resources.files("failforge").joinpath("data/prompts/mode_menu_paraphrased.yaml").read_text(encoding="utf-8")
    loaded: dict[str, str] = yaml.safe_load(text)
    return loaded


def mode_menu(config: PromptConfig | None = None) -> str:
    """The 18 codes with the taxonomy's names and definitions, or (``paraphrased_menu``) reworded: same codes,
    no names or families, every definition in other words (``data/prompts/mode_menu_paraphrased.yaml``)."""
    if config is not None and config.paraphrased_menu:
        return "\n".join(f"- {m.code}: {mode_paraphrases()[m.code]}" for m in MODES)
    return "\n".join(f"- {m.code}: {m.name} ({m.family.value}). {m.definition}" for m in MODES)


def _mode_instruction(config: PromptConfig) -> tuple[str, str]:
    """(what to ask, which answer line) for the error mode."""
    if config.menu:
        return (
            "the error mode, one code from this list:\n" + mode_menu(config) + "\n",
            "Error Mode: (one code from the list)",
        )
    return (
        "a short description of what kind of error it is, in your own words.\n",
        "Error Description: (your description)",
    )


def all_at_once(record: LabelledFailure, config: PromptConfig) -> Messages:
    ask_mode, mode_line = _mode_instruction(config)
    prompt = (
        "You are an AI assistant tasked with analyzing a multi-agent conversation history when solving a real world"
        f" problem. The problem is: {record.task.question}\n{_answer_line(record, config)}Identify which agent made an"
        " error, at which step, what kind of error it was, and explain the reason for the error. Here's the"
        " conversation:\n\n"
        + render_steps(record, record.candidate_steps(), config)
        + "\n\nBased on this conversation, please predict the following:\n1. The name of the agent who made a mistake"
        " that should be directly responsible for the wrong solution. If there are no agents that make obvious"
        " mistakes, decide one single agent in your mind. Directly output the name of the agent.\n2. In which step"
        f" the mistake agent first made the mistake: the number after 'Step' in the conversation.\n3. {ask_mode}4."
        " The reason for your prediction.\nPlease answer in the format:\nAgent Name: (your prediction)\nStep Number:"
        f" (your prediction)\n{mode_line}\nReason for Mistake: (your reason)\n"
    )
    return [
        {"role": "system", "content": "You are a helpful assistant skilled in analyzing conversations."},
        {"role": "user", "content": prompt},
    ]


def step_check(record: LabelledFailure, upto: int, config: PromptConfig) -> Messages:
    shown = [i for i in record.candidate_steps() if i <= upto]
    step = record.steps[upto]
    prompt = (
        "You are an AI assistant tasked with evaluating the correctness of each step in an ongoing multi-agent"
        " conversation aimed at solving a real-world problem. The problem being addressed is:"
        f" {record.task.question}\n{_answer_line(record, config)}Here is the conversation history up to the current"
        f" step:\n{render_steps(record, shown, config)}\nThe most recent step ({upto}) was by '{step.agent}'.\nYour"
        f" task is to determine whether this most recent agent's action (Step {upto}) contains an error that could"
        " hinder the problem-solving process or lead to an incorrect solution. Please respond with 'Yes' or 'No' and"
        " provide a clear explanation for your judgment. Note: Please avoid being overly critical in your evaluation."
        " Focus on errors that clearly derail the process. Respond ONLY in the format: 1. Yes/No.\n2. Reason: [Your"
        " explanation here]"
    )
    return [
        {"role": "system", "content": "You are a precise step-by-step conversation evaluator."},
        {"role": "user", "content": prompt},
    ]


def binary_half(record: LabelledFailure, indices: list[int], mid: int, config: PromptConfig) -> Messages:
    """Is the decisive error in indices[:mid+1] (upper) or indices[mid+1:] (lower)?"""
    start, end = indices[0], indices[-1]
    prompt = (
        "You are an AI assistant tasked with analyzing a segment of a multi-agent conversation. Multiple agents are"
        " collaborating to address a user query, with the goal of resolving the query through their collective"
        " dialogue.\nYour primary task is to identify the location of the most critical mistake within the provided"
        " segment. Determine which half of the segment contains the single step where this crucial error occurs,"
        " ultimately leading to the failure in resolving the user's query.\nThe problem to address is as follows:"
        f" {record.task.question}\n{_answer_line(record, config)}Review the following conversation segment from step"
        f" {start} to step {end}:\n\n{render_steps(record, indices, config)}\n\nBased on your analysis, predict whether"
        f" the most critical error is more likely to be located in the upper half (from step {start} to step"
        f" {indices[mid]}) or the lower half (from step {indices[mid + 1]} to step {end}) of this segment.\nPlease"
        " provide your prediction by responding with ONLY 'upper half' or 'lower half'. Remember, your answer should"
        " be based on identifying the mistake that directly contributes to the failure in resolving the user's query."
        " If no single clear error is evident, consider the step you believe is most responsible for the failure,"
        " allowing for subjective judgment, and base your answer on that."
    )
    return [
        {
            "role": "system",
            "content": "You are an AI assistant specializing in localizing errors in conversation segments.",
        },
        {"role": "user", "content": prompt},
    ]


def mode_question(record: LabelledFailure, step: int, config: PromptConfig) -> Messages:
    """After a protocol has found the step: what kind of error is it?"""
    ask_mode, mode_line = _mode_instruction(config)
    shown = [i for i in record.candidate_steps() if i <= step]
    prompt = (
        f"A multi-agent system failed to solve this problem: {record.task.question}\n"
        f"{_answer_line(record, config)}"
        f"Here is the conversation up to the step that caused the failure:\n{render_steps(record, shown, config)}\n\n"
        f"Step {step}, by '{record.steps[step].agent}', contains the decisive error. Give {ask_mode}"
        f"Answer in the format:\n{mode_line}\nReason: (one sentence)"
    )
    return [
        {"role": "system", "content": "You are a helpful assistant skilled in analyzing conversations."},
        {"role": "user", "content": prompt},
    ]
