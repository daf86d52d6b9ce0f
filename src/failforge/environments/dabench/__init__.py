"""DA-Bench (InfiAgent-DABench dev set) as a failforge environment: code as action on a stateful interpreter.

Each task is one of the 257 dev questions over its CSV table (``--data-dir``: a copy of InfiAgent's
``examples/DA-Agent/data``; default the 18-question subset shipped in the package). The agent's actions are
code blocks run one after another in one interpreter per run (:mod:`._interpreter`), inside a sandbox of
either backend, the table at ``./data/<file_name>``. The evaluator is the benchmark's closed-form rule
(:mod:`._scoring`). Seeds are recorded with smolagents' own CodeAgent (harness ``smolagents.code``); the
oracle is a scripted analyst that loads and inspects the table and answers from the label (mechanics).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from failforge.canonical import sha256_hex
from failforge.environments._base import Environment, Fingerprint
from failforge.environments.dabench._data import (
    ENV_VAR,
    Question,
    bundled_dir,
    load_questions,
    question,
    resolve_dir,
    table_path,
    task_id_of,
)
from failforge.environments.dabench._interpreter import (
    INTERPRETER_VERSION,
    TOOL_NAME,
    Interpreter,
    InterpreterToolbox,
    authorized_imports,
    parse_observation,
)
from failforge.environments.dabench._oracle import analyst_responses
from failforge.environments.dabench._scoring import format_answer, score
from failforge.environments.sandbox import SandboxLimits, acquire_sandbox, docker_client, image_present, release_sandbox
from failforge.errors import ConfigError, EnvironmentDrift, FailforgeError, SandboxDrift
from failforge.plugins import environments, sandboxes
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task

if TYPE_CHECKING:
    from failforge.llm import Responder

BENCHMARK = "dabench"
#: The docker image with python3 and Debian's pandas, numpy, scipy, scikit-learn, statsmodels
#: (``scripts/install_sandbox.sh --data``); the local backend uses the host's /usr (same Debian packages).
DATA_IMAGE = "failforge-sandbox-data:bookworm"
EVALUATOR = "dabench.eval_closed_form"
#: The task prompt, as Who&When Pro's release frames DA-Bench for smolagents (file, question, constraints, format).
TEMPLATE_FILE = "dabench_task.txt"
DABENCH_LIMITS = SandboxLimits(command_timeout=60.0, cpu_seconds=120, memory_mb=1536, workspace_mb=64)


def task_template() -> str:
    from importlib import resources

    return (resources.files("failforge") / "data" / "prompts" / TEMPLATE_FILE).read_text(encoding="utf-8")


def instruction_for(q: Question) -> str:
    return (
        task_template()
        .format(file_name=q.file_name, question=q.question, constraints=q.constraints, format=q.format)
        .strip()
    )


class DabenchConfig(BaseModel):
    """What ``environment.config`` holds for a DA-Bench trajectory: enough to rebuild the same interpreter."""

    model_config = ConfigDict(extra="forbid")

    task_id: str
    data_dir: str | None = Field(default=None, description="the data folder (None: the subset shipped in the package)")
    table_sha256: str
    backend: str
    image: str | None = None
    limits: SandboxLimits = Field(default_factory=lambda: DABENCH_LIMITS)
    python_hash_seed: str = "0"
    imports: list[str] = Field(default_factory=authorized_imports)
    interpreter: str = INTERPRETER_VERSION
    persistent: bool = Field(
        default=True,
        description="one live interpreter process per run (False: each block in a fresh process; same observations)",
    )


class DabenchEpisode:
    """One question in a fresh sandbox with the table under ``data/``; leaving it hands the sandbox back."""

    name = BENCHMARK

    def __init__(self, cfg: DabenchConfig) -> None:
        self.cfg = cfg
        root = resolve_dir(cfg.data_dir) if cfg.data_dir else bundled_dir()
        self.question = question(root, cfg.task_id)
        table = table_path(root, self.question).read_bytes()
        if sha256_hex(table) != cfg.table_sha256:
            raise ConfigError(
                f"{self.question.file_name} in {root} is not the table this seed was recorded on (sha256 differs)"
            )
        self._released = False
        self.sandbox = acquire_sandbox(
            cfg.backend, cfg.limits, image=cfg.image or DATA_IMAGE, python_hash_seed=cfg.python_hash_seed
        )
        try:
            self.sandbox.write_file(f"data/{self.question.file_name}", table)
        except ValueError as exc:  # over the sandbox's file size limit: the user's table, not a failforge fault
            self.close()
            raise ConfigError(
                f"DA-Bench question {self.question.id}: {self.question.file_name} in {root}: {exc}"
            ) from None
        except BaseException:
            self.close()
            raise
        self.interpreter = Interpreter(
            self.sandbox,
            imports=list(cfg.imports),
            step_timeout=cfg.limits.command_timeout,
            cpu_seconds=cfg.limits.cpu_seconds,
        )
        self.interpreter.persistent = cfg.persistent and self.sandbox.supports_session

    def __enter__(self) -> DabenchEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The run's interpreter process ends with the run: handing the sandbox back resets it (every process but
        its server killed) or closes it."""
        if not self._released:
            self._released = True
            release_sandbox(self.sandbox)

    def instruction(self) -> str:
        return instruction_for(self.question)

    def task_record(self) -> Task:
        q = self.question
        return Task(
            benchmark=BENCHMARK,
            suite=None,  # the dev set has no suites; the difficulty level is metadata (exports keep it in extras)
            task_id=self.cfg.task_id,
            instruction=self.instruction(),
            gold_answer=format_answer(list(q.common_answers)),
            metadata={
                "question_id": q.id,
                "file_name": q.file_name,
                "concepts": list(q.concepts),
                "level": q.level,
                "format": q.format,
                "constraints": q.constraints,
                "interpreter": INTERPRETER_VERSION,
                "sandbox": self.sandbox.describe(),
            },
        )

    def toolbox(self, log: RunLog) -> InterpreterToolbox:
        return InterpreterToolbox(self.interpreter, log)

    def fingerprint(self) -> Fingerprint:
        return self.interpreter.fingerprint()

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """The closed-form rule on the final answer: every labelled sub-answer present and equal."""
        result = score(final_output, list(self.question.common_answers))
        return Outcome(
            success=result.correct,
            score=result.fraction,
            evaluator=EVALUATOR,
            details={
                "question_id": self.question.id,
                "sub_answers": [s.model_dump() for s in result.sub_answers],
                "extracted": result.extracted,
            },
        )


def data_image_present() -> bool:
    try:
        client = docker_client(timeout=10)
    except FailforgeError:
        return False
    try:
        return image_present(client, DATA_IMAGE)
    finally:
        client.close()


def concrete_backend(backend: str) -> str:
    """``auto``: docker when the data image is there, else local; a registered name as is."""
    if backend == "auto":
        return "docker" if data_image_present() else "local"
    if backend not in sandboxes.names():
        raise ConfigError(f"unknown sandbox backend {backend!r}; known: auto, {', '.join(sandboxes.names())}")
    return backend


class DabenchOptions(BaseModel):
    """What ``failforge seeds dabench`` / ``record dabench`` accept."""

    model_config = ConfigDict(extra="forbid")

    data_dir: str | None = Field(
        default=None,
        description=(
            f"a copy of InfiAgent's examples/DA-Agent/data (default: ${ENV_VAR}, "
            "else the 18 questions shipped with failforge)"
        ),
    )
    backend: str = Field(
        default="auto", description="sandbox backend: docker, local or auto (docker when its data image is here)"
    )
    persistent: bool = Field(
        default=True,
        description="one live interpreter process per run; False runs each code block in a fresh process (slower)",
    )


def env_spec(
    task_id: str,
    data_dir: str | None = None,
    backend: Literal["auto", "docker", "local"] | str = "auto",
    *,
    persistent: bool = True,
) -> ComponentSpec:
    import os

    chosen = data_dir or os.environ.get(ENV_VAR) or None
    root = resolve_dir(chosen)
    recorded_dir = None if root == bundled_dir() else str(root)
    q = question(root, task_id)
    table = table_path(root, q)
    concrete = concrete_backend(backend)
    cfg = DabenchConfig(
        task_id=task_id_of(q.id),
        data_dir=recorded_dir,
        table_sha256=sha256_hex(table.read_bytes()),
        backend=concrete,
        image=DATA_IMAGE if concrete == "docker" else None,
        persistent=persistent,
    )
    return ComponentSpec(name=BENCHMARK, version=INTERPRETER_VERSION, config=cfg.model_dump(mode="json"))


def open_episode(spec: ComponentSpec) -> DabenchEpisode:
    try:
        cfg = DabenchConfig.model_validate(spec.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"environment spec for dabench is invalid: {first['loc']}: {first['msg']}") from exc
    if cfg.interpreter != INTERPRETER_VERSION:
        raise ConfigError(
            f"this DA-Bench seed ran on interpreter {cfg.interpreter!r}, this failforge has {INTERPRETER_VERSION!r}; "
            "re-record it"
        )
    return DabenchEpisode(cfg)


@environments.register(
    BENCHMARK, description="DA-Bench: data-analysis questions answered by code on a stateful Python interpreter"
)
class DabenchEnvironment(Environment):
    """DA-Bench questions as tasks ``dabench-<id>``."""

    step_policy: ClassVar[str] = "paper"  # the paper's setting: never step 1, never the final answer

    name: ClassVar[str] = BENCHMARK
    drift_error: ClassVar[type[EnvironmentDrift]] = SandboxDrift
    Options: ClassVar[type[BaseModel]] = DabenchOptions

    def tasks(self, options: BaseModel) -> list[str]:
        import os

        opts = DabenchOptions.model_validate(options.model_dump())
        return [
            task_id_of(qid)
            for qid in sorted(load_questions(resolve_dir(opts.data_dir or os.environ.get(ENV_VAR) or None)))
        ]

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = DabenchOptions.model_validate(options.model_dump())
        return env_spec(task_id, opts.data_dir, opts.backend, persistent=opts.persistent)

    def open(self, spec: ComponentSpec) -> DabenchEpisode:
        return open_episode(spec)

    def oracle(self, spec: ComponentSpec) -> Responder:
        """The scripted analyst: load the table, inspect it, collect the answers (from the label), answer."""
        from failforge.llm import OracleResponder

        cfg = DabenchConfig.model_validate(spec.config)
        root = resolve_dir(cfg.data_dir) if cfg.data_dir else bundled_dir()
        responses = analyst_responses(question(root, cfg.task_id))

        def script(ordinal: int, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
            return responses[min(ordinal, len(responses) - 1)], None

        return OracleResponder(script, name="dabench.scripted_analyst")

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        """smolagents' CodeAgent with room for the analyst's four steps and a retry (a code block is short), its
        messages as plain strings so the embedded llama.cpp model can answer them."""
        return ComponentSpec(
            name="smolagents.code", config={"max_steps": 5, "max_tokens": 256, "flatten_messages": True}
        )

    def seed_name(self, spec: ComponentSpec) -> str:
        return f"{spec.config['task_id']}-{spec.config['backend']}-oracle"

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """One question of the shipped subset (two answers), on docker when its data image is here, else local: every
        branch point's original arm is continued live by the embedded model, a CodeAgent call of a few seconds each."""
        return [task_id_of(18)], {"data_dir": str(bundled_dir())}

    def demo_harness(self) -> dict[str, Any]:
        """128 tokens a call, not 256: the analyst's longest reply over the 257 questions is 285 characters (about 90
        tokens), and the embedded 135M model writes to its cap at about 10 tokens a second, so each of an arm's 4-5
        live calls costs half as long and the demo's arms end within its deadline."""
        return {"max_tokens": 128}

    def doctor(self) -> tuple[bool, str]:
        try:
            n = len(load_questions(resolve_dir(None)))
        except ConfigError as exc:
            return False, str(exc)
        return True, f"{n} questions in {resolve_dir(None)}; the docker backend needs {DATA_IMAGE}"


__all__ = [
    "analyst_responses",
    "load_questions",
    "parse_observation",
    "question",
    "resolve_dir",
    "task_id_of",
    "BENCHMARK",
    "DATA_IMAGE",
    "DabenchConfig",
    "DabenchEnvironment",
    "DabenchEpisode",
    "DabenchOptions",
    "TOOL_NAME",
    "env_spec",
    "instruction_for",
    "open_episode",
    "score",
]
