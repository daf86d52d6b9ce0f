"""The labelled-failure record: a failed trajectory plus who failed, at which step, and how.

It is deliberately separate from :class:`failforge.trajectory.Trajectory` (a seed or a branch): an
attribution method needs no environment, no recorded requests and no state fingerprints, only the
steps as a reader of the trajectory sees them and the gold label. Public datasets (Who&When, the Who&When
Pro release, AgenTracer's TracerTraj) and failforge's own gold all become this one record, so every
protocol and metric is written once.

Indices are 0-based positions in ``steps``, always. Where a source numbers its steps differently
(Magentic-One's ``"round.position"``, eva's native trajectory index, smolagents' cursor) the source's own
coordinate is kept beside the step in ``coordinate`` and beside the gold step in ``gold.step_label``,
and ``origin.step_convention`` says how the two were matched, so a prediction can be mapped back.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from failforge.attribution._audit import Audit
from failforge.attribution._components import ComponentLabel, check_label
from failforge.errors import SeedFormatError
from failforge.jsonl import read_jsonl
from failforge.trajectory import write_jsonl

RECORD_SCHEMA = "failforge.labelled-failure/1"

StepKind = Literal["system", "user", "agent", "tool"]
Topology = Literal["single", "multi"]
Modality = Literal["text", "image", "video"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepCoordinate(_Model):
    """Where the source puts a step, in the source's own numbering."""

    label: str | None = Field(
        default=None, description="the coordinate as the source's reader writes it: '1.1', '4', 'plan'"
    )
    round: int | None = None
    position: int | None = None


class ImageRef(_Model):
    """An image seen at a step: its bytes' sha256 (bytes are not kept in the record) and/or its path."""

    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    path: str | None = None
    time_s: float | None = None

    @field_validator("path")
    @classmethod
    def _inside_the_dataset(cls, value: str | None) -> str | None:
        """A path is relative and stays inside the dataset folder (``../../x`` and ``/etc/x`` are refused)."""
        if value is not None and (value.startswith(("/", "\\")) or ".." in value.replace("\\", "/").split("/")):
            raise ValueError(
                f"image path {value[:80]!r} leaves the dataset folder; "
                "expected a relative path such as images/<sha256>.png"
            )
        return value


class ToolCallRecord(_Model):
    id: str | None = None
    name: str
    arguments: str = ""


class FailureStep(_Model):
    index: int = Field(ge=0)
    kind: StepKind
    agent: str = Field(description="who produced the step; 'user' for the task, the tool's name for observations")
    role: str = Field(default="", description="the role or kind string exactly as the source writes it")
    content: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_call_id: str | None = Field(default=None, description="for an observation: the call it answers")
    images: list[ImageRef] = Field(default_factory=list)
    coordinate: StepCoordinate | None = None
    sender: str | None = None
    recipient: str | None = Field(
        default=None, description="addressee of an inter-agent message, when the source names one"
    )
    component: str | None = Field(
        default=None,
        description="the step's component id (seed system 1), as the source writes it; None: not a component",
    )
    component_type: str | None = Field(
        default=None, description="the component's type as the source names it (user_message, action_result_pair, ...)"
    )


class TaskInfo(_Model):
    question: str
    gold_answer: str | None = None
    system_prompts: dict[str, str] = Field(
        default_factory=dict, description="agent -> system prompt, when the source keeps them"
    )


class Gold(_Model):
    """The label. ``step`` indexes ``steps``; ``agent`` is None only where the source names none (single agent)."""

    agent: str | None
    step: int = Field(ge=0)
    mode: str | None = Field(
        default=None,
        description="failforge code (18-mode taxonomy), or None when the source has no mode or an unmappable one",
    )
    source_mode: str | None = Field(default=None, description="the mode code exactly as the source writes it")
    step_label: str = Field(description="the gold step as the source writes it (e.g. '12', '1.1', 'round 2')")
    accepted_steps: list[int] = Field(
        default_factory=list, description="further step indices the source accepts as correct"
    )
    accepted_agents: list[str] = Field(default_factory=list, description="further agents the source accepts as correct")
    accepted_modes: list[str] = Field(
        default_factory=list, description="further failforge codes the source accepts as correct"
    )
    rationale: str | None = None


class Origin(_Model):
    """Where the record came from and how its steps and gold step were derived."""

    format: str
    path: str
    line: int | None = None
    row_id: str | None = None
    step_convention: str
    warnings: list[str] = Field(default_factory=list)


class LabelledFailure(_Model):
    schema_version: str = RECORD_SCHEMA
    id: str
    source: str = Field(description="dataset and split, e.g. 'who_and_when/hand_crafted'")
    framework: str
    benchmark: str | None = None
    topology: Topology
    modality: Modality = "text"
    agents: list[str]
    roles: dict[str, str] = Field(
        default_factory=dict,
        description="agent -> its role as the source names it (failforge's roster role, the release's role)",
    )
    task: TaskInfo
    steps: list[FailureStep]
    gold: Gold
    origin: Origin
    extra: dict[str, Any] = Field(default_factory=dict)
    components: ComponentLabel | None = Field(
        default=None, description="component-level gold (target, primary, chains), where the source has it"
    )
    audit: Audit | None = Field(
        default=None,
        description="a recorded trajectory-auditor output (`failforge attach-audit`); a judge's labels, not gold",
    )

    @model_validator(mode="after")
    def _consistent(self) -> LabelledFailure:
        for position, step in enumerate(self.steps):
            if step.index != position:
                raise ValueError(f"steps[{position}].index is {step.index}; indices must be 0-based positions")
        n = len(self.steps)
        for field, values in (("gold.step", [self.gold.step]), ("gold.accepted_steps", self.gold.accepted_steps)):
            bad = [v for v in values if not 0 <= v < n]
            if bad:
                raise ValueError(f"{field} {bad[0]} is outside 0..{n - 1}")
        if self.components is not None:
            check_label(self.component_order(), self.components)
        return self

    def component_order(self) -> list[str]:
        """The component ids of the steps, in position order (steps without one are not components)."""
        return [s.component for s in self.steps if s.component is not None]

    # --- what methods and metrics need ---------------------------------------------------------

    def candidate_steps(self) -> list[int]:
        """Steps an attribution method may name: everything but framing system prompts."""
        return [s.index for s in self.steps if s.kind != "system"]

    def author(self, index: int) -> str:
        return self.steps[index].agent

    def accepted_step_set(self) -> set[int]:
        return {self.gold.step, *self.gold.accepted_steps}

    def dumps(self) -> str:
        return self.model_dump_json()


class RecordProblem(_Model):
    """A source record that could not be read: where, which field, what is wrong. It is skipped."""

    path: str
    line: int | None = None
    field: str
    problem: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: field '{self.field}': {self.problem}"

    @classmethod
    def of(cls, error: SeedFormatError) -> RecordProblem:
        """A line the JSONL reader could not read (or a record it could not parse), as a skipped record."""
        return cls(path=error.path, line=error.line, field=error.field, problem=error.problem)


class ImportSummary(_Model):
    read: int = 0
    imported: int = 0
    skipped: int = 0
    problems: list[RecordProblem] = Field(default_factory=list)
    by_source: dict[str, int] = Field(default_factory=dict)


def summarise(items: Iterable[LabelledFailure | RecordProblem]) -> tuple[list[LabelledFailure], ImportSummary]:
    records: list[LabelledFailure] = []
    summary = ImportSummary()
    seen: set[str] = set()
    for item in items:
        summary.read += 1
        if isinstance(item, RecordProblem):
            summary.skipped += 1
            summary.problems.append(item)
            continue
        if item.id in seen:
            summary.skipped += 1
            summary.problems.append(
                RecordProblem(
                    path=item.origin.path, line=item.origin.line, field="id", problem=f"duplicate record id {item.id!r}"
                )
            )
            continue
        seen.add(item.id)
        records.append(item)
        summary.imported += 1
        summary.by_source[item.source] = summary.by_source.get(item.source, 0) + 1
    return records, summary


_M = TypeVar("_M", bound=BaseModel)


def _first_error(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    return ".".join(str(p) for p in first.get("loc", ())) or "<record>", str(first.get("msg", err))


def iter_validated(path: str | Path, model: type[_M]) -> Iterator[_M | RecordProblem]:
    """Each JSONL line of ``path`` as ``model``; a bad line becomes a problem naming its line and field."""
    for item in read_jsonl(path):
        if isinstance(item, SeedFormatError):
            yield RecordProblem.of(item)
            continue
        number, data = item
        try:
            yield model.model_validate(data)
        except ValidationError as exc:
            field, problem = _first_error(exc)
            yield RecordProblem(path=str(path), line=number, field=field, problem=problem)
        except RecursionError:
            yield RecordProblem(
                path=str(path), line=number, field="<record>", problem="nested too deeply to be a record"
            )


def iter_records(path: str | Path) -> Iterator[LabelledFailure | RecordProblem]:
    """Read a labelled-failure JSONL file; a bad line becomes a problem naming its line and field."""
    return iter_validated(path, LabelledFailure)


def load_records(path: str | Path) -> tuple[list[LabelledFailure], list[RecordProblem]]:
    good: list[LabelledFailure] = []
    bad: list[RecordProblem] = []
    for item in iter_records(path):
        (bad if isinstance(item, RecordProblem) else good).append(item)  # type: ignore[arg-type]
    return good, bad


def write_records(path: str | Path, records: Iterable[LabelledFailure]) -> None:
    write_jsonl(path, records)
