"""Agent loops failforge drives through its boundaries, and a registry to rebuild them from a spec."""

from __future__ import annotations

from typing import Any, Protocol

import openai

from failforge.errors import ConfigError
from failforge.harnesses.agentdojo_pipeline import AgentDojoPipelineConfig, AgentDojoPipelineHarness
from failforge.harnesses.tool_calling import ToolCallingAgent, ToolCallingAgentConfig
from failforge.trajectory import ComponentSpec


class Harness(Protocol):
    name: str

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None: ...


def harness_from_spec(spec: ComponentSpec) -> Harness:
    """Rebuild the exact harness a trajectory was recorded with."""
    if spec.name == ToolCallingAgent.name:
        return ToolCallingAgent(ToolCallingAgentConfig.model_validate(spec.config))
    if spec.name == AgentDojoPipelineHarness.name:
        return AgentDojoPipelineHarness(AgentDojoPipelineConfig.model_validate(spec.config))
    raise ConfigError(f"unknown harness {spec.name!r}; known: {ToolCallingAgent.name}, {AgentDojoPipelineHarness.name}")


def harness_spec(harness: Harness) -> ComponentSpec:
    config = getattr(harness, "config", None)
    return ComponentSpec(name=harness.name, config=config.model_dump() if config is not None else {})


__all__ = [
    "AgentDojoPipelineConfig",
    "AgentDojoPipelineHarness",
    "Harness",
    "ToolCallingAgent",
    "ToolCallingAgentConfig",
    "harness_from_spec",
    "harness_spec",
]
