"""Injection: plan (step, mode) pairs, write the steering note (guide model or rules), produce ã_t on-policy, branch."""

from failforge.injection._branch import Branch, branch
from failforge.injection._injector import (
    GUIDE_SYSTEM,
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
from failforge.injection._observation import (
    DEFAULT_ATTACK,
    DEFAULT_ATTACK_TARGET,
    InjectionSpec,
    attack_names,
    attack_text,
    inject_branch,
    injection_points,
    judge_injection,
    label_injection,
)
from failforge.injection._planner import AttemptSpec, candidate_points, plan_attempts, plan_injections, step_context
from failforge.injection._rules import GUIDE_KINDS, RULE_MODES, RULES_GUIDE, RULES_VERSION, guide_kind_for, rules_note, wrong_value

__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_ATTACK_TARGET",
    "InjectionSpec",
    "attack_names",
    "attack_text",
    "inject_branch",
    "injection_points",
    "judge_injection",
    "label_injection",
    "plan_injections",
    "GUIDE_KINDS",
    "GUIDE_SYSTEM",
    "NOT_FEASIBLE",
    "NOTE_PREFIX",
    "RULES_GUIDE",
    "RULES_VERSION",
    "RULE_MODES",
    "AttemptSpec",
    "Branch",
    "GuideResult",
    "StageTwo",
    "action_signature",
    "branch",
    "candidate_points",
    "guide_kind_for",
    "guide_request",
    "plan_attempts",
    "render_step",
    "rules_note",
    "steer_request",
    "step_context",
    "write_steering_note",
    "wrong_value",
]
