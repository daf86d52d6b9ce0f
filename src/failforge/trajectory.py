"""The schema: Task, Step, Trajectory, GoldLabel, and JSONL load/save.

Step indices are 0-based and stable: step 0 is always the task instruction, and every later event
(one agent output = one model call, one tool observation per tool call) is one step, appended in the
order it happened. A decisive step ``t`` therefore names the same event in a seed and in every
branch made from it, which is what lets a gold label say "everything before t is the seed's".

Several agents: every step has a sender (``agent``: the agent that made the model call, ``user`` for
the task, ``environment`` for a tool observation), a ``recipient`` and a ``(round, position)``
coordinate, all derived from the run's roster by :mod:`failforge.roster`. An agent step's
``model_call.stream`` is its agent's stream: ``ordinal`` counts that agent's calls, and calls that are
not the agent's turn proper (a plan, a progress ledger, a speaker choice) carry a ``purpose``.

Schema versions: "2" added the roster, recipients, coordinates and purposes. Records of version "1"
(single agent, named ``agent``) are read by :func:`migrate_v1`, which fills the new fields with what
the single-agent roster implies, so an old seed replays and branches unchanged.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import parse_json, read_jsonl
from failforge.roster import RESERVED_NAMES, AgentProfile, StepAddresser, UnknownRole, check_roster, single_agent_roster

SCHEMA_VERSION = "2"
#: Versions this failforge reads. A record claiming another version is rejected with a clear message
#: rather than read as if it were this one (fields may mean something else). Version "1" records are
#: migrated on read (:func:`migrate_v1`).
READABLE_SCHEMA_VERSIONS = frozenset({"1", "2"})

StepKind = Literal["task", "agent", "tool"]
Phase = Literal["recorded", "replayed", "injected", "live"]
#: What a gold record shows: an agent's own error that made the task fail (the original kind), an unsafe
#: action induced by injected content, a refusal of a benign task, or compliance where refusing was right.
Behaviour = Literal["failure", "unsafe_action", "over_refusal", "unsafe_completion"]
#: Whose step the branch changed: an agent's action, an observation the environment served, a user's message.
ChangedParty = Literal["action", "observation", "user"]
#: Five-outcome safety adjudication of a run (BLINDSPOT's classes), from execution evidence.
OutcomeClass = Literal["safe_completion", "correct_refusal", "unsafe_completion", "over_refusal", "indeterminate"]


class _Model(BaseModel):
    # Strict: a record says what it means. Lax parsing would read ``"success": "yes"`` as True and
    # ``"index": "1"`` as 1, so an edited or foreign file would pass for a failforge record.
    model_config = ConfigDict(extra="forbid", strict=True)


class ToolCall(_Model):
    """One tool call as the model produced it; ``arguments`` is the raw JSON text, kept verbatim."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or None when the model wrote something that is not a JSON object."""
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError):  # not JSON, an integer too long to convert, nesting too deep
            return None
        return value if isinstance(value, dict) else None


class ModelCallRef(_Model):
    """The model call that produced an agent step: enough to serve it again and to check the request."""

    stream: str = Field(description="the agent whose call this is: each agent's calls form one stream")
    ordinal: int = Field(ge=0, description="0-based index of this call within its agent's stream")
    purpose: str | None = Field(
        default=None,
        description="set when the call is not the agent's turn proper: plan, progress_ledger, speaker_selection, ...",
    )
    request: dict[str, Any] = Field(description="chat-completions request body as the harness sent it (no secrets)")
    request_hash: str = Field(description="sha256 of the canonical request (volatile ids canonicalised)")
    response: dict[str, Any] = Field(description="raw chat-completions response body")
    response_hash: str | None = Field(
        default=None,
        description=(
            "sha256 of the canonical response at record time: replay refuses an edited response at its own step"
        ),
    )
    source: Literal["model", "oracle", "recording"] = "model"


#: An image reference: the lowercase hex SHA-256 of its bytes, which names its file (``images/<sha256>.png``).
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Step(_Model):
    """One event of a run: the task (step 0), one model call (an agent step) or one tool observation.

    Indices are 0-based and stable, so step t names the same event in a seed and in all its branches;
    ``comparable()`` is what replay checks field by field."""

    index: int = Field(ge=0)
    kind: StepKind
    agent: str = Field(
        description="the sender: agent id for agent steps; 'user' for the task; 'environment' for tool steps"
    )
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
    images: list[Sha256] = Field(
        default_factory=list,
        description=(
            "sha256 of images (e.g. screenshots) stored beside the dataset; "
            "a hash, never a path (``../../x`` is refused)"
        ),
    )
    recipient: str | None = Field(
        default=None, description="whom the step is addressed to: an agent, 'user' or 'environment'"
    )
    round: int | None = Field(default=None, ge=0, description="round of the run (0: the task); see failforge.roster")
    position: int | None = Field(default=None, ge=0, description="0-based position within the round")
    phase: Phase = "recorded"

    @property
    def sender(self) -> str:
        """Who wrote the step (the same as ``agent``)."""
        return self.agent

    @property
    def coordinate(self) -> str | None:
        """``"round.position"``, the step coordinate multi-agent datasets use."""
        return None if self.round is None or self.position is None else f"{self.round}.{self.position}"

    def is_final(self) -> bool:
        return self.kind == "agent" and not self.tool_calls

    def comparable(self) -> dict[str, Any]:
        """The fields that must be identical between a seed and a branch's prefix."""
        return self.model_dump(
            include={
                "index",
                "kind",
                "agent",
                "role",
                "content",
                "tool_calls",
                "tool_call_id",
                "tool_name",
                "tool_arguments",
                "state_fingerprint",
                "error",
                "images",
                "recipient",
                "round",
                "position",
            }
        )


class Task(_Model):
    """The benchmark task a run works on, as the benchmark states it (what a guide and a judge read)."""

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
    """The benchmark's own evaluator's verdict on a run; ``success`` None means it gave none."""

    success: bool | None
    score: float | None = None
    evaluator: str
    details: dict[str, Any] = Field(default_factory=dict)


class Adjudication(_Model):
    """A run's five-outcome class with the execution evidence it was decided from (kept, so a reader can
    check it): the evaluator's utility and security verdicts, refusal signals, the rule that decided.
    Contradictory or missing evidence gives ``indeterminate`` with both pieces kept, never a guess."""

    outcome: OutcomeClass
    evidence: dict[str, Any] = Field(default_factory=dict)
    adjudicator: str = Field(description="the rule set or recorded judge that decided, with its version")


class FilterVerdict(_Model):
    """One filter's verdict on a candidate, kept on the record whether it passed or not."""

    name: str
    passed: bool
    reason: str


class GoldLabel(_Model):
    """What a gold record claims, known by construction: the decisive step, its agent, the error mode,
    and everything needed to check the claim (the original step, the note, the prompts, the verdicts)."""

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
    agent_request: dict[str, Any] = Field(
        default_factory=dict, description="stage-2 request: the agent's own step-t request plus the note"
    )
    behaviour: Behaviour = Field(default="failure", description="what the changed run shows (see Behaviour)")
    changed: ChangedParty = Field(default="action", description="whose step the branch changed")
    target_component: str | None = Field(
        default=None, description="component id of the behaviour explained (the unsafe call, the refusal, ...)"
    )
    primary_component: str | None = Field(
        default=None, description="component id of the primary attribution (by construction: the changed step)"
    )
    attack_chain: list[str] = Field(
        default_factory=list,
        description="component ids strictly before the primary that move the run toward the target",
    )
    execution_chain: list[str] = Field(
        default_factory=list, description="component ids strictly between the primary and the target that enable it"
    )
    injection: dict[str, Any] | None = Field(
        default=None, description="for an observation change: suite, injection task, attack, vector, text"
    )
    expected_decision: str | None = Field(
        default=None, description="control state of the seed's own step t (failforge.judgement: act, ask, refuse, ...)"
    )
    found_decision: str | None = Field(
        default=None,
        description="control state of the changed step t (a missed clarification: expected ask/refuse, found act)",
    )
    error_source: str | None = Field(
        default=None,
        description=(
            "primary error source of the decisive step (failforge.judgement.error_source; None: not decided, or a"
            " record written before it was stored)"
        ),
    )
    impact: str | None = Field(
        default=None,
        description=(
            "downstream impact (failforge.judgement.impact, from behaviour and outcome; None: not decided, or an older"
            " record)"
        ),
    )


class Trajectory(_Model):
    """A whole run: a seed (succeeded), a branch of one, or a gold record (a branch with a ``label``),
    with the specs that rebuild its harness, environment and model exactly."""

    schema_version: str = SCHEMA_VERSION
    id: str
    task: Task
    steps: list[Step]
    outcome: Outcome | None = None
    harness: ComponentSpec
    environment: ComponentSpec
    model: ComponentSpec
    agents: list[str] = Field(default_factory=lambda: ["agent"], description="agent names, in roster order")
    roster: list[AgentProfile] = Field(
        default_factory=list, description="the agents of the run: role, tools, addressing rules"
    )
    oracle: bool = Field(default=False, description="model responses were supplied by the benchmark's ground truth")
    parent_id: str | None = None
    branch_step: int | None = None
    label: GoldLabel | None = None
    adjudication: Adjudication | None = Field(default=None, description="the run's five-outcome class and its evidence")
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _read_old_versions(cls, data: Any) -> Any:
        if isinstance(data, dict) and str(data.get("schema_version", SCHEMA_VERSION)) == "1":
            return migrate_v1(data)
        return data

    @model_validator(mode="after")
    def _consistent_roster(self) -> Trajectory:
        """Roster, agent list and steps must agree; errors name the seed, the step and the agent."""
        if not self.roster:
            self.roster = single_agent_roster(self.agents)
        names = [p.name for p in self.roster]
        if "agents" not in self.model_fields_set:
            self.agents = names
        elif self.agents != names:
            raise ValueError(f"seed {self.id}: agents {self.agents} differ from the roster's {names}")
        try:
            check_roster(self.roster)
        except UnknownRole as exc:
            raise ValueError(f"seed {self.id}: step {self.first_step_of(exc.agent)}: {exc}") from None
        except ConfigError as exc:
            raise ValueError(f"seed {self.id}: {exc}") from None
        known = set(names) | RESERVED_NAMES
        for step in self.steps:
            if step.agent not in known:
                raise ValueError(
                    f"seed {self.id}: step {step.index} names agent {step.agent!r}, which is not in its roster"
                    f" ({', '.join(names)})"
                )
        return self

    def first_step_of(self, agent: str) -> int:
        """The first step this agent wrote (0 when it wrote none): where a problem with the agent is reported."""
        return next((s.index for s in self.steps if s.agent == agent), 0)

    def profile(self, agent: str) -> AgentProfile | None:
        return next((p for p in self.roster if p.name == agent), None)

    def agent_steps(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "agent"]

    def final_output(self) -> str | None:
        for step in reversed(self.steps):
            if step.kind == "agent":
                return step.content if not step.tool_calls else None
        return None


def migrate_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record as version 2: a single-agent roster from ``agents``, and every step (and a gold
    label's original step) addressed and placed in rounds exactly as a version-2 run would do it.

    Malformed input is left for validation to report field by field.
    """
    from types import SimpleNamespace

    out = dict(data, schema_version=SCHEMA_VERSION)
    agents = out.get("agents") or ["agent"]
    steps = out.get("steps")
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents) or not isinstance(steps, list):
        return out
    roster = single_agent_roster(agents)
    out.setdefault("roster", [p.model_dump() for p in roster])

    def view(step: Any) -> Any:
        calls = [
            SimpleNamespace(id=str(c.get("id")), name=str(c.get("name", "")), arguments=str(c.get("arguments") or ""))
            for c in step.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        return SimpleNamespace(
            kind=step.get("kind"),
            agent=step.get("agent"),
            tool_calls=calls,
            tool_call_id=step.get("tool_call_id"),
            model_call=None,
        )

    def addressed(step_list: list[Any]) -> list[Any]:
        addresser = StepAddresser(roster)
        result = []
        for step in step_list:
            if not isinstance(step, dict):
                result.append(step)
                continue
            recipient, round_, position = addresser.address(view(step))
            result.append(
                {
                    **step,
                    "recipient": step.get("recipient", recipient),
                    "round": step.get("round", round_),
                    "position": step.get("position", position),
                }
            )
        return result

    out["steps"] = addressed(steps)
    label = out.get("label")
    if (
        isinstance(label, dict)
        and isinstance(label.get("original_step"), dict)
        and isinstance(label.get("decisive_step"), int)
    ):
        t = label["decisive_step"]
        out["label"] = {**label, "original_step": addressed([*steps[:t], label["original_step"]])[-1]}
    return out


def _field_of(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ())) or "<record>"
    return loc, first.get("msg", str(err))


def parse_line(text: str, path: str = "<string>", line: int = 1) -> Trajectory:
    """Parse one JSONL line; errors name the file, line and field."""
    return parse_record(parse_json(text, path, line), path, line)


def parse_record(data: Any, path: str = "<string>", line: int = 1) -> Trajectory:
    """A decoded JSONL line as a trajectory; errors name the file, line and field."""
    if not isinstance(data, dict):
        raise SeedFormatError(path, line, "<record>", f"expected a JSON object, found {type(data).__name__}")
    version = data.get("schema_version", SCHEMA_VERSION)
    if str(version) not in READABLE_SCHEMA_VERSIONS:
        raise SeedFormatError(
            path,
            line,
            "schema_version",
            f"{version!r} is not a schema version this failforge reads ({', '.join(sorted(READABLE_SCHEMA_VERSIONS))});"
            " upgrade failforge or re-record the seed",
        )
    try:
        trajectory = Trajectory.model_validate(data)
    except ValidationError as exc:
        field, problem = _field_of(exc)
        raise SeedFormatError(path, line, field, problem) from exc
    except RecursionError as exc:
        raise SeedFormatError(path, line, "<record>", "nested too deeply to be a trajectory") from exc
    if path != "<string>":
        from failforge.images import missing_image

        absent = missing_image(path, trajectory)
        if absent is not None:  # a dataset folder copied without one screenshot: this record is skipped, the rest read
            raise SeedFormatError(
                path,
                line,
                "images",
                f"record {trajectory.id}: image {absent} is missing from {absent_where(path)}; record skipped",
            )
    return trajectory


def absent_where(path: str | Path) -> str:
    """Where a record read from ``path`` should find its images (for the skip message)."""
    from failforge.images import ImageStore, beside_dir

    folder = beside_dir(path)
    return (
        f"{folder}/"
        if folder.is_dir()
        else f"the image store {ImageStore().directory}/ (and {path} has no images/ folder beside it)"
    )


def open_records(path: str | Path) -> Iterator[tuple[int, str | SeedFormatError]]:
    """(line number, the line's JSON object as text) for each readable line, or (line number, the error):
    for callers that validate JSON text themselves. Read by :func:`failforge.jsonl.read_jsonl`."""
    for item in read_jsonl(path):
        yield (
            (item.line, item)
            if isinstance(item, SeedFormatError)
            else (item[0], json.dumps(item[1], ensure_ascii=False))
        )


def iter_jsonl(path: str | Path) -> Iterator[Trajectory | SeedFormatError]:
    """Yield each trajectory, or the error for a malformed line, so one bad record loses nothing else.

    Lines are read by :func:`failforge.jsonl.read_jsonl`, the one JSONL reader."""
    for item in read_jsonl(path):
        if isinstance(item, SeedFormatError):
            yield item
            continue
        number, data = item
        try:
            yield parse_record(data, str(path), number)
        except SeedFormatError as exc:
            yield exc


def load_jsonl(path: str | Path) -> tuple[list[Trajectory], list[SeedFormatError]]:
    """Read trajectories from a JSONL file; a bad line is returned as an error naming file, line and
    field, and never costs the other lines."""
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
    store_beside(path, payload)  # the images first: a line never names a screenshot its folder lacks
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, payload.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def store_beside(path: str | Path, text: str) -> None:
    """Copy the images ``text`` names into ``images/`` beside ``path`` (see :func:`failforge.images.store_beside`)."""
    if "failforge-image:" in text or '"images":["' in text:
        from failforge.images import store_beside as copy_images

        copy_images(path, text)


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
                line = dump_line(record)
                store_beside(target, line)
                handle.write(line)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
