"""The attempt pipeline: gold kinds, how one job runs, how a candidate is judged.

- :class:`GoldKind` (plugins in :data:`failforge.plugins.gold_kinds`): one kind of change — its spec, its plan over
  seeds, its branch, the filters that judge it, its label. The action kind (an agent's step steered into an error
  mode) is :mod:`failforge.injection`'s; AgentDojo contributes an injected observation, a compliance flip and an
  injected refusal (:mod:`failforge.environments.agentdojo.gold`).
- :func:`run_job`: branch → filters → label for any kind; drift and infrastructure caught once.
- :class:`FilterContext` / :func:`run_filters`: every verdict comes from a filter registered in
  :data:`failforge.plugins.filters`; the built-in ones are in :mod:`failforge.filters`.
- the results (:class:`AttemptResult`, :class:`Rejection`), the campaign configuration every job reads
  (:class:`CampaignConfig`), the endpoints (:class:`Models`) and the decisiveness check's original arms.
"""

from failforge.gold._arms import (
    ARM_MODE,
    ARMS,
    NOT_CHECKED,
    ArmResult,
    ArmRun,
    ArmSpec,
    OriginalArm,
    arm_key,
    arm_unsettled,
    continuing_agent,
    not_decisive,
    run_original_arm,
)
from failforge.gold._config import (
    CampaignConfig,
    ConformanceConfig,
    DecisivenessConfig,
    FiltersConfig,
    InjectionsConfig,
    PlanConfig,
    PoolsConfig,
    load_campaign,
)
from failforge.gold._engine import JobContext, JobResult, job_kind, parse_job, run_job
from failforge.gold._filtering import FilterContext, FilterFailed, default_filters, run_filters, verdict
from failforge.gold._kind import Candidate, GoldKind, JobSpec, Planned
from failforge.gold._models import Models, ResolvedModels, open_models
from failforge.gold._result import (
    AttemptResult,
    ErrorKind,
    Rejection,
    Stage,
    error_info,
    error_kind,
    failed,
    rejected,
    rejected_by,
)

__all__ = [
    "ARMS",
    "ARM_MODE",
    "NOT_CHECKED",
    "ArmResult",
    "ArmRun",
    "ArmSpec",
    "AttemptResult",
    "CampaignConfig",
    "Candidate",
    "ConformanceConfig",
    "DecisivenessConfig",
    "ErrorKind",
    "FilterContext",
    "FilterFailed",
    "FiltersConfig",
    "GoldKind",
    "InjectionsConfig",
    "JobContext",
    "JobResult",
    "JobSpec",
    "Models",
    "OriginalArm",
    "PlanConfig",
    "Planned",
    "PoolsConfig",
    "Rejection",
    "ResolvedModels",
    "Stage",
    "arm_key",
    "arm_unsettled",
    "continuing_agent",
    "default_filters",
    "error_info",
    "error_kind",
    "failed",
    "job_kind",
    "load_campaign",
    "not_decisive",
    "open_models",
    "parse_job",
    "rejected",
    "rejected_by",
    "run_filters",
    "run_job",
    "run_original_arm",
    "verdict",
]
