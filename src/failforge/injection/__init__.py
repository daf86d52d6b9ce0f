"""The action kind: plan (step, mode) pairs, write the steering note (a guide model or rules), branch at t.

- ``_planner``: (step, mode) pairs where the mode applies (the taxonomy's applicability rules), seeded;
- ``_injector`` (stage 1): the guide model's note, checked before any agent call (``_note_check``);
- ``_rules``: notes written by rules for the structural modes (and R.1 at some steps), with the derivation recorded;
- ``_action``: the ``action`` gold kind (and the decisiveness check's ``original-arm`` job) on the one engine.

Stage 2 (the decisive agent's own request plus the note) and the branch itself are the runner's
(:func:`failforge.replay.branch`); they are re-exported here because they are what "inject" means to a caller.
"""

from failforge.injection._action import ActionKind, OriginalArmKind, original_arm, with_agent_command
from failforge.injection._injector import (
    GUIDE_SYSTEM,
    NOT_FEASIBLE,
    GuideResult,
    guide_request,
    render_step,
    write_steering_note,
)
from failforge.injection._planner import AttemptSpec, candidate_points, plan_attempts, step_context
from failforge.injection._rules import (
    GUIDE_KINDS,
    RULE_MODES,
    RULES_GUIDE,
    RULES_VERSION,
    guide_kind_for,
    rules_note,
    wrong_value,
)
from failforge.replay import NOTE_PREFIX, Branch, StageTwo, branch, steer_request

__all__ = [
    "GUIDE_KINDS",
    "GUIDE_SYSTEM",
    "NOT_FEASIBLE",
    "NOTE_PREFIX",
    "RULES_GUIDE",
    "RULES_VERSION",
    "RULE_MODES",
    "ActionKind",
    "AttemptSpec",
    "Branch",
    "GuideResult",
    "OriginalArmKind",
    "StageTwo",
    "branch",
    "candidate_points",
    "guide_kind_for",
    "guide_request",
    "original_arm",
    "plan_attempts",
    "render_step",
    "rules_note",
    "steer_request",
    "step_context",
    "with_agent_command",
    "write_steering_note",
    "wrong_value",
]
