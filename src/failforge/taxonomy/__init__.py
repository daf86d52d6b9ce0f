"""The 18-mode error taxonomy (Who&When Pro codes) used to steer an agent into one realistic mistake.

Each mode says what the failure is, at which steps it can realistically happen, and how a guide
model should nudge the agent into it; see :mod:`failforge.taxonomy._modes` for the rationale.
"""

from failforge.taxonomy._modes import (
    FAMILIES,
    MODES,
    Applicability,
    ErrorMode,
    Family,
    StepContext,
    applicable_modes,
    get_mode,
    taxonomy_table,
)

__all__ = [
    "Family",
    "Applicability",
    "StepContext",
    "ErrorMode",
    "MODES",
    "FAMILIES",
    "get_mode",
    "applicable_modes",
    "taxonomy_table",
]
