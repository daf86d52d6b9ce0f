"""Fidelity: replay seeds through both boundaries with no live model, and audit whole seed sets."""

from failforge.fidelity._audit import AuditReport, EnvironmentAudit, audit
from failforge.fidelity._harness_check import check_harness
from failforge.fidelity._replay import ReplayReport, replay

__all__ = ["AuditReport", "EnvironmentAudit", "ReplayReport", "audit", "check_harness", "replay"]
