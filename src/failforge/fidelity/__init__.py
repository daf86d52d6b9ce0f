"""Fidelity: audit whole seed sets (replayed through :mod:`failforge.replay`), check a harness against its seeds,
and the self-check every environment passes (:func:`self_check`: does replay in it mean anything?)."""

from failforge.fidelity._audit import AuditReport, EnvironmentAudit, audit
from failforge.fidelity._harness_check import check_harness
from failforge.fidelity._self_check import (
    ALTERED_ANSWER,
    MAX_DROPPED_WRITES,
    SelfCheck,
    SelfCheckReport,
    assert_self_check,
    self_check,
)

__all__ = [
    "ALTERED_ANSWER",
    "MAX_DROPPED_WRITES",
    "AuditReport",
    "EnvironmentAudit",
    "SelfCheck",
    "SelfCheckReport",
    "assert_self_check",
    "audit",
    "check_harness",
    "self_check",
]
