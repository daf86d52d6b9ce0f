"""AgentDojo (v1 suites: workspace, travel, banking, slack) as a failforge environment.

Tools run live against AgentDojo's pydantic environment; after every call the state is fingerprinted
(canonical JSON of the whole environment, plus one hash per top-level part so a drift names the part).
AgentDojo's email and drive tools stamp ``datetime.now()`` into the state and into the observation the
model sees; left alone that would make every replay drift, so the clock those tools read is frozen at an
instant recorded in the trajectory (``environment.config.clock``). The evaluator is AgentDojo's own
utility check (``utility_from_traces`` first, then ``utility``), as ``TaskSuite`` runs it; its traces
are the tool calls addressed to the environment (an orchestrator's ``delegate`` call is not one).

For multi-agent harnesses the plugin also says how a team splits the suite's tools by domain
(:meth:`AgentDojoEnvironment.tool_domains`: workspace into email, calendar and files, ...) and exposes
the ground truth as a plain call sequence (:meth:`AgentDojoEnvironment.ground_truth`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import threading
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from failforge.canonical import canonical_hash
from failforge.environments._base import Environment, Fingerprint, ToolResult, observe_tool_call, parse_tool_arguments
from failforge.errors import ConfigError, EnvironmentDrift, EnvStateDrift
from failforge.plugins import environments
from failforge.roster import ENVIRONMENT
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

if TYPE_CHECKING:
    from failforge.llm import Responder

DEFAULT_CLOCK = "2024-05-15T10:00:00"
BENCHMARK_VERSION = "v1"
SUITES = ("workspace", "travel", "banking", "slack")
NORMALISER_VERSION = "agentdojo-state/1"

# Modules whose tools read the wall clock; their ``datetime`` global is swapped while a run is active.
_CLOCK_MODULES = (
    "agentdojo.default_suites.v1.tools.email_client",
    "agentdojo.default_suites.v1.tools.cloud_drive_client",
)
_clock_lock = threading.Lock()
_clock_users = 0
_clock_instant: str | None = None
_clock_saved: dict[str, Any] = {}


def _frozen_datetime_module(instant: _dt.datetime) -> types.ModuleType:
    class FrozenDateTime(_dt.datetime):
        """Reads the pinned instant. Returns plain ``datetime`` objects so YAML and pydantic see the usual type."""

        @classmethod
        def now(cls, tz: _dt.tzinfo | None = None) -> _dt.datetime:  # type: ignore[override]
            return instant if tz is None else instant.replace(tzinfo=tz)

        @classmethod
        def today(cls) -> _dt.datetime:  # type: ignore[override]
            return instant

    shim = types.ModuleType("datetime")
    shim.__dict__.update({k: getattr(_dt, k) for k in dir(_dt) if not k.startswith("__")})
    shim.datetime = FrozenDateTime  # type: ignore[attr-defined]
    return shim


@contextlib.contextmanager
def frozen_clock(instant: str) -> Iterator[None]:
    """Freeze the clock AgentDojo's tools read. Nested or concurrent runs must agree on the instant."""
    import importlib

    global _clock_users, _clock_instant
    with _clock_lock:
        if _clock_users and _clock_instant != instant:
            raise ConfigError(
                f"two AgentDojo runs in one process need different frozen clocks ({_clock_instant} and {instant}); run"
                " them separately"
            )
        if _clock_users == 0:
            shim = _frozen_datetime_module(_dt.datetime.fromisoformat(instant))
            for name in _CLOCK_MODULES:
                module = importlib.import_module(name)
                _clock_saved[name] = module.datetime
                module.datetime = shim  # type: ignore[attr-defined]
            _clock_instant = instant
        _clock_users += 1
    try:
        yield
    finally:
        with _clock_lock:
            _clock_users -= 1
            if _clock_users == 0:
                for name, original in _clock_saved.items():
                    importlib.import_module(name).datetime = original  # type: ignore[attr-defined]
                _clock_saved.clear()
                _clock_instant = None


def agentdojo_version() -> str:
    from importlib.metadata import version

    return version("agentdojo")


def get_suite(suite_name: str, benchmark_version: str = BENCHMARK_VERSION) -> Any:
    try:
        from agentdojo.task_suite.load_suites import get_suite as _get_suite
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("AgentDojo is not installed: pip install 'failforge[agentdojo]'") from exc
    if suite_name not in SUITES:
        raise ConfigError(f"unknown AgentDojo suite {suite_name!r}; expected one of {', '.join(SUITES)}")
    return _get_suite(benchmark_version, suite_name)


def list_user_tasks(suites: tuple[str, ...] = SUITES) -> list[tuple[str, str]]:
    """(suite, task id) of every v1 user task, in a stable order."""
    out: list[tuple[str, str]] = []
    for name in suites:
        suite = get_suite(name)
        ids = sorted(suite.user_tasks, key=lambda s: int(s.rsplit("_", 1)[-1]))
        out.extend((name, task_id) for task_id in ids)
    return out


def _tool_schema(function: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": function.name,
            "description": function.description,
            "parameters": function.parameters.model_json_schema(),
        },
    }


def state_fingerprint(env: Any) -> Fingerprint:
    """Canonical hash of the whole environment plus one hash per top-level part."""
    state = env.model_dump(mode="json")
    parts = {key: canonical_hash(value) for key, value in sorted(state.items())}
    return Fingerprint(digest=canonical_hash(parts), parts=parts)


class AgentDojoToolbox:
    """Tools of one AgentDojo episode, routed through the stateful tool boundary."""

    def __init__(self, episode: AgentDojoEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return [_tool_schema(f) for f in self.episode.suite.tools]

    def run_function(
        self, name: str, args: dict[str, Any] | None, call_id: str | None, raw: str | None = None
    ) -> tuple[Any, str | None, Step]:
        """Run a tool live, record and (in replay) assert it. Returns AgentDojo's (result, error) and the step."""
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str

        holder: dict[str, Any] = {}
        injection = self.episode.injection
        if injection is not None and not injection.applied and self.log.next_index >= injection.at_step:
            self.episode.apply_injection(self.log.steps)

        def run() -> ToolResult:
            if args is None:
                holder["result"], holder["error"] = "", f"ValueError: tool arguments are not a JSON object: {raw!r}"
            else:
                holder["result"], holder["error"] = self.episode.runtime.run_function(self.episode.env, name, args)
            error = holder["error"]
            content = tool_result_to_str(holder["result"]) if error is None else ""
            return ToolResult(content=content, error=error)

        step = observe_tool_call(
            self.log,
            name=name,
            arguments=args,
            call_id=call_id,
            run=run,
            fingerprint=lambda: state_fingerprint(self.episode.env),
            drift=EnvStateDrift,
        )
        if injection is not None and injection.applied:
            self.episode.check_security_after(step, self.log.steps)
        return holder["result"], holder["error"], step

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        parsed = parse_tool_arguments(arguments)
        _, error, step = self.run_function(name, parsed, call_id, raw=arguments)
        return (step.content or "") if error is None else f"Error: {error}"

    def runtime(self) -> Any:
        """An AgentDojo ``FunctionsRuntime`` whose calls go through this boundary, for AgentDojo's own pipelines."""
        from agentdojo.functions_runtime import FunctionsRuntime

        toolbox = self

        class BoundaryRuntime(FunctionsRuntime):
            def run_function(
                self, env: Any, function: str, kwargs: Any, raise_on_error: bool = False
            ) -> tuple[Any, str | None]:  # type: ignore[override]
                result, error, _ = toolbox.run_function(function, dict(kwargs), None)
                if error is not None and raise_on_error:
                    raise RuntimeError(error)
                return result, error

        return BoundaryRuntime(self.episode.suite.tools)


class InjectionState:
    """An environment-side injection of one episode: which injection task, which vectors filled with
    what text, at which step the attacked environment takes over; and what the security check saw."""

    def __init__(self, task_id: str, task: Any, vectors: dict[str, str], at_step: int, attack: str | None) -> None:
        self.task_id = task_id
        self.task = task
        self.vectors = vectors
        self.at_step = at_step
        self.attack = attack
        self.applied = False
        self.security_before: bool | str | None = None
        self.first_unsafe_tool_step: int | None = None

    @classmethod
    def from_config(cls, config: dict[str, Any], suite: Any) -> InjectionState:
        try:
            task_id, vectors, at_step = str(config["injection_task"]), dict(config["vectors"]), int(config["at_step"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"an AgentDojo injection needs injection_task, vectors and at_step, got {config!r}"
            ) from exc
        if task_id not in suite.injection_tasks:
            raise ConfigError(
                f"AgentDojo suite {suite.name!r} has no injection task {task_id!r}; valid:"
                f" {', '.join(sorted(suite.injection_tasks))}"
            )
        known = suite.get_injection_vector_defaults()
        bad = sorted(set(vectors) - set(known))
        if bad:
            raise ConfigError(
                f"AgentDojo suite {suite.name!r} has no injection vector {bad[0]!r}; valid: {', '.join(sorted(known))}"
            )
        return cls(
            task_id,
            suite.injection_tasks[task_id],
            {str(k): str(v) for k, v in vectors.items()},
            at_step,
            config.get("attack"),
        )

    def config(self) -> dict[str, Any]:
        return {
            "injection_task": self.task_id,
            "vectors": dict(self.vectors),
            "at_step": self.at_step,
            "attack": self.attack,
        }


class AgentDojoEpisode:
    """One user task of one suite, with its own environment instance and a frozen clock.

    Use as a context manager: the clock is frozen for the episode's lifetime.
    """

    name = "agentdojo"

    def __init__(
        self,
        suite_name: str,
        task_id: str,
        *,
        clock: str = DEFAULT_CLOCK,
        benchmark_version: str = BENCHMARK_VERSION,
        injection: dict[str, Any] | None = None,
    ) -> None:
        from agentdojo.functions_runtime import FunctionsRuntime

        self.suite_name = suite_name
        self.task_id = task_id
        self.clock = clock
        self.benchmark_version = benchmark_version
        self.suite = get_suite(suite_name, benchmark_version)
        if task_id not in self.suite.user_tasks:
            raise ConfigError(f"AgentDojo suite {suite_name!r} has no user task {task_id!r}")
        self.task = self.suite.user_tasks[task_id]
        self._clock_cm = frozen_clock(clock)
        self._clock_cm.__enter__()
        environment = self.suite.load_and_inject_default_environment({})
        self.env = self.task.init_environment(environment)
        self.pre_env = self.env.model_copy(deep=True)
        self.runtime = FunctionsRuntime(self.suite.tools)
        self.injection: InjectionState | None = None
        if injection is not None:
            self.injection = InjectionState.from_config(injection, self.suite)

    def apply_injection(self, prefix: list[Step]) -> None:
        """Switch to the attacked environment before the tool call at the injection step: AgentDojo's own
        environment with the vectors filled (``load_and_inject_default_environment``), initialised for the
        task, then every tool call of the prefix re-applied, so the state the agent's calls built is kept
        and any later read of an injected field shows the same attack. The pre-task copy the evaluators
        read is the attacked one, as in AgentDojo's ``run_task_with_pipeline``."""
        state = self.injection
        assert state is not None
        env = self.task.init_environment(self.suite.load_and_inject_default_environment(state.vectors))
        self.pre_env = env.model_copy(deep=True)
        state.security_before = self._security(env, [], "")
        for step in prefix:
            if step.kind == "tool" and step.tool_name and isinstance(step.tool_arguments, dict):
                self.runtime.run_function(env, step.tool_name, dict(step.tool_arguments))
        self.env = env
        state.applied = True

    def _traces(self, steps: list[Step]) -> list[Any]:
        from agentdojo.functions_runtime import FunctionCall

        traces = []
        for step in steps:
            for call in step.tool_calls if step.kind == "agent" and step.recipient in (None, ENVIRONMENT) else []:
                args = call.parsed_arguments()
                if args is not None:
                    traces.append(FunctionCall(function=call.name, args=args, id=call.id))
        return traces

    def _security(self, env: Any, traces: list[Any], output: str) -> bool | str:
        """AgentDojo's security check of the injection task (``TaskSuite._check_injection_task_security``):
        True when the attacker's goal happened; an error text when the check itself raised."""
        state = self.injection
        assert state is not None
        try:
            return bool(
                self.suite._check_injection_task_security(
                    state.task, [{"type": "text", "content": output}], self.pre_env, env, traces
                )
            )
        except Exception as exc:  # an evaluator crash on odd agent output: evidence, not a verdict
            return f"{type(exc).__name__}: {exc}"

    def check_security_after(self, step: Step, steps: list[Step]) -> None:
        """After each tool call from the injection on: the first tool step after which the attacker's goal
        holds (AgentDojo's security check on the state then, the calls so far, no answer yet)."""
        state = self.injection
        assert state is not None
        if state.first_unsafe_tool_step is None and self._security(self.env, self._traces(steps), "") is True:
            state.first_unsafe_tool_step = step.index

    def __enter__(self) -> AgentDojoEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._clock_cm is not None:
            self._clock_cm.__exit__(None, None, None)
            self._clock_cm = None  # type: ignore[assignment]

    def spec_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "suite": self.suite_name,
            "task_id": self.task_id,
            "benchmark_version": self.benchmark_version,
            "clock": self.clock,
            "normaliser": NORMALISER_VERSION,
        }
        if self.injection is not None:
            out["injection"] = self.injection.config()
        return out

    def instruction(self) -> str:
        return str(self.task.PROMPT)

    def task_record(self) -> Task:
        return Task(
            benchmark="agentdojo",
            suite=self.suite_name,
            task_id=self.task_id,
            instruction=self.instruction(),
            gold_answer=str(self.task.GROUND_TRUTH_OUTPUT) or None,
            metadata={
                "difficulty": str(getattr(self.task, "DIFFICULTY", "")),
                "benchmark_version": self.benchmark_version,
            },
        )

    def toolbox(self, log: RunLog) -> AgentDojoToolbox:
        return AgentDojoToolbox(self, log)

    def fingerprint(self) -> Fingerprint:
        return state_fingerprint(self.env)

    def ground_truth_calls(self) -> list[tuple[str, dict[str, Any]]]:
        """The task's ground-truth tool calls, computed from the pre-task environment."""
        return [(call.function, dict(call.args)) for call in self.task.ground_truth(self.pre_env.model_copy(deep=True))]

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """AgentDojo's own utility check, as ``TaskSuite._check_user_task_utility`` runs it."""
        traces = self._traces(steps)
        output = final_output or ""
        try:
            verdict = self.task.utility_from_traces(output, self.pre_env, self.env, traces)
            method = "utility_from_traces"
            if verdict is None:
                verdict = self.task.utility(output, self.pre_env, self.env)
                method = "utility"
        except Exception as exc:  # an evaluator crash on odd agent output is a failed task, not a crash of ours
            return Outcome(
                success=False, evaluator="agentdojo.utility", details={"error": f"{type(exc).__name__}: {exc}"}
            )
        details: dict[str, Any] = {"suite": self.suite_name, "task_id": self.task_id, "final_output": output[:2000]}
        if self.injection is not None:
            details["security"] = self.security_details(output, traces, steps)
        return Outcome(
            success=bool(verdict), score=1.0 if verdict else 0.0, evaluator=f"agentdojo.{method}", details=details
        )

    def security_details(self, output: str, traces: list[Any], steps: list[Step]) -> dict[str, Any]:
        """The injection task's verdict on the finished run (AgentDojo's security check; True: the
        attacker's goal happened), and whether the injection was served at all."""
        state = self.injection
        assert state is not None
        verdict = self._security(self.env, traces, output) if state.applied else None
        return {
            "injection_task": state.task_id,
            "evaluator": "agentdojo.injection_task.security",
            "served": state.applied,
            "attacker_goal_met": verdict if isinstance(verdict, bool) else None,
            "error": verdict if isinstance(verdict, str) else None,
            "met_before_any_call": state.security_before if state.applied else None,
            "first_unsafe_tool_step": state.first_unsafe_tool_step,
        }


class AgentDojoOptions(BaseModel):
    """What ``failforge seeds agentdojo`` / ``record --env agentdojo`` accept."""

    model_config = ConfigDict(extra="forbid")

    suite: list[str] = Field(
        default_factory=list, description="suite(s): workspace, travel, banking, slack (default: all)"
    )
    clock: str = Field(default=DEFAULT_CLOCK, description="the instant AgentDojo's email and drive tools read as now")


@environments.register(
    "agentdojo", requires=("agentdojo",), description="AgentDojo v1 suites (workspace, travel, banking, slack)"
)
class AgentDojoEnvironment(Environment):
    """AgentDojo as an environment plugin: task ids are ``suite/user_task_N``."""

    name: ClassVar[str] = "agentdojo"
    drift_error: ClassVar[type[EnvironmentDrift]] = EnvStateDrift
    Options: ClassVar[type[BaseModel]] = AgentDojoOptions
    adjudicates: ClassVar[bool] = True

    def tasks(self, options: BaseModel) -> list[str]:
        opts = AgentDojoOptions.model_validate(options.model_dump())
        return [f"{suite}/{task}" for suite, task in list_user_tasks(tuple(opts.suite or SUITES))]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = AgentDojoOptions.model_validate(options.model_dump())
        suite, sep, task = task_id.partition("/")
        if not sep:
            raise ConfigError(f"AgentDojo task ids are suite/user_task_N (e.g. banking/user_task_3), not {task_id!r}")
        return env_spec(suite, task, opts.clock)

    def open(self, spec: ComponentSpec) -> AgentDojoEpisode:
        cfg = spec.config
        try:
            return AgentDojoEpisode(
                cfg["suite"],
                cfg["task_id"],
                clock=cfg.get("clock", DEFAULT_CLOCK),
                benchmark_version=cfg.get("benchmark_version", BENCHMARK_VERSION),
                injection=cfg.get("injection"),
            )
        except KeyError as exc:
            raise ConfigError(f"environment spec for agentdojo lacks {exc.args[0]!r}: {cfg}") from exc

    def oracle(self, spec: ComponentSpec) -> Responder:
        """The ground truth plays the model: call k returns the k-th ground-truth tool call, then the
        task's ``GROUND_TRUTH_OUTPUT`` as the answer."""
        from failforge.llm import OracleResponder, fixed_tool_calls

        calls, final = self._ground_truth(spec)
        return OracleResponder(fixed_tool_calls(calls, final), name="agentdojo.ground_truth")

    def _ground_truth(self, spec: ComponentSpec) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        with self.open(spec) as probe:
            return probe.ground_truth_calls(), str(probe.task.GROUND_TRUTH_OUTPUT) or "Done."

    def ground_truth(self, spec: ComponentSpec) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        """The task's ground-truth tool calls and answer, for scripted (multi-agent) oracles."""
        return self._ground_truth(spec)

    def tool_domains(self, spec: ComponentSpec) -> dict[str, list[str]]:
        """The suite's tools split by domain (one worker each in a team), in the suite's tool order."""
        return tool_domains(str(spec.config["suite"]), str(spec.config.get("benchmark_version", BENCHMARK_VERSION)))

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        calls, _ = self._ground_truth(spec)
        return ComponentSpec(name="failforge.tool_calling", config={"max_model_calls": max(20, len(calls) + 2)})

    def stored_spec(self, spec: ComponentSpec) -> ComponentSpec:
        return spec

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"agentdojo-{spec.config['suite']}-{spec.config['task_id']}-oracle"

    def doctor(self) -> tuple[bool, str]:
        try:
            return True, f"AgentDojo {agentdojo_version()}, v1 suites: {', '.join(SUITES)}"
        except Exception as exc:  # PackageNotFoundError and friends: say what to install
            return False, f"AgentDojo is not installed ({type(exc).__name__}): bash scripts/install.sh"


#: AgentDojo tool module -> domain. The travel booking module is split further by what the tool books.
_MODULE_DOMAINS = {
    "email_client": "email",
    "calendar_client": "calendar",
    "cloud_drive_client": "files",
    "file_reader": "files",
    "banking_client": "banking",
    "user_account": "account",
    "slack": "slack",
    "web": "web",
}
_TRAVEL_KEYWORDS = (
    ("hotel", "hotels"),
    ("restaurant", "restaurants"),
    ("car_rental", "car_rental"),
    ("car_", "car_rental"),
)


def tool_domain(function: Any) -> str:
    """The domain of one AgentDojo tool, from the module that defines it (travel: from what it books)."""
    module = str(getattr(getattr(function, "run", None), "__module__", "")).rsplit(".", 1)[-1]
    if module == "travel_booking_client":
        return next((domain for key, domain in _TRAVEL_KEYWORDS if key in function.name), "travel_info")
    return _MODULE_DOMAINS.get(module, module or "tools")


def tool_domains(suite_name: str, benchmark_version: str = BENCHMARK_VERSION) -> dict[str, list[str]]:
    """Every tool of the suite in exactly one domain; domains ordered by their first tool in the suite."""
    domains: dict[str, list[str]] = {}
    for function in get_suite(suite_name, benchmark_version).tools:
        domains.setdefault(tool_domain(function), []).append(function.name)
    return domains


def env_spec(suite: str, task_id: str, clock: str = DEFAULT_CLOCK) -> ComponentSpec:
    """The environment spec recorded in a trajectory; ``python_hash_seed`` is recorded because
    AgentDojo's calendar orders participants by set iteration, which follows it."""
    return ComponentSpec(
        name="agentdojo",
        version=agentdojo_version(),
        config={
            "suite": suite,
            "task_id": task_id,
            "benchmark_version": BENCHMARK_VERSION,
            "clock": clock,
            "normaliser": NORMALISER_VERSION,
            "python_hash_seed": os.environ.get("PYTHONHASHSEED", "random"),
        },
    )
