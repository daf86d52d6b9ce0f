"""DA-Bench's closed-form scoring, reimplemented from InfiAgent's ``examples/DA-Agent/eval_closed_form.py``.

The rule, as upstream applies it to one response: every ``@name[value]`` in the response is found with the
regular expression ``@(\\w+)\\[(.*?)\\]`` (non-greedy, so a value ends at its first ``]``); when a name occurs
twice the later value wins (upstream builds a dict from the pairs). Each labelled sub-answer is correct when the
response's value equals the label's as a string, or else when both read as floats (Python's ``float``: surrounding
whitespace, ``1_000``, ``1e3`` and non-ASCII digits such as ``١٠٠٠`` read as 1000; a thousands comma does not)
within an absolute ``1e-6``; a sub-answer the response lacks is
wrong. The question is correct only when every sub-answer is. The label is a dict too (upstream's
``label_answers``): a name it repeats is checked once, against its last value. Upstream leaves an empty response
out of its accuracy; for one run failforge calls it a failure, since no answer was given.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

ANSWER_PATTERN = re.compile(r"@(\w+)\[(.*?)\]")
TOLERANCE = 1e-6


class SubAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    label: str
    found: str | None
    correct: bool


class Score(BaseModel):
    """One response scored against one label: per sub-answer, and the question's verdict."""

    model_config = ConfigDict(frozen=True)

    sub_answers: list[SubAnswer]
    extracted: dict[str, str]

    @property
    def correct(self) -> bool:
        return bool(self.sub_answers) and all(s.correct for s in self.sub_answers)

    @property
    def fraction(self) -> float:
        """Upstream's proportional score for this question (correct sub-answers over labelled ones)."""
        return sum(s.correct for s in self.sub_answers) / len(self.sub_answers) if self.sub_answers else 0.0


_OPENING = re.compile(r"@(\w+)\[")


def extract_answers(response: str) -> dict[str, str]:
    """``{name: value}`` for every ``@name[value]`` in ``response``; a repeated name keeps its last value.

    Exactly what ``dict(ANSWER_PATTERN.findall(response))`` gives (a value runs to the first ``]``, never across a
    line break), in linear time: the pattern's non-greedy ``.*?`` scans to the end of the line from every ``@name[``
    that has no ``]`` after it, so a 1 MB answer of such openings took about half an hour."""
    found: dict[str, str] = {}
    end = len(response)
    close = newline = -1  # the next ']' and line break at or after the current opening (``end``: none)
    pos = 0
    while (opening := _OPENING.search(response, pos)) is not None:
        start = opening.end()
        if close < start:
            close = response.find("]", start)
            close = end if close < 0 else close
        if newline < start:
            newline = response.find("\n", start)
            newline = end if newline < 0 else newline
        if close < newline:
            found[opening.group(1)] = response[start:close]
            pos = close + 1
        else:
            pos = opening.start() + 1
    return found


def is_equal(found: str | None, label: str) -> bool:
    """Upstream's ``is_equal``: string equality, else both as floats within 1e-6; anything unreadable is unequal."""
    if found == label:
        return True
    if found is None:
        return False
    try:
        return abs(float(found) - float(label)) < TOLERANCE
    except (TypeError, ValueError, OverflowError):
        return False


def score(response: str | None, common_answers: list[tuple[str, str]]) -> Score:
    """Score one response against a question's ``common_answers``. Like upstream, the label is read as a dict: a
    name the label repeats (question 734 lists ``correlation_coefficient`` five times) is checked once, against its
    last value."""
    extracted = extract_answers(response or "")
    labels = dict(common_answers)
    subs = [
        SubAnswer(
            name=name,
            label=value,
            found=extracted.get(name),
            correct=bool(response) and is_equal(extracted.get(name), value),
        )
        for name, value in labels.items()
    ]
    return Score(sub_answers=subs, extracted=extracted)


def format_answer(answers: list[tuple[str, str]]) -> str:
    """Answers written the way the questions ask: ``@name[value]`` pairs, space-separated."""
    return " ".join(f"@{name}[{value}]" for name, value in answers)


__all__ = ["ANSWER_PATTERN", "Score", "SubAnswer", "extract_answers", "format_answer", "is_equal", "score"]
