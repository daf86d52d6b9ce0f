"""AgenTracer's TracerTraj: one trajectory per row, from parquet or JSONL.

Layout as released (``data/tracertraj-code-test.parquet`` in bingreeky/AgenTracer, 127 rows): seven
columns ``question_ID, question, ground_truth, history, mistake_agent, mistake_step, mistake_reason``;
``history`` is a list of ``{content, name, role, step}`` with the acting agent in ``name`` (``role`` is
``"assistant"`` throughout) and ``step`` an int equal to the entry's position; ``mistake_step`` is a
*string*. As in Who&When, an entry by ``Computer_terminal`` is a tool's output (a tool step, not an
agent) and one by ``human``/``user`` is the task. AgenTracer's own pipeline locates the mistake by
``str(entry["step"]) == str(mistake_step)``
(``MetaGPT/Who_When_Data_Pipeline/diagnose_fail_log_metagpt.py: validate_diagnosis``), and so does
this importer; entries without ``step`` fall back to their position.

Parquet needs pyarrow (``pip install 'failforge[attribution]'``); JSONL needs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from failforge.attribution._record import FailureStep, Gold, LabelledFailure, Origin, RecordProblem, TaskInfo
from failforge.attribution.importers._common import Skip, int_step, require_str, text_of
from failforge.attribution.importers.whowhen import HUMANS, TERMINALS
from failforge.errors import ConfigError, SeedFormatError
from failforge.jsonl import parse_json, read_jsonl
from failforge.plugins import importers

COLUMNS = ("question_ID", "question", "ground_truth", "history", "mistake_agent", "mistake_step", "mistake_reason")


def read_parquet_rows(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ConfigError(
            f"{path}: reading parquet needs pyarrow: pip install 'failforge[attribution]' (or convert the file to"
            " JSONL)"
        ) from exc
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError family
        raise ConfigError(f"{path}: not a readable parquet file: {exc}") from exc


def read_row(row: Any, path: Path, number: int) -> LabelledFailure:
    if not isinstance(row, dict):
        raise Skip("<row>", f"expected an object, found {type(row).__name__}")
    history = row.get("history")
    if isinstance(history, str):  # some exports keep the list JSON-encoded
        try:
            history = parse_json(history)
        except SeedFormatError as exc:
            raise Skip("history", f"a string that is not JSON: {exc.problem}") from None
    if not isinstance(history, list) or not history:
        raise Skip("history", "missing or empty")
    steps: list[FailureStep] = []
    by_step: dict[str, int] = {}
    for i, entry in enumerate(history):
        if not isinstance(entry, dict):
            raise Skip(f"history[{i}]", f"expected an object, found {type(entry).__name__}")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise Skip(f"history[{i}].name", "missing")
        low = (
            name.strip().lower()
        )  # as in Who&When, which TracerTraj rows are built from: the terminal is a tool's output
        kind: Literal["user", "agent", "tool"] = "tool" if low in TERMINALS else "user" if low in HUMANS else "agent"
        steps.append(
            FailureStep(
                index=i, kind=kind, agent=name, role=text_of(entry.get("role")), content=text_of(entry.get("content"))
            )
        )
        by_step[str(entry["step"]) if entry.get("step") is not None else str(i)] = i
    agent = require_str(row, "mistake_agent")
    raw = row.get("mistake_step")
    if raw is None:
        raise Skip("mistake_step", "missing")
    int_step(raw, "mistake_step")
    index = by_step.get(str(raw).strip())
    if index is None:
        raise Skip("mistake_step", f"{raw!r} matches no history entry's step")
    warnings = []
    if steps[index].agent != agent:
        warnings.append(f"history[{index}] is by {steps[index].agent!r}, the label names {agent!r}")
    if not isinstance(raw, str):
        warnings.append(f"mistake_step is a {type(raw).__name__}, the release writes a string")
    qid = text_of(row.get("question_ID")) or f"row{number}"
    agents: list[str] = []
    for s in steps:
        if s.kind == "agent" and s.agent not in agents:
            agents.append(s.agent)
    return LabelledFailure(
        id=f"tracertraj/{path.stem}/{qid}",
        source=f"tracertraj/{path.stem}",
        framework=text_of(row.get("framework")) or "unknown",
        topology="multi" if len(agents) > 1 or agent not in agents else "single",
        modality="text",
        agents=agents if agent in agents else [*agents, agent],
        task=TaskInfo(question=require_str(row, "question"), gold_answer=text_of(row.get("ground_truth")) or None),
        steps=steps,
        gold=Gold(agent=agent, step=index, step_label=str(raw), rationale=text_of(row.get("mistake_reason")) or None),
        origin=Origin(
            format="tracertraj",
            path=str(path),
            line=number,
            row_id=qid,
            step_convention=(
                "one history entry = one step; mistake_step equals the entry's 'step' field (its 0-based position)"
            ),
            warnings=warnings,
        ),
        extra={k: v for k, v in row.items() if k not in COLUMNS},
    )


def _rows(path: Path) -> Iterator[tuple[int, Any] | RecordProblem]:
    if path.suffix == ".parquet":
        yield from enumerate(read_parquet_rows(path), start=1)
        return
    for item in read_jsonl(path):
        yield RecordProblem.of(item) if isinstance(item, SeedFormatError) else item


def tracer_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted([*path.glob("*.parquet"), *path.glob("*.jsonl")])
        if files:
            return files
    raise ConfigError(f"{path}: no TracerTraj .parquet or .jsonl file")


@importers.register("tracertraj", description="AgenTracer TracerTraj rows (parquet with pyarrow, or JSONL)")
def import_tracertraj(path: Path) -> Iterator[LabelledFailure | RecordProblem]:
    for file in tracer_files(Path(path)):
        for item in _rows(file):
            if isinstance(item, RecordProblem):
                yield item
                continue
            number, row = item
            try:
                yield read_row(row, file, number)
            except Skip as skip:
                yield skip.at(str(file), number)
            except (ValueError, TypeError) as exc:
                yield RecordProblem(
                    path=str(file), line=number, field="<row>", problem=" ".join(str(exc).split())[:300]
                )
