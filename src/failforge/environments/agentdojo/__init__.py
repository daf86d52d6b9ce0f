"""AgentDojo (v1 suites) as a failforge environment, and what it contributes above the environment layer.

- ``_env``: the environment plugin: suites, tools, the frozen clock, the state fingerprint, the evaluator (utility,
  and security when an injection is served);
- ``gold``: AgentDojo's gold kinds and filters (an injected observation, a compliance flip, an injected refusal; the
  twin and security checks): a subpackage at the gold layer, loaded by the gold-kind and filter registries only.
"""

from failforge.environments.agentdojo._env import (
    BENCHMARK_VERSION,
    DEFAULT_CLOCK,
    SUITES,
    AgentDojoEnvironment,
    AgentDojoEpisode,
    AgentDojoOptions,
    agentdojo_version,
    env_spec,
    frozen_clock,
    get_suite,
    list_user_tasks,
    state_fingerprint,
    tool_domain,
    tool_domains,
)

__all__ = [
    "BENCHMARK_VERSION",
    "DEFAULT_CLOCK",
    "SUITES",
    "AgentDojoEnvironment",
    "AgentDojoEpisode",
    "AgentDojoOptions",
    "agentdojo_version",
    "env_spec",
    "frozen_clock",
    "get_suite",
    "list_user_tasks",
    "state_fingerprint",
    "tool_domain",
    "tool_domains",
]
