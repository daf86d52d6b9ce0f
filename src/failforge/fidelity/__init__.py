"""Fidelity: audit whole seed sets (replayed through :mod:`failforge.replay`) and check a harness against its seeds."""

from failforge.fidelity._audit import AuditReport, EnvironmentAudit, audit
from failforge.fidelity._harness_check import check_harness

__all__ = ["AuditReport", "EnvironmentAudit", "audit", "check_harness"]
