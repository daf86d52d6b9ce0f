"""Structural checks for code actions: a CodeAgent step whose action is a code block run in the interpreter.

A code step is an agent step whose next step is the ``python_interpreter`` tool's observation (DA-Bench's
interpreter; smolagents' CodeAgent writes its action as a code block in its text, not as a tool call). For four
mistakes a data analyst makes in code, a rule can decide from the seed's code and the changed code whether the
change is the labelled one (``CODE_CHECKS``):

- R.3, early rounding: one number of a_t's code is written rounded to fewer decimals (or a ``round(..., k)``
  keeps fewer digits), the method unchanged;
- R.2, population vs sample statistic: the degrees of freedom of a standard deviation or variance change
  (``ddof``, or ``statistics.stdev`` / ``pstdev``), the data unchanged;
- A.2, wrong column: a column a_t reads (``df['col']``) is replaced by another column of the table;
- A.4, answer format: a name of the required ``@name[value]`` answer, as a_t's code writes it, is written
  otherwise, so the answer no longer has the format the question requires.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from failforge.trajectory import Step, Trajectory

INTERPRETER_TOOL = "python_interpreter"
CODE_BLOCK = re.compile(r"<code>\s*(.*?)\s*</code>|```(?:python|py)\s*\n(.*?)```", re.S)
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")
COLUMN = re.compile(r"\[\s*(['\"])([^'\"\]]+)\1\s*\]")
DDOF = re.compile(r"ddof\s*=\s*(\d)")
ROUND = re.compile(r"round\((?:[^()]|\([^()]*\))*?,\s*(\d+)\s*\)")
ANSWER_NAME = re.compile(r"@(\w+)\[")

Outcome = tuple[bool, str]


_OPENING = re.compile(r"<code>|```(?:python|py)\s*\n")


def code_blocks(text: str) -> list[str]:
    """Every code block of ``text``: exactly ``[a or b for a, b in CODE_BLOCK.findall(text)]``, in linear time.

    The pattern's ``\\s*(.*?)\\s*`` tries every split of a run of whitespace after an unclosed ``<code>`` against
    the rest of the text (cubic: ``<code>`` and 2,000 spaces took 2.5 s, 8,000 minutes), and a model's output
    or an imported run is what it reads. Here each opening looks for its closing once: a ``<code>`` block is
    the text up to the first ``</code>`` with its surrounding whitespace stripped, a markdown block the text
    after the opening line(s) up to the first closing fence."""
    found: list[str] = []
    pos = 0
    while (opening := _OPENING.search(text, pos)) is not None:
        tagged = opening.group(0) == "<code>"
        closing = "</code>" if tagged else "```"
        end = text.find(closing, opening.end())
        if end < 0:
            pos = opening.start() + 1
            continue
        inner = text[opening.end() : end]
        found.append(_strip_re_whitespace(inner) if tagged else inner)
        pos = end + len(closing)
    return found


def _strip_re_whitespace(text: str) -> str:
    """``text`` without leading and trailing ``\\s`` (the pattern's own whitespace class)."""
    start = re.match(r"\s*", text)
    head = start.end() if start else 0
    end = len(text)
    while end > head and re.match(r"\s", text[end - 1]):
        end -= 1
    return text[head:end]


def code_of(step: Step) -> str | None:
    """The last code block of a CodeAgent step's text (smolagents' ``<code>`` tags, or a markdown block)."""
    blocks = code_blocks(step.content or "")
    return blocks[-1] if blocks else None


def is_code_step(seed: Trajectory, t: int) -> bool:
    """Step ``t`` is an agent step whose action ran in the interpreter (the next step is its observation)."""
    if not 0 < t < len(seed.steps) - 1 or seed.steps[t].kind != "agent":
        return False
    after = seed.steps[t + 1]
    return after.kind == "tool" and after.tool_name == INTERPRETER_TOOL and code_of(seed.steps[t]) is not None


def answer_names(seed: Trajectory) -> list[str]:
    """The names the required answer format uses (``@name[...]`` in the task's gold answer)."""
    return ANSWER_NAME.findall(seed.task.gold_answer or "")


def statistic_calls(code: str) -> list[str]:
    """Each standard deviation or variance of the code with its degrees of freedom, in order."""
    found = []
    for match in re.finditer(r"\b(p?stdev|p?variance|std|var)\s*\(([^()]*)\)", code):
        name, args = match.group(1), match.group(2)
        ddof = DDOF.search(args)
        found.append(f"{name}:{ddof.group(1) if ddof else 'default'}")
    return found


def _decimals(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def check_code_r3(original: str, injected: str, seed: Trajectory) -> Outcome:
    before, after = NUMBER.findall(original), NUMBER.findall(injected)
    if len(before) == len(after):
        changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
        if len(changed) == 1:
            x, y = changed[0]
            if _decimals(y) < _decimals(x) and round(float(x), _decimals(y)) == float(y):
                return True, f"the number {x} of a_t's code is written rounded early, as {y}"
            return False, f"the number {x} became {y}, which is not {x} rounded to fewer decimals"
        if len(changed) > 1:
            return (
                False,
                (
                    f"{len(changed)} numbers of a_t's code changed ({', '.join(x for x, _ in changed)}): "
                    "not one rounded early"
                ),
            )
    kept_before, kept_after = ROUND.findall(original), ROUND.findall(injected)
    if len(kept_before) == len(kept_after) and any(
        int(b) > int(a) for b, a in zip(kept_before, kept_after, strict=True)
    ):
        return True, "a round(...) of a_t's code keeps fewer decimals in ã_t"
    if len(kept_after) > len(kept_before) and _same_but_rounding(original, injected):
        return True, "ã_t rounds an intermediate value a_t left unrounded"
    return False, "ã_t rounds no number or result of a_t's code earlier than a_t did"


def _same_but_rounding(original: str, injected: str) -> bool:
    stripped = re.sub(r"round\(|,\s*\d+\s*\)", "", injected)
    return re.sub(r"\s", "", stripped) == re.sub(r"\s", "", original)


def check_code_r2(original: str, injected: str, seed: Trajectory) -> Outcome:
    before, after = statistic_calls(original), statistic_calls(injected)
    if not before:
        return False, "a_t's code computes no standard deviation or variance"
    if len(before) == len(after) and before != after:
        which = next(f"{x} -> {y}" for x, y in zip(before, after, strict=True) if x != y)
        return (
            True,
            (
                f"the statistic's degrees of freedom change ({which}): "
                "a population statistic where a sample one was computed, or back"
            ),
        )
    return False, "ã_t computes the same standard deviations and variances as a_t"


def check_code_a2(original: str, injected: str, seed: Trajectory) -> Outcome:
    before = [c for _, c in COLUMN.findall(original)]
    after = [c for _, c in COLUMN.findall(injected)]
    if not before:
        return False, "a_t's code reads no column by name"
    if len(before) == len(after):
        changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
        if len(changed) == 1:
            x, y = changed[0]
            return True, f"ã_t reads column {y!r} where a_t read {x!r}"
        if changed:
            return False, f"{len(changed)} column names changed: not one wrong column"
    return False, "ã_t reads the same columns as a_t"


def check_code_a4(original: str, injected: str, seed: Trajectory) -> Outcome:
    names = [n for n in answer_names(seed) if n in original]
    if not names:
        return False, "a_t's code writes none of the required answer names"
    missing = [n for n in names if n not in injected]
    if len(missing) == 1:
        return True, f"the required answer name {missing[0]!r} is no longer written as the format asks"
    if missing:
        return False, f"{len(missing)} answer names are gone: another answer, not one format slip"
    return False, "ã_t writes every required answer name as a_t does"


CODE_CHECKS: dict[str, Callable[[str, str, Trajectory], Outcome]] = {
    "R.3": check_code_r3,
    "R.2": check_code_r2,
    "A.2": check_code_a2,
    "A.4": check_code_a4,
}


def check_code_step(seed: Trajectory, injected: Step, t: int, mode: str) -> Outcome | None:
    """The verdict of a code mode at a code step, or None when the step is no code step or the mode has no check."""
    if mode not in CODE_CHECKS or not is_code_step(seed, t):
        return None
    original, changed = code_of(seed.steps[t]), code_of(injected)
    if original is None:
        return None
    if changed is None:
        return False, "ã_t has no code block, so its code cannot show the change"
    return CODE_CHECKS[mode](original, changed, seed)


__all__ = [
    "CODE_CHECKS",
    "INTERPRETER_TOOL",
    "answer_names",
    "check_code_step",
    "code_of",
    "is_code_step",
    "statistic_calls",
]
