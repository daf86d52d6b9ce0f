"""MiniWoB++ in a pinned headless Chromium: the browser environment.

A browser run goes through the same pipeline as AgentDojo (``run_episode`` / ``record`` / ``replay`` /
``branch``): the environment registry maps ``"miniwob"`` to :class:`MiniWoBEnvironment`, tools run live through
``observe_tool_call`` and every step's DOM fingerprint is asserted on replay (``DomDrift``), page loads
come from the SHA-256 tool cache (``CacheMiss`` names the URL), browser failures are
``InfrastructureError``.

Modules, one job each: ``_config`` (the pinned, recorded settings), ``_server`` (loopback HTTP server
for the miniwob package's html), ``_browser`` (Playwright + Debian Chromium, pinned context, fake
clock, seeded Math.random, watchdog), ``_network`` (route handler through the tool cache), ``_dom``
(bids, observation text, fingerprint), ``_actions`` (the tools), ``_episode`` (the episode and its
toolbox and evaluator), ``_oracle`` (scripted demonstration policies), ``_plugin`` (the environment plugin:
task names, recorded specs, the policies as oracles).
"""

from failforge.environments.miniwob._config import DomFault, MiniWoBConfig, Viewport, default_cache_dir
from failforge.environments.miniwob._dom import (
    EXCLUDE,
    NORMALISER_VERSION,
    DomSnapshot,
    EpisodeStatus,
    ObservedNode,
    dom_fingerprint,
    parse_observation,
    snapshot,
)
from failforge.environments.miniwob._episode import (
    ENVIRONMENT_NAME,
    MiniWoBEpisode,
    MiniWoBToolbox,
    available_tasks,
    env_spec,
    open_episode,
    screenshot_path,
)
from failforge.environments.miniwob._oracle import DEMO_TASKS, POLICIES
from failforge.environments.miniwob._plugin import (
    BROWSER_SYSTEM_PROMPT,
    MiniWoBEnvironment,
    MiniWoBOptions,
    default_seed,
    demonstration_script,
)
from failforge.environments.miniwob._vision_policy import read_screen

__all__ = [
    "read_screen",
    "DEMO_TASKS",
    "DomFault",
    "DomSnapshot",
    "ENVIRONMENT_NAME",
    "EXCLUDE",
    "EpisodeStatus",
    "MiniWoBConfig",
    "MiniWoBEpisode",
    "MiniWoBToolbox",
    "NORMALISER_VERSION",
    "ObservedNode",
    "POLICIES",
    "Viewport",
    "available_tasks",
    "default_cache_dir",
    "BROWSER_SYSTEM_PROMPT",
    "MiniWoBEnvironment",
    "MiniWoBOptions",
    "default_seed",
    "demonstration_script",
    "dom_fingerprint",
    "env_spec",
    "open_episode",
    "parse_observation",
    "screenshot_path",
    "snapshot",
]
