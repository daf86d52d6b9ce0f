"""The one runner: sessions (a plan, a run log, both boundaries, the trajectory), episodes and replays.

- :class:`Session` owns one run: its :class:`Plan` (record | replay, whole or a prefix | branch at t |
  resume), its :class:`~failforge.runlog.RunLog`, the model boundary and the tool boundary, and the
  assembly of the finished trajectory. Everything that runs goes through one: in-process episodes,
  prefix replays, branches, the proxy's runs, external agents, judge conversations.
- :func:`run_episode` / :func:`run_from_seed` run a harness in an environment through a session.
- :func:`replay` replays a seed (or its prefix) with no live model and reports fidelity.
- :func:`branch` replays a seed to step t, changes step t (a steering note, or a fixed response), continues live.
"""

from failforge.replay._branch import NOTE_PREFIX, Branch, StageTwo, branch, steer_request
from failforge.replay._episode import (
    PROXY_HARNESS,
    EpisodeResult,
    check_outcome,
    check_runnable,
    check_seed_roster,
    run_episode,
    run_from_seed,
)
from failforge.replay._replay import ReplayReport, replay
from failforge.replay._session import Session, new_run_id
from failforge.runlog import PLAN_MODES, Mode, Plan

__all__ = [
    "PLAN_MODES",
    "NOTE_PREFIX",
    "Branch",
    "StageTwo",
    "branch",
    "steer_request",
    "PROXY_HARNESS",
    "EpisodeResult",
    "Mode",
    "Plan",
    "ReplayReport",
    "Session",
    "check_outcome",
    "check_runnable",
    "check_seed_roster",
    "new_run_id",
    "replay",
    "run_episode",
    "run_from_seed",
]
