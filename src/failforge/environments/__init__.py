"""Environments: the tool boundary and the benchmarks behind it.

An environment is a plugin registered in :data:`failforge.plugins.environments` that implements the
:class:`~failforge.environments._base.Environment` base class (optional hooks with documented defaults);
:func:`open_environment` rebuilds a fresh
episode from the spec a trajectory recorded. Plugin modules import their benchmark (AgentDojo,
Playwright, Docker) only inside the functions that need it, so listing environments is cheap.
:func:`failforge.fidelity.self_check` is the self-check every environment runs in its tests.
"""

from __future__ import annotations

from failforge.environments._base import (
    Environment,
    Episode,
    Fingerprint,
    GroundTruth,
    NoOptions,
    ToolBoundary,
    Toolbox,
    ToolResult,
    assert_tool_step,
    fingerprint_of,
    observe_tool_call,
    parse_tool_arguments,
)
from failforge.errors import ConfigError
from failforge.plugins import environments
from failforge.trajectory import ComponentSpec


def environment(name: str) -> Environment:
    """The environment plugin registered as ``name`` (an instance)."""
    return environments.get(name)()  # type: ignore[no-any-return]


def open_environment(spec: ComponentSpec) -> Episode:
    """A fresh episode of the environment ``spec`` names, rebuilt from the recorded spec."""
    try:
        return environment(spec.name).open(spec)
    except ImportError as exc:
        raise ConfigError(
            f"environment {spec.name!r} needs an optional dependency that is not installed ({exc}); run"
            " scripts/install.sh"
        ) from exc


__all__ = [
    "ToolBoundary",
    "fingerprint_of",
    "Environment",
    "Episode",
    "Fingerprint",
    "GroundTruth",
    "NoOptions",
    "ToolResult",
    "Toolbox",
    "assert_tool_step",
    "environment",
    "observe_tool_call",
    "open_environment",
    "parse_tool_arguments",
]
