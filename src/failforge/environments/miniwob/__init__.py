"""MiniWoB++ in a pinned headless Chromium: the browser environment (issue 3).

A browser run goes through the same pipeline as AgentDojo (``run_episode`` / ``record`` / ``replay`` /
``branch``): the registry maps ``"miniwob"`` to :func:`open_episode`, tools run live through
``observe_tool_call`` and every step's DOM fingerprint is asserted on replay (``DomDrift``), page loads
come from the SHA-256 tool cache (``CacheMiss`` names the URL), browser failures are
``InfrastructureError``.

Modules, one job each: ``_config`` (the pinned, recorded settings), ``_server`` (loopback HTTP server
for the miniwob package's html), ``_browser`` (Playwright + Debian Chromium, pinned context, fake
clock, seeded Math.random, watchdog), ``_network`` (route handler through the tool cache), ``_dom``
(bids, observation text, fingerprint), ``_actions`` (the tools), ``_episode`` (the episode and its
toolbox and evaluator), ``_oracle`` (scripted demonstration policies), ``_seeds`` (demonstration seeds
recorded through the real harness).
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
from failforge.environments.miniwob._seeds import default_seed, demo_harness, demo_seed, demo_seeds

__all__ = [
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
    "default_seed",
    "demo_harness",
    "demo_seed",
    "demo_seeds",
    "dom_fingerprint",
    "env_spec",
    "open_episode",
    "parse_observation",
    "screenshot_path",
    "snapshot",
]
