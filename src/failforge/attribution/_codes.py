"""Error-mode codes: failforge's 18 codes, the released Who&When Pro taxonomy's 17, and how they map.

failforge uses the codes of the Who&When Pro paper's table (18 modes, 6 families). The released
dataset's ``taxonomy.yaml`` numbers the Planning and Action modes differently and has no separate
hallucinated-tool mode, so the mapping is lossy in one direction: failforge A.2 (tool parameter) and
A.3 (hallucinated tool) both become release A.1. Going back, release A.1 becomes failforge A.2.
Codes outside both tables (the project page's viewer also knows P.3, A.1 "wrong tool", V.3) are kept
verbatim as the source's code and mapped to no failforge mode.
"""

from __future__ import annotations

from failforge.taxonomy import MODES, get_mode

#: failforge (paper) code -> released taxonomy.yaml code, where they differ.
RELEASE_CODES: dict[str, str] = {"A.2": "A.1", "A.3": "A.1", "A.4": "A.2", "A.5": "A.3", "A.6": "A.4", "PL.3": "PL.2"}

#: released code -> failforge code (A.1 is ambiguous between failforge A.2 and A.3; A.2 is chosen).
FROM_RELEASE: dict[str, str] = {"A.1": "A.2", "A.2": "A.4", "A.3": "A.5", "A.4": "A.6", "PL.2": "PL.3"}

#: The 17 codes of the released taxonomy.yaml, in file order, with the release's names.
RELEASE_TAXONOMY: tuple[tuple[str, str], ...] = (
    ("P.1", "Visual misidentification"),
    ("P.2", "Spatial/grounding error"),
    ("R.1", "Hallucination"),
    ("R.2", "Reasoning error"),
    ("R.3", "Numerical/calculation error"),
    ("R.4", "Task misunderstanding"),
    ("PL.1", "Ineffective Planning"),
    ("PL.2", "Goal drift"),
    ("A.1", "Tool parameter/invocation error"),
    ("A.2", "Output format/syntax error"),
    ("A.3", "Premature termination"),
    ("A.4", "Repetitive/looping behavior"),
    ("V.1", "Context/memory loss"),
    ("V.2", "Inadequate or incorrect verification"),
    ("C.1", "Delegation/orchestration error"),
    ("C.2", "Communication failure"),
    ("C.3", "Over-reliance on other agents"),
)

FAILFORGE_CODES: tuple[str, ...] = tuple(m.code for m in MODES)
_RELEASE_SET = frozenset(code for code, _ in RELEASE_TAXONOMY)


def canonical_code(code: str | None) -> str | None:
    """A failforge code as written in the table ("pl.3 " -> "PL.3"), or None if it is not one."""
    if not code:
        return None
    key = "".join(str(code).split()).upper()
    return key if key in FAILFORGE_CODES else None


def to_release(code: str) -> str:
    return RELEASE_CODES.get(code, code)


def from_release(code: str | None) -> str | None:
    """The failforge code for a released code, or None when the release code has no counterpart."""
    if not code:
        return None
    key = "".join(str(code).split()).upper()
    if key not in _RELEASE_SET:
        return None
    return FROM_RELEASE.get(key, key)


def family_of(code: str | None) -> str | None:
    canon = canonical_code(code)
    return get_mode(canon).family.value if canon else None
