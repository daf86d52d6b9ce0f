"""Injection: plan (step, mode) pairs, write the steering note, produce ã_t on-policy, branch."""

from failforge.injection._branch import Branch, branch
from failforge.injection._injector import (
    NOT_FEASIBLE,
    NOTE_PREFIX,
    GuideResult,
    StageTwo,
    action_signature,
    guide_request,
    render_step,
    steer_request,
    write_steering_note,
)
from failforge.injection._planner import AttemptSpec, candidate_points, plan_attempts, step_context

__all__ = [
    "NOT_FEASIBLE",
    "NOTE_PREFIX",
    "AttemptSpec",
    "Branch",
    "GuideResult",
    "StageTwo",
    "action_signature",
    "branch",
    "candidate_points",
    "guide_request",
    "plan_attempts",
    "render_step",
    "steer_request",
    "step_context",
    "write_steering_note",
]
