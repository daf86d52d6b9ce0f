"""Replay: re-execute a seed through both boundaries with fidelity assertions, and record new seeds."""

from failforge.environments.registry import open_environment
from failforge.replay._audit import AuditReport, EnvironmentAudit, audit
from failforge.replay._episode import EpisodeResult, run_episode
from failforge.replay._replayer import ReplayReport, new_id, record, replay

__all__ = ["AuditReport", "EnvironmentAudit", "audit", "EpisodeResult", "ReplayReport", "new_id", "open_environment", "record", "replay", "run_episode"]
