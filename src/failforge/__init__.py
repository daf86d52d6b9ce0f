"""failforge: gold failure trajectories for LLM agents, by exact replay and on-policy error injection.

The public API is re-exported here; internals live in private modules. Names are resolved lazily so
``import failforge`` stays cheap (AgentDojo and the model runtime load only when used).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # schema
    "Task": "failforge.trajectory",
    "Step": "failforge.trajectory",
    "ToolCall": "failforge.trajectory",
    "ModelCallRef": "failforge.trajectory",
    "Trajectory": "failforge.trajectory",
    "GoldLabel": "failforge.trajectory",
    "Outcome": "failforge.trajectory",
    "FilterVerdict": "failforge.trajectory",
    "load_jsonl": "failforge.trajectory",
    "write_jsonl": "failforge.trajectory",
    "append_jsonl": "failforge.trajectory",
    # errors
    "FailforgeError": "failforge.errors",
    "DriftError": "failforge.errors",
    "PromptDrift": "failforge.errors",
    "EnvironmentDrift": "failforge.errors",
    "EnvStateDrift": "failforge.errors",
    "CacheMiss": "failforge.errors",
    "RecordingExhausted": "failforge.errors",
    "InfrastructureError": "failforge.errors",
    "SeedFormatError": "failforge.errors",
    "SeedIntegrityError": "failforge.errors",
    # pipeline
    "record": "failforge.seeds",
    "oracle_seed": "failforge.seeds",
    "audit": "failforge.fidelity",
    "run_episode": "failforge.replay",
    "Session": "failforge.replay",
    "Plan": "failforge.runlog",
    "run_from_seed": "failforge.replay",
    "branch": "failforge.replay",
    "plan_attempts": "failforge.injection",
    "get_mode": "failforge.taxonomy",
    "MODES": "failforge.taxonomy",
    "ToolCache": "failforge.cache",
    "ModelEndpoint": "failforge.llm",
    "LocalModelServer": "failforge.llm",
    "GoldKind": "failforge.gold",
    "run_job": "failforge.gold",
    "CampaignConfig": "failforge.gold",
    "run_campaign": "failforge.campaign",
    "open_models": "failforge.gold",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'failforge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
