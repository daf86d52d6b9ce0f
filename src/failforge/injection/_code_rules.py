"""Rules for code actions: steering notes that change one thing of a CodeAgent's code block at step t.

At a code step (:func:`failforge.judgement._code.is_code_step`) the action is the code a_t runs in the
interpreter, so a structural mistake is an edit of that code. Four edits, each the mistake a data analyst makes
and each decided afterwards by the matching check of :mod:`failforge.judgement._code`:

- R.3 early rounding: one decimal number of the code is written rounded to one decimal fewer (else a
  ``round(x, k)`` keeps ``k - 1`` decimals);
- R.2 population vs sample statistic: a standard deviation or variance gets the other degrees of freedom
  (pandas' default ``ddof=1`` becomes ``ddof=0``; numpy's default 0 becomes 1; ``stdev`` <-> ``pstdev``);
- A.2 wrong column: a column the code reads by name becomes another column of the table, taken from what the
  agent saw before t (the header or dtypes its earlier code printed);
- A.4 answer format: one required answer name, as the code writes it, loses its underscores.

The note gives the changed code as a quoted block (the payload, as the rules for tool calls name the value):
stage 2 still has the agent's own model write ã_t. Every choice is drawn from the attempt's seeded generator.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from failforge.judgement import COLUMN, NUMBER, ROUND, answer_names, code_of, is_code_step
from failforge.trajectory import Trajectory

CODE_RULE_MODES: tuple[str, ...] = ("A.2", "A.4", "R.2", "R.3")

Made = tuple[str, dict[str, Any]] | str


def _note(what: str, code: str) -> str:
    return f"{what} Write this step's code as:\n```python\n{code}\n```"


def _r3(seed: Trajectory, t: int, code: str, rng: random.Random) -> Made:
    candidates = [m for m in NUMBER.finditer(code) if len(m.group(0).split(".")[1]) >= 2]
    if candidates:
        m = candidates[rng.randrange(len(candidates))]
        digits = len(m.group(0).split(".")[1]) - 1
        new = f"{round(float(m.group(0)), digits):.{digits}f}"
        if new != m.group(0):
            changed = code[: m.start()] + new + code[m.end() :]
            return _note(f"Round {m.group(0)} to {digits} decimal place(s) at this point.", changed), {
                "edit": "early rounding",
                "original": m.group(0),
                "value": new,
            }
    kept = list(ROUND.finditer(code))
    for m in kept:
        k = int(m.group(1))
        if k > 0:
            changed = code[: m.start(1)] + str(k - 1) + code[m.end(1) :]
            return _note(f"Keep {k - 1} decimal place(s) in this rounding.", changed), {
                "edit": "early rounding",
                "original": k,
                "value": k - 1,
            }
    return "a_t's code has no decimal number and no round(...) to round earlier"


_STAT = re.compile(r"\b(p?stdev|std|var|p?variance)\s*\(([^()]*)\)")


def _r2(seed: Trajectory, t: int, code: str, rng: random.Random) -> Made:
    for m in _STAT.finditer(code):
        name, args = m.group(1), m.group(2)
        start, end = m.span()
        if name in ("stdev", "variance", "pstdev", "pvariance"):
            swapped = name[1:] if name.startswith("p") else "p" + name
            new = f"{swapped}({args})"
            what = f"Use statistics.{swapped} here."
        else:
            ddof = re.search(r"ddof\s*=\s*(\d)", args)
            numpy_call = code[max(0, start - 3) : start] in ("np.",) or "numpy." in code[max(0, start - 6) : start]
            current = int(ddof.group(1)) if ddof else (0 if numpy_call else 1)
            other = 1 - current if current in (0, 1) else 0
            new_args = (
                re.sub(r"ddof\s*=\s*\d", f"ddof={other}", args)
                if ddof
                else (f"{args}, ddof={other}" if args.strip() else f"ddof={other}")
            )
            new = f"{name}({new_args})"
            what = f"Compute this {'standard deviation' if name == 'std' else 'variance'} with ddof={other}."
        changed = code[:start] + new + code[end:]
        return _note(what, changed), {"edit": "population vs sample statistic", "original": m.group(0), "value": new}
    return "a_t's code computes no standard deviation or variance"


#: A printed list of quoted names. An item holds no backslash, so a text has one way to match: with ``[^']*`` an
#: item's closing ``\'`` could be read two ways, and a list of such items with no ``]`` took 2^n steps (30 items,
#: minutes) on every plan over the seed.
_LISTED = re.compile(r"\[((?:\\?'[^'\\]*\\?',?\s*)+)\]")
#: A ``dtypes`` line: a name (single spaces inside), two or more spaces, the type. ``[\w .]*?`` before ``\s{2,}``
#: tried every split of a run of spaces (quadratic: a printed line of 50,000 spaces took about 13 s).
_DTYPE_LINE = re.compile(r"(?m)^([A-Za-z_](?:[\w.]| (?! ))*)\s{2,}(?:int|float|object|bool|datetime)\d*\b")


def _columns_seen(seed: Trajectory, t: int) -> list[str]:
    """Column names the agent saw before t: the ``df.columns`` list or the ``dtypes`` lines its code printed."""
    seen: list[str] = []
    for step in seed.steps[1:t]:
        if step.kind != "tool":
            continue
        text = step.content or ""
        for listed in _LISTED.findall(text):
            seen += re.findall(r"'([^'\\]+)'", listed)
        seen += _DTYPE_LINE.findall(text.replace("\\n", "\n"))
    return list(dict.fromkeys(s.strip() for s in seen if s.strip()))


def _a2(seed: Trajectory, t: int, code: str, rng: random.Random) -> Made:
    used = list(COLUMN.finditer(code))
    if not used:
        return "a_t's code reads no column by name"
    columns = _columns_seen(seed, t)
    m = used[rng.randrange(len(used))]
    others = [c for c in columns if c != m.group(2) and c not in {u.group(2) for u in used}]
    if not others:
        return f"the agent saw no other column than {m.group(2)!r} before this step"
    other = others[rng.randrange(len(others))]
    changed = code[: m.start(2)] + other + code[m.end(2) :]
    return _note(f"Read the column {other!r} here.", changed), {
        "edit": "wrong column",
        "original": m.group(2),
        "value": other,
    }


def _a4(seed: Trajectory, t: int, code: str, rng: random.Random) -> Made:
    written = {
        n: re.search(rf"(['\"]){re.escape(n)}\1|@{re.escape(n)}\[", code) for n in answer_names(seed) if "_" in n
    }
    names = [n for n, m in written.items() if m is not None]
    if not names:
        return "a_t's code writes no required answer name (with an underscore to lose) as text"
    name = names[rng.randrange(len(names))]
    spaced = name.replace("_", " ")
    m = written[name]
    assert m is not None
    changed = code[: m.start()] + m.group(0).replace(name, spaced) + code[m.end() :]
    return _note(f"Write the answer name {name!r} as {spaced!r}.", changed), {
        "edit": "answer format",
        "original": name,
        "value": spaced,
    }


CODE_RULES: dict[str, Callable[[Trajectory, int, str, random.Random], Made]] = {
    "R.3": _r3,
    "R.2": _r2,
    "A.2": _a2,
    "A.4": _a4,
}


def code_rule(seed: Trajectory, t: int, mode: str, rng: random.Random) -> Made | None:
    """The code rule's note for ``mode`` at a code step; None: ``t`` is no code step, or ``mode`` has no code rule."""
    if mode not in CODE_RULES or not is_code_step(seed, t):
        return None
    code = code_of(seed.steps[t])
    assert code is not None
    return CODE_RULES[mode](seed, t, code, rng)


__all__ = ["CODE_RULES", "CODE_RULE_MODES", "code_rule"]
