"""Demonstration seeds for MiniWoB++: scripted policies recorded through the real harness.

As for AgentDojo's oracle seeds, the policy plays the model (:class:`failforge.llm.OracleResponder`):
each model call is answered with the tool call the policy picks from the request the harness sent, so
a demonstration seed carries the exact recorded model requests and replays and branches like a
model-recorded seed (``oracle=True``, ``source="oracle"`` tell them apart).

A seed is recorded with ``cache_mode="record"`` (page loads fetched from the loopback server and
stored in the tool cache) and stored with ``cache_mode="replay"``: replaying it serves every page from
the cache and a page that was never recorded is a ``CacheMiss``, while the live steps of a branch
still fetch and record.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from failforge.environments.miniwob._episode import PAGE_HEADER, env_spec
from failforge.environments.miniwob._oracle import DEMO_TASKS, POLICIES, OracleError, view_from_request
from failforge.errors import ConfigError
from failforge.harnesses import ToolCallingAgent, ToolCallingAgentConfig
from failforge.llm import OracleResponder
from failforge.replay import record
from failforge.trajectory import ComponentSpec, Trajectory

DEFAULT_AGENT_MODEL = "smollm2-135m-instruct"
#: Episode seed of the bundled demonstrations (any seed works; one fixed value keeps them reproducible).
DEFAULT_SEED = 1
#: Tasks whose default-seed episode would be trivial: navigate-tree at seed 8 needs folders opened first.
DEMO_SEED_OVERRIDES: dict[str, int] = {"navigate-tree": 8}
MAX_ORACLE_ACTIONS = 25

BROWSER_SYSTEM_PROMPT = (
    "You operate a web page to complete the user's task. The page is shown as text: each element is one line "
    "'[bid] tag \"text\" attributes', indented under its parent. Act with the tools, one call at a time, naming "
    "elements by bid: click, type (replaces a field's text), press (a key), select (an option of a <select>), "
    "scroll, goto, answer. Each tool returns the page after the action. When the task is done, reply with a "
    "short final message and no tool call."
)


def demo_harness(max_model_calls: int = MAX_ORACLE_ACTIONS + 2) -> ToolCallingAgent:
    """The built-in function-calling agent with a browser system prompt (recorded in the seed)."""
    return ToolCallingAgent(ToolCallingAgentConfig(system_prompt=BROWSER_SYSTEM_PROMPT, max_model_calls=max_model_calls))


def _script(task: str) -> Any:
    policy = POLICIES[task]

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        view = view_from_request(body, PAGE_HEADER)
        if len(view.history) >= MAX_ORACLE_ACTIONS:
            raise OracleError(f"oracle for {task} did not finish within {MAX_ORACLE_ACTIONS} actions")
        action = policy(view)
        if action is None:
            return "Done: the task is complete.", None
        name, args = action
        return None, [{"id": f"call_oracle_{ordinal}", "type": "function", "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}]

    return script


def default_seed(task: str) -> int:
    """The episode seed of ``task``'s bundled demonstration."""
    return DEMO_SEED_OVERRIDES.get(task, DEFAULT_SEED)


def demo_seed(task: str, seed: int | None = None, *, model: str = DEFAULT_AGENT_MODEL, harness: Any = None, **settings: Any) -> Trajectory:
    """Record the scripted demonstration of ``task`` at episode ``seed`` (settings: MiniWoBConfig fields,
    e.g. ``cache_dir=...``, ``screenshots=True``). The returned seed's spec replays from the cache."""
    if task not in POLICIES:
        raise ConfigError(f"no demonstration policy for MiniWoB task {task!r}; tasks with one: {', '.join(DEMO_TASKS)}")
    seed = default_seed(task) if seed is None else seed
    settings = {**settings, "cache_mode": settings.get("cache_mode", "record")}
    spec = env_spec(task, seed, **settings)
    trajectory = record(
        env_spec=spec,
        harness=harness or demo_harness(),
        model=ComponentSpec(name=model, config={"role": "agent"}),
        upstream=OracleResponder(_script(task), name=f"miniwob.demo.{task}"),
        oracle=True,
        trajectory_id=f"miniwob-{task}-seed{seed}-demo",
    )
    replay_config = {**spec.config, "cache_mode": "replay" if settings["cache_mode"] != "off" else "off"}
    return trajectory.model_copy(update={"environment": spec.model_copy(update={"config": replay_config})})


def demo_seeds(tasks: Iterable[str] = DEMO_TASKS, seed: int | None = None, **settings: Any) -> Iterator[Trajectory]:
    """One demonstration seed per task (recorded one after the other); ``seed`` None = each task's default."""
    for task in tasks:
        yield demo_seed(task, seed, **settings)

