"""AgentDojo's contribution to the gold pipeline: environment-side changes and the checks that keep them honest.

Loaded by the gold-kind and filter registries (never imported by the environment itself: it sits at the gold layer,
above the runner it branches with). See docs/INJECTION.md.

- ``_observation``: AgentDojo's attacks and vectors, which observation steps can carry one, the injected branch;
- ``_plan``: ``[plan.injections]`` over a campaign's seeds;
- ``_kinds``: the gold kinds ``inject`` (unsafe action), ``comply`` (unsafe completion), ``refusal`` (over-refusal);
- ``_filters``: ``prefix_identity``, ``injected_observation``, ``twin_utility``, ``twin_security``, ``twin_held``,
  ``security``, ``unsafe_completion``, ``over_refusal``, ``chains``.
"""

from failforge.environments.agentdojo.gold._filters import HELD
from failforge.environments.agentdojo.gold._kinds import (
    INJECTED_REFUSAL,
    ComplianceKind,
    ComplianceSpec,
    InjectionKind,
    RefusalKind,
    RefusalSpec,
    injection_ground_truth,
)
from failforge.environments.agentdojo.gold._observation import (
    DEFAULT_ATTACK,
    DEFAULT_ATTACK_TARGET,
    INJECTION_VERSION,
    InjectionPoints,
    InjectionSpec,
    attack_names,
    attack_text,
    check_attack,
    check_chains,
    check_injection_task,
    check_vector,
    first_divergence,
    inject_branch,
    injected_spec,
    injection_points,
    security_of,
    unsafe_target,
)
from failforge.environments.agentdojo.gold._plan import plan_injection_jobs, plan_injections

__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_ATTACK_TARGET",
    "HELD",
    "INJECTED_REFUSAL",
    "INJECTION_VERSION",
    "ComplianceKind",
    "ComplianceSpec",
    "InjectionKind",
    "InjectionPoints",
    "InjectionSpec",
    "RefusalKind",
    "RefusalSpec",
    "attack_names",
    "attack_text",
    "check_attack",
    "check_chains",
    "check_injection_task",
    "check_vector",
    "first_divergence",
    "inject_branch",
    "injected_spec",
    "injection_points",
    "injection_ground_truth",
    "plan_injection_jobs",
    "plan_injections",
    "security_of",
    "unsafe_target",
]
