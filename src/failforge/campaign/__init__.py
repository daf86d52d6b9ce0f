"""Campaigns: a generation job from a campaign file to gold / rejected / failed files.

Plan (seeds × steps × modes × samples) → SQLite ledger (resumable, exactly-once) → executor (thread
pool or Ray) → driver appends each result whole → manifest with config, hash, versions and counts.
"""

from failforge.campaign._attempt import AttemptResult, Rejection, decisiveness, run_attempt
from failforge.campaign._config import CampaignConfig, DecisivenessConfig, FiltersConfig, PlanConfig, load_campaign
from failforge.campaign._ledger import Ledger, repair_jsonl
from failforge.campaign._models import Models, ResolvedModels, open_models
from failforge.campaign._run import FAILED, GOLD, LEDGER, MANIFEST, REJECTED, CampaignSummary, load_seeds, run_campaign, versions

__all__ = [
    "FAILED", "GOLD", "LEDGER", "MANIFEST", "REJECTED",
    "AttemptResult", "CampaignConfig", "CampaignSummary", "DecisivenessConfig", "FiltersConfig", "Ledger", "Models",
    "PlanConfig", "Rejection", "ResolvedModels", "decisiveness", "load_campaign", "load_seeds", "open_models",
    "repair_jsonl", "run_attempt", "run_campaign", "versions",
]
