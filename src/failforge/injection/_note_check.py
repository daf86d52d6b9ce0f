"""Is a guide model's reply a note for this mode at all? Checked before stage 2, so a junk reply costs no agent call.

A weak or unwilling guide answers "I cannot do that.", echoes the instructions it was given, or writes
advice that could be about any task ("Be careful with the details."). Sent to the agent, such a reply
does not steer it towards the mode; if the branch then fails for another reason, the record would be
labelled with a mode its step does not show. So each is a rejection with stage ``guide``.

The checks are lexical on purpose: they must be cheap, deterministic and explainable in one line.
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[a-z0-9_]+")
_REFUSAL = re.compile(
    r"^\W*(?:i(?:'m| am)? (?:sorry|afraid|unable)|i (?:cannot|can't|can not|won't|will not|must"
    r" decline|refuse)|sorry\b|"
    r"as an ai\b|unfortunately\b|i'm not able|i am not able|i do not feel comfortable)",
    re.IGNORECASE,
)
#: Words of the prompt's frame (its headings and how steps are rendered), never evidence that a note is about the task.
_FRAME = frozenset(
    "task steps so far next step in the successful run error mode how to craft it reply with the one sentence now "
    "tool returned calls says nothing and to from with for the you your that this then than".split()
)
#: Consecutive words copied from the instructions or the mode's text that make a reply a restatement, not a note.
_COPIED_RUN = 8


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _stem(word: str) -> str:
    """Crude, on purpose: "transactions", "transaction" and "transacted" meet; so do "figures" and "figure"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e") if len(word) > 4 else word


def _content(words: list[str]) -> set[str]:
    """Content words, stemmed; an identifier also gives its parts (``get_most_recent_transactions`` names
    transactions)."""
    parts = [p for w in words for p in ([w, *w.split("_")] if "_" in w else [w])]
    return {_stem(w) for w in parts if (len(w) >= 4 or any(c.isdigit() for c in w)) and w not in _FRAME}


def _longest_shared_run(note: list[str], source: list[str]) -> int:
    """Length of the longest run of words the note shares verbatim with ``source``."""
    grams = {tuple(source[i : i + _COPIED_RUN]) for i in range(max(0, len(source) - _COPIED_RUN + 1))}
    return (
        _COPIED_RUN
        if any(tuple(note[i : i + _COPIED_RUN]) in grams for i in range(max(0, len(note) - _COPIED_RUN + 1)))
        else 0
    )


def note_problem(note: str, request: dict[str, Any], *, instructions: str, mode_text: str) -> str | None:
    """Why ``note`` is not a steering note for this attempt, or None if it is one.

    ``request`` is the guide request (its user message carries the task and the run so far);
    ``instructions`` and ``mode_text`` are the parts of the prompt that are not about the task.
    """
    stripped = note.strip()
    if not stripped:
        return "the guide's reply is empty"
    if _REFUSAL.search(stripped):
        return f"the guide refused instead of writing a note: {stripped[:80]!r}"
    words = _words(stripped)
    frame = _words(instructions) + _words(mode_text)
    if len(words) >= _COPIED_RUN and _longest_shared_run(words, frame) >= _COPIED_RUN:
        return f"the guide restated its instructions instead of writing a note: {stripped[:80]!r}"
    user = next(
        (
            str(m.get("content") or "")
            for m in request.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "user"
        ),
        "",
    )
    about_task = _content(_words(user)) - _content(frame)
    if not (_content(words) & about_task):
        return f"the guide's note names nothing of this task or run (no tool, value or word from it): {stripped[:80]!r}"
    return None
