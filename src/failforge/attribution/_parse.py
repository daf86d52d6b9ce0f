"""Reading judge replies. Lenient about layout, strict about values: a step is an integer, a mode is
one of the 18 codes, an agent is whatever name the judge wrote (it is compared, normalised, when
scoring). Anything that cannot be read stays None and the reply is kept verbatim beside it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from failforge.attribution._codes import FAILFORGE_CODES
from failforge.llm import last_complete_block

_FIELDS = ("Agent Name", "Step Number", "Error Mode", "Error Description", "Reason for Mistake", "Reason")
_LOOKAHEAD = "|".join(re.escape(f) for f in _FIELDS)
_FIELD = re.compile(
    rf"(?:\*\*)?(?P<key>{_LOOKAHEAD})(?:\*\*)?[ \t]*:[ \t]*(?:\*\*)?[ \t]*(?P<val>.*?)(?=\n["
    rf" \t]*(?:\d\.\s*)?(?:\*\*)?(?:{_LOOKAHEAD})(?:\*\*)?[ \t]*:|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_CODE = re.compile(r"(?<![A-Za-z0-9])((?:PL|P|R|A|V|C)\.\d+)(?![0-9])", re.IGNORECASE)
_INT = re.compile(r"-?\d+")
_YES_NO = re.compile(r"^\W*(?:1\s*[.)]\s*|answer\s*:\s*)?\W*(yes|no)\b", re.IGNORECASE)


@dataclass
class Fields:
    agent: str | None = None
    step: int | None = None
    step_text: str | None = None
    mode: str | None = None
    description: str | None = None
    reason: str | None = None
    problems: list[str] = field(default_factory=list)


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip().splitlines()[0].strip() if value.strip() else ""
    text = text.strip("*`'\" ").strip()
    if text.startswith("(") and text.endswith(")"):
        return None  # the format's placeholder copied back
    return text or None


def fields(reply: str, required: tuple[str, ...] = ("Agent Name", "Step Number")) -> dict[str, str]:
    """The reply's fields, from its last complete answer block (a judge that answers, reconsiders and answers
    again is read by its second answer, as Who&When Pro's harness reads it); without a complete block, each
    field's first value."""
    pairs = [(m.group("key").title(), m.group("val").strip()) for m in _FIELD.finditer(reply or "")]
    return last_complete_block(pairs, required)


def code_in(text: str | None) -> str | None:
    """The first of the 18 failforge codes named in ``text``."""
    for match in _CODE.finditer(text or ""):
        code = match.group(1).upper()
        if code in FAILFORGE_CODES:
            return code
    return None


def step_in(value: str | None) -> tuple[int | None, str | None]:
    """(integer, digits as written) of the first number in a step field."""
    if not value:
        return None, None
    match = _INT.search(value)
    return (int(match.group(0)), match.group(0)) if match else (None, None)


def parse_all_at_once(reply: str, *, menu: bool) -> Fields:
    found = fields(reply)
    out = Fields()
    out.agent = _clean(found.get("Agent Name"))
    out.step, out.step_text = step_in(_clean(found.get("Step Number")))
    out.reason = (found.get("Reason For Mistake") or found.get("Reason") or "").strip() or None
    if menu:
        out.mode = code_in(found.get("Error Mode")) or code_in(reply)
    else:
        out.description = (found.get("Error Description") or found.get("Error Mode") or "").strip() or None
    if out.agent is None:
        out.problems.append("no 'Agent Name:' value")
    if out.step is None:
        out.problems.append("no integer 'Step Number:' value")
    if menu and out.mode is None:
        out.problems.append("no error-mode code of the 18")
    if not menu and out.description is None:
        out.problems.append("no 'Error Description:' value")
    return out


def parse_mode_reply(reply: str, *, menu: bool) -> tuple[str | None, str | None]:
    """(code, free-text description) from a mode question's reply."""
    found = fields(reply, ("Error Mode",) if menu else ("Error Description",))
    if menu:
        return code_in(found.get("Error Mode")) or code_in(reply), None
    text = (found.get("Error Description") or found.get("Error Mode") or reply or "").strip()
    return None, text or None


def yes_no(reply: str) -> bool | None:
    match = _YES_NO.match(reply or "")
    return None if match is None else match.group(1).lower() == "yes"


def half(reply: str) -> str | None:
    text = (reply or "").lower()
    if "upper half" in text:
        return "upper"
    if "lower half" in text:
        return "lower"
    return None
