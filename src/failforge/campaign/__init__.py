"""Campaigns: a generation job from a campaign file to gold / rejected / failed files.

Plan (every registered gold kind's plan over the seeds) → ledger (resumable, exactly once) → executor (thread
pool, worker processes or Ray; :mod:`failforge.jobs`) running :func:`failforge.gold.run_job` → the driver appends
each result whole → manifest with config, hash, versions and counts, and the dataset card. No benchmark is named
here: kinds and filters come from the registries.
"""

from failforge.campaign._run import (
    FAILED,
    GOLD,
    LEDGER,
    MANIFEST,
    REJECTED,
    CampaignSummary,
    load_seeds,
    plan_campaign,
    run_campaign,
    select_seeds,
    versions,
)
from failforge.gold import (
    AttemptResult,
    CampaignConfig,
    DecisivenessConfig,
    FiltersConfig,
    Models,
    PlanConfig,
    Rejection,
    ResolvedModels,
    load_campaign,
    open_models,
)

__all__ = [
    "FAILED",
    "GOLD",
    "LEDGER",
    "MANIFEST",
    "REJECTED",
    "AttemptResult",
    "CampaignConfig",
    "CampaignSummary",
    "DecisivenessConfig",
    "FiltersConfig",
    "Models",
    "PlanConfig",
    "Rejection",
    "ResolvedModels",
    "load_campaign",
    "load_seeds",
    "open_models",
    "plan_campaign",
    "run_campaign",
    "select_seeds",
    "versions",
]
