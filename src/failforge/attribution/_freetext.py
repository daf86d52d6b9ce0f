"""Mapping a judge's free-text description of an error to one of the 18 modes, without a model.

The label-menu ablation needs the judge to describe the error *without* seeing the 18 modes, and the
description to be scored on the same 18 labels afterwards. A second judge call would put the menu
back in front of a model; a deterministic lexical match keeps the mapping free, reproducible and
identical for every judge. Each mode is represented by its name and definition; the description's
words (lowercased, stop words dropped, a crude suffix strip) are weighted by inverse mode frequency
and the best-scoring mode wins, ties to the earlier code. No overlap at all maps to None (invalid).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from failforge.taxonomy import MODES

_STOP = frozenset(
    "a an the and or of to in on at by for from with as is are was were be been it its this that these those not no "
    "such than then their there which who whom what when where how into onto over under agent agents step steps error "
    "errors one some any other own".split()
)
_WORD = re.compile(r"[a-z]+")


def _stem(word: str) -> str:
    for suffix in (
        "ations",
        "ation",
        "ating",
        "ated",
        "ates",
        "ate",
        "ings",
        "ing",
        "ies",
        "ied",
        "ed",
        "es",
        "s",
        "ly",
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def tokens(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2]


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, float]]:
    names = {m.code: set(tokens(m.name)) for m in MODES}
    bodies = {m.code: set(tokens(f"{m.name} {m.definition}")) for m in MODES}
    df: dict[str, int] = {}
    for words in bodies.values():
        for w in words:
            df[w] = df.get(w, 0) + 1
    idf = {w: math.log(1 + len(MODES) / n) for w, n in df.items()}
    return names, bodies, idf


def map_to_mode(text: str | None) -> str | None:
    """The mode whose name and definition best match ``text``; name words count double."""
    if not text:
        return None
    names, bodies, idf = _index()
    words = set(tokens(text))
    best, best_score = None, 0.0
    for mode in MODES:
        score = sum(idf.get(w, 0.0) for w in words & bodies[mode.code]) + sum(
            idf.get(w, 0.0) for w in words & names[mode.code]
        )
        if score > best_score:
            best, best_score = mode.code, score
    return best
