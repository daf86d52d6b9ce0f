"""Agent loops failforge drives through its boundaries.

A harness is a class registered in :data:`failforge.plugins.harnesses` with a ``name``, a pydantic
``Config`` (recorded in every trajectory's ``harness.config``, so the exact loop can be rebuilt) and
``run(client, model, instruction, toolbox) -> final answer | None``. It knows nothing of recording,
replay or injection: those happen at the client it is given and at the toolbox.

Optional parts, for several agents:

- ``roster() -> list[AgentProfile]``: the agents it runs (names, roles, tools, whom they address).
  Without it the run's roster is open: its single agent is ``agent``, and agents that identify
  themselves at the model boundary join as they first call.
- ``agent_resolver``: a callable returning the :class:`~failforge.llm.AgentIdentity` of the agent
  running now, for frameworks whose agents share one client (the in-process identity source).
- ``for_environment(domains, budget)`` (classmethod): build the config from an environment's tool
  split, and ``scripted_oracle(calls, final)``: play the whole team from a fixed tool-call sequence
  (oracle seeds). See :mod:`failforge.seeds`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

import openai
from pydantic import BaseModel, ValidationError

from failforge.errors import ConfigError
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, check_roster
from failforge.trajectory import ComponentSpec


class Harness(Protocol):
    name: str
    Config: ClassVar[type[BaseModel]]
    config: BaseModel

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None: ...


def harness_from_spec(spec: ComponentSpec) -> Harness:
    """Rebuild the exact harness a trajectory was recorded with."""
    cls = harnesses.get(spec.name)
    try:
        config = cls.Config.model_validate(spec.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "<config>"
        raise ConfigError(f"harness {spec.name!r}: config field '{field}': {first['msg']}") from exc
    return cls(config)  # type: ignore[no-any-return]


def harness_spec(harness: Harness) -> ComponentSpec:
    return ComponentSpec(name=harness.name, config=harness.config.model_dump())


def harness_roster(harness: Harness) -> list[AgentProfile] | None:
    """The agents the harness declares (checked: unique names, known roles), or None for an open roster."""
    declare = getattr(harness, "roster", None)
    if declare is None:
        return None
    declared = declare()
    if declared is None:  # a harness whose config may or may not name its agents (the external harness)
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


__all__ = ["Harness", "harness_from_spec", "harness_roster", "harness_spec"]
