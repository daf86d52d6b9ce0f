"""Seeds: successful runs to branch from, recorded through the real harness for any environment.

- :func:`record` runs a harness live (a model endpoint or a scripted oracle playing the model) and
  packages the run as a trajectory with its evaluator outcome.
- :func:`oracle_seed` records the environment's own oracle (AgentDojo's ground truth, HumanEval's
  canonical solution, a MiniWoB++ demonstration policy) through the environment's default harness.
  Because the oracle answers through the model boundary like any model, an oracle seed carries the
  exact requests the harness sent, so it replays and branches like a model-recorded seed; only
  ``oracle=True`` and ``source="oracle"`` on its model calls tell them apart.

Environments sit below this layer and know nothing of it: they expose tasks, specs, an oracle and a
default harness (see :class:`failforge.environments.Environment`); recording lives here once.

Several agents: :func:`harness_for` builds a team harness (``splits_tools``) for an environment from
the environment's tool split (``tool_domains(spec)``: one worker per domain), and :func:`oracle_seed`
with a team harness records a team oracle: the harness's ``scripted_oracle`` plays every agent
from the environment's ``ground_truth(spec)`` (a fixed tool-call sequence and answer), a scripted
orchestrator or planner handing each call to the agent that owns the tool. It goes through the same
record path, so these seeds carry each agent's recorded requests exactly as model-recorded seeds do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from failforge.environments import environment
from failforge.errors import ConfigError
from failforge.harnesses import Harness, harness_from_spec, harness_spec
from failforge.llm import Responder
from failforge.plugins import harnesses
from failforge.replay import Plan, run_episode
from failforge.trajectory import ComponentSpec, Trajectory

DEFAULT_AGENT_MODEL = "smollm2-135m-instruct"


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def record(
    *,
    env_spec: ComponentSpec,
    harness: Harness,
    model: ComponentSpec,
    upstream: Responder,
    oracle: bool = False,
    trajectory_id: str | None = None,
    deadline: float | None = None,
) -> Trajectory:
    """Run live (or from an oracle) and return the recorded trajectory with its evaluator outcome.

    The stored environment spec is the plugin's ``stored_spec`` (e.g. a page cache recorded in this run
    is replayed from, not fetched again, when the seed is replayed). A fresh id names the harness when
    it is not the environment's default, so seeds of two harnesses never look alike.
    """
    tid = trajectory_id or new_id(f"seed-{seed_label(harness)}" if not _is_default(harness, env_spec) else "seed")
    result = run_episode(
        env_spec=env_spec,
        harness=harness,
        model=model.name,
        plan=Plan.record(),
        upstream=upstream,
        run_id=tid,
        source="oracle" if oracle else "model",
        deadline=deadline,
    )
    return result.session.trajectory(
        task=result.task,
        outcome=result.outcome,
        harness=harness_spec(harness),
        environment=environment(env_spec.name).stored_spec(env_spec),
        model=model,
        oracle=oracle,
        provenance={
            "recorded_at": result.session.created_at,
            "upstream": getattr(upstream, "name", type(upstream).__name__),
            **result.extra,
        },
    )


def seed_label(harness: Harness) -> str:
    """How a seed id names its harness: the harness's own ``label`` (an external agent names its framework), else its
    name."""
    return harness.label


def _is_default(harness: Harness, spec: ComponentSpec) -> bool:
    default = environment(spec.name).default_harness(spec).name

    def canonical(name: str) -> str:
        return harnesses.canonical(name) if name in harnesses else name

    return canonical(default) == canonical(harness.name)


def environment_options(env: str, options: BaseModel | Mapping[str, Any] | None = None) -> BaseModel:
    """The environment's ``Options`` model from a dict (CLI or campaign), with a one-line error on a bad field."""
    cls = environment(env).Options
    if isinstance(options, cls):
        return options
    data = options.model_dump() if isinstance(options, BaseModel) else dict(options or {})
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "<options>"
        raise ConfigError(
            f"{env} option '{field}': {first['msg']} (known options: {', '.join(cls.model_fields)})"
        ) from exc


def env_spec(env: str, task_id: str, options: BaseModel | Mapping[str, Any] | None = None) -> ComponentSpec:
    """The environment spec a run of ``task_id`` in ``env`` records."""
    return environment(env).spec(task_id, environment_options(env, options))


def default_harness(spec: ComponentSpec) -> Harness:
    """The harness the environment records its seeds with."""
    return harness_from_spec(environment(spec.name).default_harness(spec))


#: Model-call budget and answer length when the environment's default harness does not say.
_DEFAULT_BUDGET = 12
_DEFAULT_MAX_TOKENS = 256


def harness_for(name: str | None, spec: ComponentSpec, **overrides: Any) -> Harness:
    """Harness ``name`` set up for the environment run ``spec`` (None: the environment's default).

    A team harness (``splits_tools``: built by ``for_environment``) gets its team from the environment's tool
    split and its budgets from the environment's default harness (its ``max_model_calls`` and
    ``max_tokens``); ``overrides`` replace config fields. Any other harness gets the default's config
    when it is the default harness, else its own defaults.
    """
    plugin = environment(spec.name)
    default = plugin.default_harness(spec)
    if name is None:
        return harness_from_spec(default.model_copy(update={"config": {**default.config, **overrides}}))
    canonical = harnesses.canonical(name)
    cls: type[Harness] = harnesses.get(canonical)
    if not cls.splits_tools:
        config = default.config if canonical == harnesses.canonical(default.name) else {}
        return harness_from_spec(ComponentSpec(name=canonical, config={**config, **overrides}))
    domains = plugin.tool_domains(spec)
    if domains is None:
        raise ConfigError(no_tool_domains(canonical, spec.name))
    budget = int(default.config.get("max_model_calls", _DEFAULT_BUDGET))
    max_tokens = default.config.get("max_tokens", _DEFAULT_MAX_TOKENS)
    return cls.for_environment(domains, budget=budget, max_tokens=max_tokens, **overrides)


def no_tool_domains(harness: str, env: str) -> str:
    """The one-line error for a team harness asked to run in an environment whose tools cannot be split."""
    return (
        f"harness {harness!r} splits the tools among its agents, but environment {env!r} does not say how (its"
        " tool_domains gives none)"
    )


def scripted_team(harness: Harness, env: str, spec: ComponentSpec) -> Responder | None:
    """The team oracle of a team harness for ``spec``, or None for a single-agent harness (the environment's oracle
    plays it)."""
    if not harness.splits_tools:
        return None
    truth = environment(env).ground_truth(spec)
    if truth is None:
        raise ConfigError(
            f"environment {env!r} has no fixed oracle sequence (ground_truth) for harness {harness.name!r} to play;"
            " record model seeds with `failforge record`"
        )
    calls, final = truth
    return harness.scripted_oracle(calls, final)


def oracle_seed(
    env: str,
    task_id: str,
    options: BaseModel | Mapping[str, Any] | None = None,
    *,
    model: str = DEFAULT_AGENT_MODEL,
    harness: Harness | str | None = None,
    harness_config: Mapping[str, Any] | None = None,
) -> Trajectory:
    """Record the environment's oracle for one task through ``harness`` (a harness, a registered name,
    or None for the environment's default; ``harness_config`` replaces fields of a named or default harness's
    config). A multi-agent harness is played by its team oracle."""
    plugin = environment(env)
    spec = plugin.spec(task_id, environment_options(env, options))
    chosen = (
        harness
        if harness is not None and not isinstance(harness, str)
        else harness_for(harness, spec, **dict(harness_config or {}))
    )
    seed_id = plugin.seed_name(spec)
    if not _is_default(chosen, spec):  # two harnesses never give the same id
        seed_id = f"{seed_id.removesuffix('-oracle')}-{seed_label(chosen)}-oracle"
    oracle = scripted_team(chosen, env, spec)
    if oracle is None:
        oracle = plugin.oracle(spec)
    if oracle is None:
        raise ConfigError(
            f"environment {env!r} has no oracle to record seeds with; record model seeds with `failforge record`"
        )
    return record(
        env_spec=spec,
        harness=chosen,
        model=ComponentSpec(name=model, config={"role": "agent"}),
        upstream=oracle,
        oracle=True,
        trajectory_id=seed_id,
    )


def oracle_seeds(
    env: str,
    options: BaseModel | Mapping[str, Any] | None = None,
    tasks: list[str] | None = None,
    *,
    model: str = DEFAULT_AGENT_MODEL,
    harness: str | None = None,
) -> Iterator[Trajectory]:
    """Oracle seeds of every task the options select (or of ``tasks``), one after the other."""
    opts = environment_options(env, options)
    for task_id in tasks if tasks is not None else environment(env).tasks(opts):
        yield oracle_seed(env, task_id, opts, model=model, harness=harness)


__all__ = [
    "DEFAULT_AGENT_MODEL",
    "default_harness",
    "env_spec",
    "environment_options",
    "harness_for",
    "new_id",
    "oracle_seed",
    "oracle_seeds",
    "record",
    "scripted_team",
    "seed_label",
]
