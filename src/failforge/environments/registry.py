"""Which environment a trajectory ran in, rebuilt from its recorded spec.

An environment kind is a name (recorded as ``Trajectory.environment.name``) and a factory that turns
the recorded ``ComponentSpec`` into a fresh episode. Factories are imported lazily, so AgentDojo,
Playwright or Docker load only when a trajectory needs them. The table is static configuration, not
mutable state: adding an environment means adding a line here.

An episode is a context manager with ``instruction()``, ``task_record()``, ``toolbox(log)`` (tool
schemas plus ``call(name, arguments, call_id)``, every call going through
:func:`failforge.environments._base.observe_tool_call`) and ``evaluate(final_output, steps)``.
"""

from __future__ import annotations

import importlib
from typing import Any

from failforge.errors import ConfigError
from failforge.trajectory import ComponentSpec

FACTORIES: dict[str, str] = {
    "agentdojo": "failforge.environments.agentdojo_env:open_episode",
    "miniwob": "failforge.environments.miniwob:open_episode",
    "humaneval": "failforge.environments.humaneval:open_episode",
}


def open_environment(spec: ComponentSpec) -> Any:
    target = FACTORIES.get(spec.name)
    if target is None:
        raise ConfigError(f"unknown environment {spec.name!r}; known: {', '.join(sorted(FACTORIES))}")
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"environment {spec.name!r} needs an optional dependency that is not installed ({exc}); run scripts/install.sh") from exc
    return getattr(module, attr)(spec)
