"""The schema: Task, Step, Trajectory, GoldLabel, and JSONL load/save.

Step indices are 0-based and stable: step 0 is always the task instruction, and every later event
(one agent output = one model call, one tool observation per tool call) is one step, appended in the
order it happened. A decisive step ``t`` therefore names the same event in a seed and in every
branch made from it, which is what lets a gold label say "everything before t is the seed's".
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from failforge.errors import ConfigError, SeedFormatError

SCHEMA_VERSION = "1"
#: Versions this failforge reads. A record claiming another version is rejected with a clear message
#: rather than read as if it were this one (fields may mean something else).
READABLE_SCHEMA_VERSIONS = frozenset({"1"})

StepKind = Literal["task", "agent", "tool"]
Phase = Literal["recorded", "replayed", "injected", "live"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Model):
    """One tool call as the model produced it; ``arguments`` is the raw JSON text, kept verbatim."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when the model wrote something that is not a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


class ModelCallRef(_Model):
    """The model call that produced an agent step: enough to serve it again and to check the request."""

    stream: str
    ordinal: int = Field(ge=0, description="0-based index of this call within its stream")
    request: dict[str, Any] = Field(description="chat-completions request body as the harness sent it (no secrets)")
    request_hash: str = Field(description="sha256 of the canonical request (volatile ids canonicalised)")
    response: dict[str, Any] = Field(description="raw chat-completions response body")
    source: Literal["model", "oracle", "recording"] = "model"


class Step(_Model):
    index: int = Field(ge=0)
    kind: StepKind
    agent: str = Field(description="agent id for agent steps; 'user' for the task; 'environment' for tool steps")
    role: Literal["user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_arguments: dict[str, Any] | None = None
    model_call: ModelCallRef | None = None
    state_fingerprint: str | None = None
    state_parts: dict[str, str] | None = Field(
        default=None, description="per-part hashes of the state, so a drift can name what changed"
    )
    error: str | None = None
    images: list[str] = Field(default_factory=list, description="sha256 of images (e.g. screenshots) stored beside the dataset")
    phase: Phase = "recorded"

    def is_final(self) -> bool:
        return self.kind == "agent" and not self.tool_calls

    def comparable(self) -> dict[str, Any]:
        """The fields that must be identical between a seed and a branch's prefix."""
        return self.model_dump(include={"index", "kind", "agent", "role", "content", "tool_calls", "tool_call_id", "tool_name", "tool_arguments", "state_fingerprint", "error", "images"})


class Task(_Model):
    benchmark: str
    suite: str | None = None
    task_id: str
    instruction: str
    gold_answer: str | None = Field(default=None, description="the benchmark's reference answer, when it has one")
    metadata: dict[str, Any] = Field(default_factory=dict)


class ComponentSpec(_Model):
    """Which harness / environment / model, with the configuration needed to rebuild it exactly."""

    name: str
    version: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)


class Outcome(_Model):
    success: bool | None
    score: float | None = None
    evaluator: str
    details: dict[str, Any] = Field(default_factory=dict)


class FilterVerdict(_Model):
    name: str
    passed: bool
    reason: str


class GoldLabel(_Model):
    decisive_step: int
    decisive_agent: str
    mode_code: str
    mode_family: str
    original_step: Step
    steering_note: str
    guide_model: str
    agent_model: str
    filter_verdicts: list[FilterVerdict]
    seed_id: str
    branch_step: int
    evaluator_output: Outcome
    guide_request: dict[str, Any] = Field(default_factory=dict, description="stage-1 prompt sent to the guide model")
    agent_request: dict[str, Any] = Field(default_factory=dict, description="stage-2 request: the agent's own step-t request plus the note")


class Trajectory(_Model):
    schema_version: str = SCHEMA_VERSION
    id: str
    task: Task
    steps: list[Step]
    outcome: Outcome | None = None
    harness: ComponentSpec
    environment: ComponentSpec
    model: ComponentSpec
    agents: list[str] = Field(default_factory=lambda: ["agent"])
    oracle: bool = Field(default=False, description="model responses were supplied by the benchmark's ground truth")
    parent_id: str | None = None
    branch_step: int | None = None
    label: GoldLabel | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    def agent_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "agent"]

    def final_output(self) -> str | None:
        for step in reversed(self.steps):
            if step.kind == "agent":
                return step.content if not step.tool_calls else None
        return None


def _field_of(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "<record>"
    return loc, first.get("msg", str(err))


def parse_line(text: str, path: str = "<string>", line: int = 1) -> Trajectory:
    """Parse one JSONL line; errors name the file, line and field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SeedFormatError(path, line, "<json>", f"not valid JSON: {exc.msg} at column {exc.colno}") from exc
    except RecursionError as exc:
        raise SeedFormatError(path, line, "<json>", "JSON nested too deeply to be a trajectory") from exc
    if not isinstance(data, dict):
        raise SeedFormatError(path, line, "<record>", f"expected a JSON object, found {type(data).__name__}")
    version = data.get("schema_version", SCHEMA_VERSION)
    if str(version) not in READABLE_SCHEMA_VERSIONS:
        raise SeedFormatError(
            path, line, "schema_version", f"{version!r} is not a schema version this failforge reads ({', '.join(sorted(READABLE_SCHEMA_VERSIONS))}); upgrade failforge or re-record the seed"
        )
    try:
        return Trajectory.model_validate(data)
    except ValidationError as exc:
        field, problem = _field_of(exc)
        raise SeedFormatError(path, line, field, problem) from exc
    except RecursionError as exc:
        raise SeedFormatError(path, line, "<record>", "nested too deeply to be a trajectory") from exc


def open_records(path: str | Path) -> Iterator[tuple[int, str | SeedFormatError]]:
    """(line number, text) of each non-blank line of a JSONL file, or the error for a line that is not UTF-8.

    A missing path, a directory or an unreadable file is a ``ConfigError`` naming it: the user's input
    is wrong as a whole. A bad line is that line's problem only, so one bad record loses nothing else.
    """
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"{file}: no such file")
    if file.is_dir():
        raise ConfigError(f"{file} is a directory, not a JSONL file")
    try:
        handle = open(file, "rb")
    except OSError as exc:
        raise ConfigError(f"{file}: cannot be read ({exc.strerror})") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, SeedFormatError(str(file), number, "<encoding>", f"not UTF-8 text (byte {exc.start})")
                continue
            if text.strip():
                yield number, text


def iter_jsonl(path: str | Path) -> Iterator[Trajectory | SeedFormatError]:
    """Yield each trajectory, or the error for a malformed line, so one bad record loses nothing else."""
    for number, text in open_records(path):
        if isinstance(text, SeedFormatError):
            yield text
            continue
        try:
            yield parse_line(text, str(path), number)
        except SeedFormatError as exc:
            yield exc


def load_jsonl(path: str | Path) -> tuple[list[Trajectory], list[SeedFormatError]]:
    good: list[Trajectory] = []
    bad: list[SeedFormatError] = []
    for item in iter_jsonl(path):
        if isinstance(item, SeedFormatError):
            bad.append(item)
        else:
            good.append(item)
    return good, bad


def dump_line(record: BaseModel) -> str:
    return record.model_dump_json(exclude_none=False) + "\n"


def append_jsonl(path: str | Path, records: Iterable[BaseModel], *, redact: Callable[[str], str] | None = None) -> None:
    """Append whole lines with one write + fsync, so an interrupted run never leaves a torn line.

    ``redact`` masks secrets in each line before it is written (see :mod:`failforge.secrets`).
    """
    payload = "".join((redact or _same)(dump_line(r)) for r in records)
    if not payload:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, payload.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _same(text: str) -> str:
    return text


def write_jsonl(path: str | Path, records: Iterable[BaseModel]) -> None:
    """Replace a file atomically (write a temporary file, then rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(dump_line(record))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
