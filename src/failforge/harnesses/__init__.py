"""Agent loops failforge drives through its boundaries.

A harness is a subclass of :class:`Harness` (:mod:`failforge.harnesses._base`) registered in
:data:`failforge.plugins.harnesses`, with a ``name``, a pydantic ``Config`` (recorded in every
trajectory's ``harness.config``, so the exact loop can be rebuilt) and
``run(client, model, instruction, toolbox) -> final answer | None``. It knows nothing of recording,
replay or injection: those happen at the client it is given and at the toolbox.

Optional parts, each with a default on the base class (see :class:`Harness`): ``roster()`` (None: an
open roster whose single agent is ``agent``), ``agent_resolver()`` (None: no in-process identity),
``label`` (the name), ``stats`` (None), and for team harnesses (``splits_tools = True``)
``for_environment(domains, budget=...)`` and ``scripted_oracle(calls, final)``. See :mod:`failforge.seeds`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from failforge.errors import ConfigError
from failforge.harnesses._base import Harness
from failforge.harnesses._frameworks import (
    LEAD_PROMPT,
    WORKER_PROMPT,
    Answer,
    FrameworkTeamConfig,
    TeamPolicy,
    function_call,
    text_of,
)
from failforge.harnesses._team import TeamMember
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, check_roster
from failforge.trajectory import ComponentSpec


def harness_from_spec(spec: ComponentSpec) -> Harness:
    """Rebuild the exact harness a trajectory was recorded with."""
    cls = harnesses.get(spec.name)
    try:
        config = cls.Config.model_validate(spec.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "<config>"
        raise ConfigError(f"harness {spec.name!r}: config field '{field}': {first['msg']}") from exc
    harness: Harness = cls(config)
    return harness


def harness_spec(harness: Harness) -> ComponentSpec:
    return ComponentSpec(name=harness.name, config=harness.config.model_dump())


def harness_roster(harness: Harness) -> list[AgentProfile] | None:
    """The agents the harness declares (checked: unique names, known roles), or None for an open roster."""
    declared = harness.roster()
    if declared is None:  # an open roster (the default), or a config that names no agents (the external harness)
        return None
    profiles = list(declared)
    check_roster(profiles)
    return profiles


def __getattr__(name: str) -> Any:
    # Convenience re-exports of the built-in harnesses, resolved lazily (AgentDojo loads only when asked).
    lazy = {
        "ToolCallingAgent": "failforge.harnesses.tool_calling",
        "ToolCallingAgentConfig": "failforge.harnesses.tool_calling",
        "AgentDojoPipelineHarness": "failforge.harnesses.agentdojo_pipeline",
        "AgentDojoPipelineConfig": "failforge.harnesses.agentdojo_pipeline",
        "OrchestratorWorkers": "failforge.harnesses.orchestrator_workers",
        "OrchestratorWorkersConfig": "failforge.harnesses.orchestrator_workers",
        "PlanExecuteVerify": "failforge.harnesses.plan_execute_verify",
        "PlanExecuteVerifyConfig": "failforge.harnesses.plan_execute_verify",
    }
    if name in lazy:
        import importlib

        return getattr(importlib.import_module(lazy[name]), name)
    raise AttributeError(f"module 'failforge.harnesses' has no attribute {name!r}")


__all__ = [
    "LEAD_PROMPT",
    "WORKER_PROMPT",
    "Answer",
    "FrameworkTeamConfig",
    "Harness",
    "TeamMember",
    "TeamPolicy",
    "function_call",
    "harness_from_spec",
    "harness_roster",
    "harness_spec",
    "text_of",
]
