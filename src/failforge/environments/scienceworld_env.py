"""ScienceWorld (``scienceworld`` 1.2.3, its bundled Scala jar on a JVM through py4j) as a failforge environment.

A task id is ``task-name/variation`` (``boil/0``); the agent has one tool, ``action(action)``, whose
observation is the world's reply to the command, verbatim (a command the world rejects — "No known
action matches that input." — is the agent's action, recorded and evaluated like any other). The
evaluator is the world's own: score 100 and the task completed.

The JVM takes seconds to start, so one ``ScienceWorldEnv`` is pooled per process and reused across
episodes; the reset between episodes is ``load(task, variation, simplifications, generateGoldPath=True)``,
which rebuilds the world from the task's script (the tests check an episode on a reused JVM is byte-identical
to one on a fresh JVM). Every episode is loaded with the gold path generated, the oracle's and the agent's
alike, so both see the same world.

The state fingerprint is what the world exposes for free after each step (free actions consume no
time): the room (``look``), the inventory, the score, whether the task is completed, and the move count —
so a drift names which of them changed. The valid-action list is left out: computing it costs 0.05–0.4 s
per step (measured), more than the step itself.

Some tasks do not replay identically (the world draws from an unseeded random source: measured for
mendelian-genetics and use-thermometer). :meth:`ScienceWorldEnvironment.oracle` therefore plays the gold
sequence twice on the world before handing it out and raises :class:`WorldNotReplayable` naming the first
step and part that differed, so ``failforge seeds`` skips that task with the reason instead of producing
seeds on a world that drifts.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from failforge.environments._base import (
    Environment,
    Fingerprint,
    ToolResult,
    fingerprint_of,
    observe_tool_call,
    parse_tool_arguments,
)
from failforge.errors import ConfigError, EnvironmentDrift, EnvStateDrift, FailforgeError
from failforge.plugins import environments
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

if TYPE_CHECKING:
    from failforge.llm import Responder

INSTALL = "bash scripts/benchmarks/install_scienceworld.sh"
TOOL = "action"
DEFAULT_VARIATIONS = (0, 1, 2)
#: Overrides the bundled jar (for a patched build); the bundled one otherwise.
JAR_ENV = "FAILFORGE_SCIENCEWORLD_JAR"
#: The JVM's identity hash codes are all 1 (HotSpot's ``hashCode=2``): the world keeps its objects in hash
#: sets keyed by identity, so with the default hash a reload on the same JVM lists a room's contents in a
#: different order (measured: melt/1); with a constant hash the order is the insertion order, the same on
#: every load and every JVM. Costs ~1.5x per step (measured).
JVM_OPTIONS = ("-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")
#: Moves the world allows before it calls the run over; far above the longest gold path (178 steps).
STEP_LIMIT = 10**6


class WorldNotReplayable(FailforgeError):
    """The task's world does not give the same observations twice for the same actions: no seeds from it."""


def scienceworld_version() -> str:
    from importlib.metadata import version

    return version("scienceworld")


def task_names() -> list[str]:
    """The 30 task names, in the package's order (read from its tasks.json: no JVM)."""
    try:
        from scienceworld.constants import ID2TASK
    except ImportError as exc:
        raise ConfigError(f"scienceworld is not installed: {INSTALL}") from exc
    return list(ID2TASK.values())


def jar_path() -> str:
    from scienceworld.constants import JAR_PATH

    return os.environ.get(JAR_ENV) or JAR_PATH


# -- the JVM pool: one ScienceWorldEnv per process, handed to one episode at a time -----------------

_pool_lock = threading.Lock()
_idle: list[Any] = []
_start_lock = threading.Lock()


def start_world(jar: str | None = None, jvm_options: tuple[str, ...] = JVM_OPTIONS) -> Any:
    """A fresh ScienceWorldEnv on its own JVM; a jar that will not start is a one-line ConfigError.
    ``jvm_options`` other than :data:`JVM_OPTIONS` only to show what they prevent (the tests)."""
    try:
        from scienceworld import ScienceWorldEnv
    except ImportError as exc:
        raise ConfigError(f"scienceworld is not installed: {INSTALL}") from exc
    path = jar or jar_path()
    if not os.path.isfile(path):
        raise ConfigError(f"ScienceWorld jar {path} does not exist; install it: {INSTALL}")
    import functools

    import scienceworld.scienceworld as wrapper

    try:
        with _start_lock:  # the wrapper takes no JVM options: its launch_gateway is given ours while it starts
            original = wrapper.launch_gateway
            wrapper.launch_gateway = functools.partial(original, javaopts=list(jvm_options))
            try:
                return ScienceWorldEnv("", serverPath=path, envStepLimit=STEP_LIMIT)
            finally:
                wrapper.launch_gateway = original
    except Exception as exc:  # py4j/JVM start failures come in many types
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(
            f"ScienceWorld jar {path} did not start ({type(exc).__name__}: {first}); check `java -version` and"
            f" reinstall: {INSTALL}"
        ) from exc


def acquire_world() -> Any:
    """The process's idle world (started on first use); a second concurrent episode gets its own JVM."""
    with _pool_lock:
        if _idle:
            return _idle.pop()
    return start_world()


def release_world(world: Any) -> None:
    with _pool_lock:
        _idle.append(world)


def shutdown_pool() -> None:
    """Stop every idle JVM of this process (tests that want a fresh JVM call it)."""
    with _pool_lock:
        worlds = list(_idle)
        _idle.clear()
    for world in worlds:
        try:
            world.close()
        except Exception:  # a JVM that already exited
            pass


@dataclass(frozen=True)
class WorldTask:
    name: str
    variation: int
    simplifications: str = ""


def load(world: Any, task: WorldTask) -> str:
    """The reset: rebuild the world from the task's script (gold path generated, as for every episode),
    then "look around" as the wrapper's own ``reset()`` does; returns that first look.

    The look matters: right after ``load`` the world has not scored its goals yet and reports score 100
    and completed (measured on every task); its first step, even a free one like this, computes them."""
    maximum = int(world.get_max_variations(task.name))
    if not 0 <= task.variation < maximum:
        raise ConfigError(f"ScienceWorld task {task.name!r} has variations 0..{maximum - 1}, not {task.variation}")
    try:
        world.load(task.name, task.variation, task.simplifications, generateGoldPath=True)
    except ValueError as exc:  # the wrapper's own checks of the task name and simplifications
        raise ConfigError(f"ScienceWorld: {str(exc).splitlines()[0][:300]}") from exc
    return step(world, "look around")


def world_state(world: Any) -> dict[str, Any]:
    """What the world exposes for free after a step (no game time passes)."""
    server = world.server
    return {
        "look": str(server.freeActionLook()),
        "inventory": str(server.freeActionInventory()),
        "score": int(round(100 * float(server.getScore()))),
        "completed": bool(server.getCompleted()),
        "moves": int(server.getNumMoves()),
    }


def step(world: Any, command: str) -> str:
    return str(world.server.step(command))


def gold_actions(world: Any) -> list[str]:
    return [str(a) for a in world.get_gold_action_sequence()]


def gold_trace(world: Any, task: WorldTask) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """Load the task, play its gold sequence; the sequence and (observation, state) after each action
    (index 0: the task description and the first look, before any action)."""
    load(world, task)
    actions = gold_actions(world)
    trace: list[tuple[str, dict[str, Any]]] = [(str(world.server.freeActionTaskDesc()), world_state(world))]
    for command in actions:
        observation = step(world, command)
        trace.append((observation, world_state(world)))
    return actions, trace


def first_difference(
    a: tuple[list[str], list[tuple[str, dict[str, Any]]]], b: tuple[list[str], list[tuple[str, dict[str, Any]]]]
) -> str | None:
    """Where two gold runs differ (the gold sequence, an observation, or a state part), or None."""
    if a[0] != b[0]:
        at = next((i for i, (x, y) in enumerate(zip(a[0], b[0], strict=False)) if x != y), min(len(a[0]), len(b[0])))
        return f"the gold action sequence differs between two loads (first at action {at})"
    for index, ((obs_a, state_a), (obs_b, state_b)) in enumerate(zip(a[1], b[1], strict=True)):
        if obs_a != obs_b:
            return (
                f"the observation after gold action {index} ({a[0][index - 1]!r}) differs"
                if index
                else "the task description differs"
            )
        changed = sorted(k for k in state_a if state_a[k] != state_b.get(k))
        if changed:
            return f"state part(s) {', '.join(changed)} differ after gold action {index}" + (
                f" ({a[0][index - 1]!r})" if index else ""
            )
    return None


# -- the episode ------------------------------------------------------------------------------------


def tool_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": TOOL,
            "description": (
                "Send one command to the ScienceWorld simulator (e.g. 'look around', 'open door to kitchen', "
                "'pick up thermometer', 'focus on substance in metal pot', 'wait1') and read its reply."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "description": "the command, in ScienceWorld's action language"}
                },
                "required": ["action"],
                "additionalProperties": False,
            },
        },
    }


class ScienceWorldToolbox:
    """The one tool of an episode, observed through the stateful tool boundary."""

    def __init__(self, episode: ScienceWorldEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return [tool_schema()]

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        args = parse_tool_arguments(arguments)
        episode = self.episode

        def run() -> ToolResult:
            if name != TOOL:
                return ToolResult(content="", error=f"unknown tool {name!r}; the only tool is {TOOL!r}")
            if args is None or not isinstance(args.get("action"), str) or set(args) != {"action"}:
                return ToolResult(
                    content="", error=f'arguments must be a JSON object {{"action": "<command>"}}, got {arguments!r}'
                )
            return ToolResult(content=step(episode.world, args["action"]))

        step_record = observe_tool_call(
            self.log,
            name=name,
            arguments=args,
            call_id=call_id,
            run=run,
            fingerprint=episode.fingerprint,
            drift=EnvStateDrift,
        )
        return (step_record.content or "") if step_record.error is None else f"Error: {step_record.error}"


class ScienceWorldEpisode:
    """One task variation on a pooled world, reloaded to its pristine state when opened."""

    def __init__(self, task: WorldTask) -> None:
        self.task = task
        self.world: Any = acquire_world()
        try:
            self._first_look = load(self.world, task)
            self._description = str(self.world.server.freeActionTaskDesc())
        except BaseException:
            release_world(self.world)
            raise

    def __enter__(self) -> ScienceWorldEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.world is not None:
            release_world(self.world)
            self.world = None

    def instruction(self) -> str:
        return (
            f"{self._description}\n\nYou are here:\n{self._first_look}\n\nAct with the `{TOOL}` tool, one command per"
            " call."
        )

    def task_record(self) -> Task:
        return Task(
            benchmark="scienceworld",
            suite=self.task.name,
            task_id=task_id_of(self.task),
            instruction=self.instruction(),
            gold_answer=None,
            metadata={"variation": str(self.task.variation), "simplifications": self.task.simplifications},
        )

    def toolbox(self, log: RunLog) -> ScienceWorldToolbox:
        return ScienceWorldToolbox(self, log)

    def fingerprint(self) -> Fingerprint:
        return fingerprint_of(world_state(self.world))

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """The world's own verdict: score 100 and the task completed (the final answer plays no part)."""
        state = world_state(self.world)
        success = state["score"] >= 100 and state["completed"]
        return Outcome(
            success=success,
            score=max(0.0, state["score"] / 100.0),
            evaluator="scienceworld.score",
            details={
                "score": state["score"],
                "completed": state["completed"],
                "moves": state["moves"],
                "task": task_id_of(self.task),
            },
        )


def task_id_of(task: WorldTask) -> str:
    return f"{task.name}/{task.variation}"


class ScienceWorldOptions(BaseModel):
    """What ``failforge seeds scienceworld`` / ``record scienceworld`` accept."""

    model_config = ConfigDict(extra="forbid")

    task_names: list[str] = Field(default_factory=list, description="task name(s), e.g. boil, melt (default: all 30)")
    variations: list[int] = Field(
        default_factory=lambda: list(DEFAULT_VARIATIONS), description="variation indices of each task"
    )
    simplifications: str = Field(
        default="", description="ScienceWorld simplification string (e.g. 'easy' or 'openDoors,teleportAction')"
    )


@environments.register(
    "scienceworld", requires=("scienceworld",), description="ScienceWorld 1.2.3: 30 science tasks in a text world (JVM)"
)
class ScienceWorldEnvironment(Environment):
    """ScienceWorld as an environment plugin: task ids are ``task-name/variation``."""

    name: ClassVar[str] = "scienceworld"
    drift_error: ClassVar[type[EnvironmentDrift]] = EnvStateDrift
    Options: ClassVar[type[BaseModel]] = ScienceWorldOptions

    _gold: ClassVar[dict[WorldTask, list[str]]] = {}
    _probed: ClassVar[dict[WorldTask, str | None]] = {}

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """Short gold paths (8-26 steps; the default first six tasks are boil/melt, 80+ steps each)."""
        return ["find-non-living-thing/2", "find-non-living-thing/0", "find-animal/0", "find-living-thing/0"], {}

    def tasks(self, options: BaseModel) -> list[str]:
        opts = ScienceWorldOptions.model_validate(options.model_dump())
        known = task_names()
        for name in opts.task_names:
            if name not in known:
                raise ConfigError(f"unknown ScienceWorld task {name!r}; known: {', '.join(known)}")
        return [f"{name}/{v}" for name in opts.task_names or known for v in opts.variations]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = ScienceWorldOptions.model_validate(options.model_dump())
        name, sep, variation = task_id.partition("/")
        if not sep or not variation.isdigit():
            raise ConfigError(f"ScienceWorld task ids are task-name/variation (e.g. boil/0), not {task_id!r}")
        if name not in task_names():
            raise ConfigError(f"unknown ScienceWorld task {name!r}; known: {', '.join(task_names())}")
        return ComponentSpec(
            name="scienceworld",
            version=scienceworld_version(),
            config={
                "task": name,
                "variation": int(variation),
                "simplifications": opts.simplifications,
                "jvm_options": list(JVM_OPTIONS),
            },
        )

    def world_task(self, spec: ComponentSpec) -> WorldTask:
        cfg = spec.config
        try:
            task = WorldTask(str(cfg["task"]), int(cfg["variation"]), str(cfg.get("simplifications", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"environment spec for scienceworld needs task and variation: {cfg}") from exc
        if task.name not in task_names():
            raise ConfigError(f"unknown ScienceWorld task {task.name!r}; known: {', '.join(task_names())}")
        if list(cfg.get("jvm_options", JVM_OPTIONS)) != list(JVM_OPTIONS):
            raise ConfigError(
                f"this ScienceWorld spec was recorded with JVM options {cfg['jvm_options']}, this failforge runs"
                f" {list(JVM_OPTIONS)}"
            )
        return task

    def open(self, spec: ComponentSpec) -> ScienceWorldEpisode:
        return ScienceWorldEpisode(self.world_task(spec))

    def gold(self, spec: ComponentSpec) -> list[str]:
        """The task's gold action sequence (``get_gold_action_sequence``), computed once per process."""
        task = self.world_task(spec)
        if task not in self._gold:
            world = acquire_world()
            try:
                load(world, task)
                self._gold[task] = gold_actions(world)
            finally:
                release_world(world)
        return self._gold[task]

    def replay_problem(self, spec: ComponentSpec) -> str | None:
        """Play the gold sequence twice on the world; where the two runs differ, or None (once per process)."""
        task = self.world_task(spec)
        if task not in self._probed:
            world = acquire_world()
            try:
                first = gold_trace(world, task)
                second = gold_trace(world, task)
            finally:
                release_world(world)
            self._gold.setdefault(task, first[0])
            self._probed[task] = first_difference(first, second)
        return self._probed[task]

    def gold_responder(self, spec: ComponentSpec) -> Responder:
        """The gold sequence as the model, one ``action`` call per message, then "Done." (no replay check)."""
        from failforge.llm import OracleResponder, fixed_tool_calls

        calls: list[tuple[str, dict[str, Any]]] = [(TOOL, {"action": a}) for a in self.gold(spec)]
        return OracleResponder(fixed_tool_calls(calls, "Done."), name="scienceworld.gold_action_sequence")

    def oracle(self, spec: ComponentSpec) -> Responder:
        """The gold sequence, after checking the world replays it identically (else WorldNotReplayable)."""
        problem = self.replay_problem(spec)
        if problem is not None:
            raise WorldNotReplayable(
                f"ScienceWorld task {task_id_of(self.world_task(spec))} does not replay identically: {problem}; no"
                " seeds from it"
            )
        return self.gold_responder(spec)

    def ground_truth(self, spec: ComponentSpec) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        return [(TOOL, {"action": a}) for a in self.gold(spec)], "Done."

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        return ComponentSpec(name="failforge.tool_calling", config={"max_model_calls": len(self.gold(spec)) + 2})

    def seed_name(self, spec: ComponentSpec) -> str:
        cfg = spec.config
        simplified = f"-{cfg['simplifications'].replace(',', '+')}" if cfg.get("simplifications") else ""
        return f"scienceworld-{cfg['task']}-{cfg['variation']}{simplified}-oracle"

    def doctor(self) -> tuple[bool, str]:
        """Starts the JVM and loads one task: the jar and Java are checked for real."""
        try:
            version = scienceworld_version()
            world = acquire_world()
        except Exception as exc:
            return (
                False,
                (
                    f"ScienceWorld does not work here ({type(exc).__name__}:"
                    f" {str(exc).splitlines()[0] if str(exc) else ''}): {INSTALL}"
                ),
            )
        try:
            load(world, WorldTask("boil", 0))
        except Exception as exc:
            return False, f"ScienceWorld {version}: loading boil/0 failed ({type(exc).__name__}): {INSTALL}"
        finally:
            release_world(world)
        return True, f"ScienceWorld {version}, jar {jar_path()}, {len(task_names())} tasks"
