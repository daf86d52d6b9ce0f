"""BFCL multi-turn function calling (``bfcl-eval`` 2026.3.23) as a failforge environment.

The four multi-turn categories (base, miss_func, miss_param, long_context; 200 tasks each) over BFCL's
stateful pure-Python simulators (GorillaFileSystem, TwitterAPI, MessageAPI, TicketAPI, TradingBot,
TravelAPI, VehicleControlAPI, MathAPI). failforge builds the simulators itself, one fresh instance per
class per episode (``_load_scenario(deepcopy(initial_config))``), and calls their methods with the
agent's JSON arguments. BFCL's own executor (``execute_multi_turn_func_call``) is never used to run the
agent's calls: it runs model strings through ``eval()`` and keeps instances in module globals keyed by
model and task, so two runs of one task would share a world.

Each BFCL turn is one user message; the first is the task (step 0), each later one is a user step the
harness asks for with :meth:`BfclToolbox.next_turn` (recorded, and checked in replay, like any step).
In miss_func the held-out functions are offered from the turn BFCL adds them, with BFCL's own message.

The state fingerprint is the instances' public attributes (what BFCL's ``state_checker`` compares), one
part per class. The evaluator is BFCL's own ``multi_turn_checker`` (state and response checks per turn)
fed the run's calls as BFCL's decoder would produce them; its module-global instances are named per
evaluation and removed afterwards. WebSearchAPI needs the network: a task that uses it is excluded
(no multi-turn task of 2026.3.23 does).
"""

from __future__ import annotations

import ast
import copy
import datetime as _dt
import functools
import importlib
import inspect
import json
import keyword
import random
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from failforge.environments._base import (
    Environment,
    Fingerprint,
    ToolResult,
    fingerprint_of,
    observe_tool_call,
    parse_tool_arguments,
)
from failforge.errors import ConfigError, EnvironmentDrift, EnvStateDrift, SeedFormatError
from failforge.jsonl import read_jsonl
from failforge.plugins import environments
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

if TYPE_CHECKING:
    from failforge.llm import Responder

BFCL_VERSION = "2026.3.23"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
NORMALISER_VERSION = "bfcl-state/1"
#: Classes that need the network; a task involving one is excluded with this reason.
NETWORK_CLASSES = {"WebSearchAPI": "WebSearchAPI searches the live web (needs the network)"}
INSTALL = "bash scripts/benchmarks/install_bfcl.sh"
#: The identifier an unrunnable call (unknown function, arguments not a JSON object) is handed to BFCL's
#: checker as: a name defined nowhere, so its ``eval`` records an error exactly as for any unknown function.
UNKNOWN_FUNCTION = "failforge_unknown_function"


def _bfcl() -> Any:
    try:
        import bfcl_eval
    except ImportError as exc:
        raise ConfigError(f"bfcl-eval is not installed: {INSTALL}") from exc
    return bfcl_eval


def bfcl_version() -> str:
    from importlib.metadata import version

    return version("bfcl-eval")


def data_dir() -> Path:
    return Path(_bfcl().__file__).parent / "data"


@functools.cache
def _category(category: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[list[str]]]]:
    """(entries by id, ground truth by id) of one category, in BFCL's file order."""
    if category not in CATEGORIES:
        raise ConfigError(
            f"unknown BFCL multi-turn category {category!r}; expected one of {', '.join(CATEGORIES)} or all"
        )
    root = data_dir()
    entries: dict[str, dict[str, Any]] = {}
    for entry in _rows(root / f"BFCL_v4_multi_turn_{category}.json"):
        entries[entry["id"]] = entry
    answers: dict[str, list[list[str]]] = {}
    for row in _rows(root / "possible_answer" / f"BFCL_v4_multi_turn_{category}.json"):
        answers[row["id"]] = row["ground_truth"]
    return entries, answers


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of one of bfcl-eval's JSONL data files, through failforge's one reader; a bad line in the
    package's own data is an install problem, raised (naming the file and line) rather than skipped."""
    for item in read_jsonl(path):
        if isinstance(item, SeedFormatError):
            raise item
        yield item[1]


def category_of(task_id: str) -> str:
    """``multi_turn_miss_param_7`` -> ``miss_param``."""
    head = task_id.rsplit("_", 1)[0]
    category = head.removeprefix("multi_turn_")
    if not head.startswith("multi_turn_") or category not in CATEGORIES:
        raise ConfigError(
            f"BFCL multi-turn task ids look like multi_turn_base_0 (categories {', '.join(CATEGORIES)}), not"
            f" {task_id!r}"
        )
    return category


def entry_of(task_id: str) -> tuple[dict[str, Any], list[list[str]]]:
    """The BFCL test entry and its per-turn ground truth; ConfigError for an id BFCL does not have."""
    entries, answers = _category(category_of(task_id))
    if task_id not in entries:
        raise ConfigError(f"BFCL has no task {task_id!r} (category {category_of(task_id)} has {len(entries)} tasks)")
    return entries[task_id], answers[task_id]


def excluded_reason(entry: dict[str, Any]) -> str | None:
    """Why a task cannot run offline, or None."""
    reasons = [NETWORK_CLASSES[c] for c in entry["involved_classes"] if c in NETWORK_CLASSES]
    return "; ".join(reasons) or None


# --- tool schemas -------------------------------------------------------------------------------

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string", "list": "array", "bool": "boolean"}


def _openai_schema(node: Any) -> Any:
    """BFCL's Gorilla schema types (dict, float, tuple) as JSON Schema's."""
    if isinstance(node, dict):
        out = {k: _openai_schema(v) for k, v in node.items()}
        if isinstance(out.get("type"), str):
            out["type"] = _TYPES.get(out["type"], out["type"])
        return out
    if isinstance(node, list):
        return [_openai_schema(v) for v in node]
    return node


@functools.cache
def _func_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    path = data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(_rows(path))


def tool_schema(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": doc["name"],
            "description": doc.get("description", ""),
            "parameters": _openai_schema(doc.get("parameters", {"type": "dict", "properties": {}})),
        },
    }


# --- the simulators -------------------------------------------------------------------------------


def _plain(value: Any, stack: tuple[int, ...] = ()) -> Any:
    """A simulator attribute as a JSON value: objects as their public attributes (a back-reference, such
    as a directory's parent, as the referenced object's type and name), a ``random.Random`` as its state."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v, stack) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, stack) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v, stack) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, random.Random):
        return {"__random__": str(value.getstate())}
    if id(value) in stack:
        return {"__ref__": type(value).__name__, "name": str(getattr(value, "name", ""))}
    if hasattr(value, "__dict__"):
        inner = (*stack, id(value))
        return {
            "__type__": type(value).__name__,
            **{k: _plain(v, inner) for k, v in vars(value).items() if not k.startswith("_")},
        }
    return repr(value)


def bfcl_result(value: Any) -> str:
    """A method's return value as BFCL's executor turns it into the observation string."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class Simulators:
    """One fresh instance of every class a task involves, loaded from the task's initial config."""

    def __init__(self, entry: dict[str, Any]) -> None:
        from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES

        long_context = "long_context" in entry["id"]
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in entry["involved_classes"]:
            if class_name in NETWORK_CLASSES:
                raise ConfigError(f"BFCL task {entry['id']} is excluded: {NETWORK_CLASSES[class_name]}")
            instance = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)()
            if class_name not in STATELESS_CLASSES:
                instance._load_scenario(
                    copy.deepcopy(entry.get("initial_config", {}).get(class_name, {})), long_context=long_context
                )
            self.instances[class_name] = instance
            # BFCL's name -> instance map: public methods, a later class winning a shared name.
            for name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not name.startswith("_"):
                    self.methods[name] = method

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one method with keyword arguments; an exception is the observation BFCL's executor gives."""
        method = self.methods.get(name)
        if method is None:
            return ToolResult(
                content=f"Error during execution: name '{name}' is not defined",
                error=f"no function {name!r} in this task",
            )
        try:  # a copy: a simulator keeps argument lists in its state and mutates them later (TwitterAPI.mention)
            return ToolResult(content=bfcl_result(method(**copy.deepcopy(arguments))))
        except Exception as exc:  # the simulator rejecting a call is the agent's observation, not our crash
            return ToolResult(content=f"Error during execution: {exc}", error=f"{type(exc).__name__}: {exc}")

    def state(self) -> dict[str, Any]:
        """Public attributes per instance (what BFCL's state checker compares); MathAPI has none."""
        return {
            name: _plain({k: v for k, v in vars(inst).items() if not k.startswith("_")})
            for name, inst in self.instances.items()
        }

    def fingerprint(self) -> Fingerprint:
        return fingerprint_of(self.state())

    def positional_names(self, name: str) -> list[str]:
        method = self.methods.get(name)
        if method is None:
            return []
        return [
            p.name
            for p in inspect.signature(method).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]


def parse_call(text: str, simulators: Simulators) -> tuple[str, dict[str, Any]]:
    """A ground-truth call string (``mv(source='a', destination='b')``, ``sort('f')``) as (name, JSON
    arguments), positional arguments named from the method's signature. Only literals are read."""
    node = ast.parse(text, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ConfigError(f"BFCL ground-truth call {text!r} is not a plain function call")
    name = node.func.id
    names = simulators.positional_names(name)
    if len(node.args) > len(names):
        raise ConfigError(f"BFCL ground-truth call {text!r} has more positional arguments than {name} takes")
    args = {names[i]: ast.literal_eval(a) for i, a in enumerate(node.args)}
    args.update({k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None})
    return name, args


def clarification_turns(category: str, ground_truth: list[list[str]]) -> dict[str, str]:
    """The turns where asking (miss_param: a detail the user gives next turn) or saying it cannot (miss_func:
    the function comes next turn) is right: the turns whose ground truth is empty, in those categories.
    Task metadata for :mod:`failforge.clarification`."""
    withheld = {"miss_param": "parameter", "miss_func": "function"}.get(category)
    return {str(i): withheld for i, turn in enumerate(ground_truth) if not turn} if withheld else {}


#: The oracle's words at a turn it cannot do: a question for the missing detail (Ask), or saying that no
#: offered function does it (Refuse); ``failforge.judgement`` reads them so.
ASK_FOR_DETAIL = "I need one more detail before I can do that: could you tell me exactly which value to use?"
CANNOT_WITHOUT_FUNCTION = "I can't do that with the functions I have been given."


def call_string(name: str, arguments: dict[str, Any] | None, known: set[str]) -> str:
    """A recorded call as BFCL's decoder spells it, for its checker: ``name(k=<Python literal>, ...)``.

    Only a known method name and identifier keys with literal values reach the checker's ``eval``; any
    other call becomes a call of :data:`UNKNOWN_FUNCTION`, which the checker records as an error."""
    if (
        name not in known
        or arguments is None
        or not all(k.isidentifier() and not keyword.iskeyword(k) for k in arguments)
    ):
        return f"{UNKNOWN_FUNCTION}()"
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"


# --- the episode ----------------------------------------------------------------------------------


def turn_text(entry: dict[str, Any], turn: int) -> str:
    """The user's message at ``turn``; a held-out-function turn (empty in BFCL's data) gets BFCL's own."""
    messages = entry["question"][turn]
    if not messages:
        from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC

        return str(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)
    return "\n".join(str(m["content"]) for m in messages)


class BfclToolbox:
    """The tools of one BFCL episode, routed through the stateful tool boundary, and the user's turns."""

    def __init__(self, episode: BfclEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return [tool_schema(doc) for doc in self.episode.offered_docs()]

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        parsed = parse_tool_arguments(arguments)

        def run() -> ToolResult:
            if parsed is None:
                return ToolResult(
                    content=f"Error during execution: arguments are not a JSON object: {arguments!r}",
                    error="arguments are not a JSON object",
                )
            return self.episode.simulators.call(name, parsed)

        step = observe_tool_call(
            self.log,
            name=name,
            arguments=parsed,
            call_id=call_id,
            run=run,
            fingerprint=self.episode.fingerprint,
            drift=EnvStateDrift,
        )
        return step.content or ""

    def next_turn(self) -> str | None:
        """The user's next message as a recorded user step (checked against the seed in replay), or None
        when the conversation is over. A miss_func turn also offers its held-out functions from now on."""
        if self.log.failure is not None:
            raise self.log.failure
        episode = self.episode
        if episode.turn + 1 >= len(episode.entry["question"]):
            return None
        episode.turn += 1
        text = turn_text(episode.entry, episode.turn)
        self.log.append(
            Step(
                index=self.log.next_index,
                kind="task",
                agent="user",
                role="user",
                content=text,
                phase=self.log.phase_for(self.log.next_index),
            )
        )
        return text


class BfclEpisode:
    """One BFCL multi-turn task with its own simulator instances."""

    name = "bfcl"

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.entry, self.ground_truth = entry_of(task_id)
        reason = excluded_reason(self.entry)
        if reason:
            raise ConfigError(f"BFCL task {task_id} is excluded: {reason}")
        self.category = category_of(task_id)
        self.simulators = Simulators(self.entry)
        self.turn = 0
        self._held_out = {int(k): list(v) for k, v in (self.entry.get("missed_function") or {}).items()}

    def __enter__(self) -> BfclEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing outside the process: the instances go with the episode."""

    def offered_docs(self) -> list[dict[str, Any]]:
        """BFCL's function docs of the involved classes, less the functions held out until a later turn."""
        hidden = {name for turn, names in self._held_out.items() if turn > self.turn for name in names}
        docs = [doc for cls in self.entry["involved_classes"] for doc in _func_docs(cls)]
        return [doc for doc in docs if doc["name"] not in hidden]

    def instruction(self) -> str:
        return turn_text(self.entry, 0)

    def task_record(self) -> Task:
        return Task(
            benchmark="bfcl",
            suite=self.category,
            task_id=self.task_id,
            instruction=self.instruction(),
            gold_answer=None,
            metadata={
                "turns": [turn_text(self.entry, i) for i in range(len(self.entry["question"]))],
                "ground_truth": self.ground_truth,
                "involved_classes": list(self.entry["involved_classes"]),
                "missed_function": self.entry.get("missed_function") or {},
                "clarification_turns": clarification_turns(self.category, self.ground_truth),
                "bfcl_version": BFCL_VERSION,
            },
        )

    def toolbox(self, log: RunLog) -> BfclToolbox:
        return BfclToolbox(self, log)

    def fingerprint(self) -> Fingerprint:
        return self.simulators.fingerprint()

    def model_turns(self, steps: list[Step]) -> list[list[list[str]]]:
        """The run's calls as BFCL's decoder gives them to the checker: per turn, per model step that called
        tools, the call strings (text answers decode to nothing and are left out, as in BFCL's runner)."""
        known = set(self.simulators.methods)
        turns: list[list[list[str]]] = []
        for step in steps:
            if step.kind == "task":
                turns.append([])
            elif step.kind == "agent" and step.tool_calls and turns:
                turns[-1].append([call_string(c.name, c.parsed_arguments(), known) for c in step.tool_calls])
        return turns

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """BFCL's own ``multi_turn_checker``; a run that ended before the last turn is BFCL's force-terminated."""
        turns = self.model_turns(steps)
        if len(turns) != len(self.ground_truth):
            return Outcome(
                success=False,
                score=0.0,
                evaluator="bfcl.multi_turn_checker",
                details={
                    "error_type": "multi_turn:force_terminated",
                    "turns": len(turns),
                    "expected_turns": len(self.ground_truth),
                },
            )
        result = run_checker(self.entry, self.ground_truth, turns)
        valid = bool(result.get("valid"))
        details: dict[str, Any] = {"task_id": self.task_id, "category": self.category}
        if not valid:
            details.update(
                {"error_type": result.get("error_type"), "error_message": str(result.get("error_message", ""))[:2000]}
            )
        return Outcome(success=valid, score=1.0 if valid else 0.0, evaluator="bfcl.multi_turn_checker", details=details)


_checker_lock = threading.Lock()


def run_checker(entry: dict[str, Any], ground_truth: list[list[str]], turns: list[list[list[str]]]) -> dict[str, Any]:
    """BFCL's ``multi_turn_checker`` under a model name of its own; the instances it leaves in its
    module's globals are removed afterwards (they would make a second check of the task start from the
    first one's end state)."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    model_name = f"failforge_{uuid.uuid4().hex}"
    try:
        result: dict[str, Any] = multi_turn_checker(
            turns, ground_truth, copy.deepcopy(entry), entry["id"].rsplit("_", 1)[0], model_name
        )
        return result
    except AssertionError as exc:  # the checker's own consistency asserts: a failed task, said so
        return {"valid": False, "error_type": "multi_turn:checker_assertion", "error_message": str(exc)}
    finally:
        with _checker_lock:
            for key in [k for k in list(vars(multi_turn_utils)) if k.startswith(model_name)]:
                del vars(multi_turn_utils)[key]


# --- the plugin -----------------------------------------------------------------------------------


class BfclOptions(BaseModel):
    """What ``failforge seeds bfcl`` / ``record --env bfcl`` accept."""

    model_config = ConfigDict(extra="forbid")

    category: Literal["base", "miss_func", "miss_param", "long_context", "all"] = "all"


def oracle_script(entry: dict[str, Any], ground_truth: list[list[str]]) -> Any:
    """The ground truth per turn as a pure function of the request: the turn is the number of user
    messages so far, the position the number of assistant messages since the last one. A turn whose
    ground truth is empty (a held-out function or a missing parameter) is answered in words."""
    probe = Simulators(entry)
    calls = [[parse_call(text, probe) for text in turn] for turn in ground_truth]
    withheld = {int(k): v for k, v in clarification_turns(category_of(entry["id"]), ground_truth).items()}

    def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body.get("messages") or []
        user_at = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        turn = len(user_at) - 1
        position = sum(1 for m in messages[user_at[-1] + 1 :] if m.get("role") == "assistant") if user_at else 0
        wanted = calls[turn] if 0 <= turn < len(calls) else []
        if position < len(wanted):
            name, args = wanted[position]
            return None, [
                {
                    "id": f"call_oracle_{turn}_{position}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        if not wanted:
            return (CANNOT_WITHOUT_FUNCTION if withheld.get(turn) == "function" else ASK_FOR_DETAIL), None
        return "Done.", None

    return script


@environments.register(
    "bfcl",
    requires=("bfcl-eval",),
    description="BFCL multi-turn function calling (base, miss_func, miss_param, long_context)",
)
class BfclEnvironment(Environment):
    """BFCL multi-turn as an environment plugin: task ids are BFCL's own (``multi_turn_base_0``)."""

    name: ClassVar[str] = "bfcl"
    drift_error: ClassVar[type[EnvironmentDrift]] = EnvStateDrift
    Options: ClassVar[type[BaseModel]] = BfclOptions

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """The base tasks with the shortest prompts first: every live call carries the task's tool schemas, and
        the requests of multi_turn_base_3 and _1 are ~12,700 characters where the first six reach 23,500 (a
        loaded 2-core machine evaluates as few as 15 prompt tokens a second); base_3 has two user turns, so a
        branch leaves few calls live."""
        return ["multi_turn_base_3", "multi_turn_base_1", "multi_turn_base_4"], {}

    def demo_harness(self) -> dict[str, Any]:
        """A reply of 128 tokens at most on the demo's embedded model (a tool call here needs ~40)."""
        return {"max_tokens": 128}

    def tasks(self, options: BaseModel) -> list[str]:
        opts = BfclOptions.model_validate(options.model_dump())
        chosen = CATEGORIES if opts.category == "all" else (opts.category,)
        return [task for cat in chosen for task, entry in _category(cat)[0].items() if excluded_reason(entry) is None]

    def excluded(self, options: BaseModel) -> dict[str, str]:
        """Tasks of the chosen categories left out, with the reason (the network-needing ones)."""
        opts = BfclOptions.model_validate(options.model_dump())
        chosen = CATEGORIES if opts.category == "all" else (opts.category,)
        return {
            task: reason
            for cat in chosen
            for task, entry in _category(cat)[0].items()
            if (reason := excluded_reason(entry))
        }

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        entry_of(task_id)
        return ComponentSpec(
            name="bfcl",
            version=bfcl_version(),
            config={"task_id": task_id, "category": category_of(task_id), "normaliser": NORMALISER_VERSION},
        )

    def open(self, spec: ComponentSpec) -> BfclEpisode:
        try:
            return BfclEpisode(str(spec.config["task_id"]))
        except KeyError as exc:
            raise ConfigError(f"environment spec for bfcl lacks {exc.args[0]!r}: {spec.config}") from exc

    def oracle(self, spec: ComponentSpec) -> Responder:
        from failforge.llm import OracleResponder

        entry, ground_truth = entry_of(str(spec.config["task_id"]))
        return OracleResponder(oracle_script(entry, ground_truth), name="bfcl.ground_truth")

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        _, ground_truth = entry_of(str(spec.config["task_id"]))
        longest = max((len(turn) for turn in ground_truth), default=0)
        return ComponentSpec(name="failforge.multi_turn", config={"max_model_calls_per_turn": max(12, longest + 3)})

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"bfcl-{spec.config['task_id']}-oracle"

    def doctor(self) -> tuple[bool, str]:
        try:
            version = bfcl_version()
            from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker  # noqa: F401
        except Exception as exc:  # PackageNotFoundError, a broken install: say what to run
            return False, f"bfcl-eval is not usable ({type(exc).__name__}: {exc}): {INSTALL}"
        if version != BFCL_VERSION:
            return (
                False,
                (
                    f"bfcl-eval {version} is installed, failforge's bfcl environment is built for {BFCL_VERSION}:"
                    f" {INSTALL}"
                ),
            )
        return (
            True,
            (
                f"bfcl-eval {version}: multi-turn {', '.join(CATEGORIES)}"
                f" ({sum(len(_category(c)[0]) for c in CATEGORIES)} tasks)"
            ),
        )
