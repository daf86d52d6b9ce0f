"""MiniWoB++ as an environment plugin: task names, recorded specs, demonstration policies.

Demonstration seeds are recorded with ``cache_mode="record"`` (page loads fetched from the loopback
server and stored in the tool cache) and stored with ``cache_mode="replay"``: replaying one serves every
page from the cache and a page that was never recorded is a ``CacheMiss``, while the live steps of a
branch still fetch and record. The scripted policies (``_oracle.py``) play the model: each model call
is answered with the action the policy picks from the page in the request the harness sent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.environments._base import Environment
from failforge.environments.miniwob._episode import (
    ENVIRONMENT_NAME,
    PAGE_HEADER,
    MiniWoBEpisode,
    env_spec,
    open_episode,
)
from failforge.environments.miniwob._oracle import DEMO_TASKS, POLICIES, OracleError, view_from_request
from failforge.errors import ConfigError, DomDrift, EnvironmentDrift
from failforge.plugins import environments
from failforge.trajectory import ComponentSpec

#: What ``failforge demo --browser`` records: quick tasks, one of each kind of action.
BROWSER_DEMO_TASKS = ("click-button", "enter-text", "login-user", "click-checkboxes", "choose-list", "click-tab")

if TYPE_CHECKING:
    from failforge.llm import Responder

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


class MiniWoBOptions(BaseModel):
    """What ``failforge seeds miniwob`` / ``record --env miniwob`` accept."""

    model_config = ConfigDict(extra="forbid")

    episode_seed: int | None = Field(
        default=None, description="MiniWoB episode seed (default: each task's demonstration seed)"
    )
    cache_dir: str | None = Field(default=None, description="where page loads are cached (seeds replay from it)")
    screenshots: bool = Field(default=False, description="store a screenshot after every action")
    screenshot_dir: str | None = Field(default=None, description="where screenshots go (default: beside the cache)")
    action_space: Literal["bid", "coordinate"] | None = Field(
        default=None,
        description="coordinate: click(x, y)/type/key/scroll on screenshots, for the vision harness (default: bid)",
    )


def default_seed(task: str) -> int:
    """The episode seed of ``task``'s bundled demonstration."""
    return DEMO_SEED_OVERRIDES.get(task, DEFAULT_SEED)


def demonstration_script(task: str) -> Any:
    """The scripted policy of ``task`` as an oracle script: (call ordinal, request) -> (text, tool calls)."""
    if task not in POLICIES:
        raise ConfigError(f"no demonstration policy for MiniWoB task {task!r}; tasks with one: {', '.join(DEMO_TASKS)}")
    policy = POLICIES[task]

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        view = view_from_request(body, PAGE_HEADER)
        if len(view.history) >= MAX_ORACLE_ACTIONS:
            raise OracleError(f"oracle for {task} did not finish within {MAX_ORACLE_ACTIONS} actions")
        action = policy(view)
        if action is None:
            return "Done: the task is complete.", None
        name, args = action
        return None, [
            {
                "id": f"call_oracle_{ordinal}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
            }
        ]

    return script


@environments.register(
    "miniwob", requires=("miniwob", "playwright"), description="MiniWoB++ pages in pinned headless Chromium"
)
class MiniWoBEnvironment(Environment):
    """MiniWoB++ as an environment plugin: task ids are MiniWoB task names (``click-button``)."""

    name: ClassVar[str] = ENVIRONMENT_NAME
    drift_error: ClassVar[type[EnvironmentDrift]] = DomDrift
    Options: ClassVar[type[BaseModel]] = MiniWoBOptions

    def tasks(self, options: BaseModel) -> list[str]:
        return list(DEMO_TASKS)

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """Six quick tasks, their pages cached in the demo's folder (``OUTPUT/http-cache``)."""
        return list(BROWSER_DEMO_TASKS), {"cache_dir": str((output / "http-cache").resolve())}

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = MiniWoBOptions.model_validate(options.model_dump())
        seed = default_seed(task_id) if opts.episode_seed is None else opts.episode_seed
        settings = opts.model_dump(exclude={"episode_seed"}, exclude_none=True)
        return env_spec(task_id, seed, cache_mode="record", **settings)

    def open(self, spec: ComponentSpec) -> MiniWoBEpisode:
        return open_episode(spec)

    def oracle(self, spec: ComponentSpec) -> Responder:
        from failforge.llm import OracleResponder

        task = str(spec.config["task"])
        return OracleResponder(demonstration_script(task), name=f"miniwob.demo.{task}")

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        return ComponentSpec(
            name="failforge.tool_calling",
            config={"system_prompt": BROWSER_SYSTEM_PROMPT, "max_model_calls": MAX_ORACLE_ACTIONS + 2},
        )

    def stored_spec(self, spec: ComponentSpec) -> ComponentSpec:
        mode = spec.config.get("cache_mode", "record")
        return spec.model_copy(update={"config": {**spec.config, "cache_mode": "off" if mode == "off" else "replay"}})

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"miniwob-{spec.config['task']}-seed{spec.config['seed']}-demo"

    def doctor(self) -> tuple[bool, str]:
        import importlib.util

        from failforge.environments.miniwob._config import CHROMIUM_EXECUTABLE

        missing = [m for m in ("playwright", "miniwob") if importlib.util.find_spec(m) is None]
        if missing or not shutil.which(CHROMIUM_EXECUTABLE):
            return (
                False,
                (
                    f"needs Debian chromium at {CHROMIUM_EXECUTABLE} and the python packages playwright, miniwob"
                    f" (missing: {', '.join(missing) or 'none'}): bash scripts/install.sh"
                ),
            )
        return True, f"chromium at {CHROMIUM_EXECUTABLE}; {len(DEMO_TASKS)} tasks with demonstration policies"
