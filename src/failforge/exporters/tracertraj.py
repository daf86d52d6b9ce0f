"""Export labelled failures as AgenTracer TracerTraj rows (parquet with pyarrow, else JSONL).

Columns and types as in the released ``tracertraj-code-test.parquet``: ``question_ID, question,
ground_truth, history, mistake_agent, mistake_step, mistake_reason``; ``history`` is a list of
``{content, name, role, step}`` with the agent in ``name``, ``role`` always ``"assistant"`` (as in
every released row) and ``step`` the entry's 0-based position; ``mistake_step`` is a string equal to
the gold entry's ``step``. A tool observation is named ``Computer_terminal``, as in the rows built from
Who&When. The output's suffix picks the format: ``.parquet`` or ``.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from failforge.attribution import LabelledFailure
from failforge.errors import ConfigError
from failforge.exporters._common import (
    TOOL_OUTPUT_NAME,
    ExportSummary,
    as_records,
    check_codes,
    safe_name,
    unique_names,
)
from failforge.exporters.whowhen import _reason
from failforge.plugins import exporters
from failforge.trajectory import Trajectory


def to_row(record: LabelledFailure, question_id: str, codes: str = "release") -> dict[str, Any]:
    history = []
    for step in record.steps:
        calls = "".join(f"\n[call {c.name}({c.arguments})]" for c in step.tool_calls)
        name = TOOL_OUTPUT_NAME if step.kind == "tool" else step.agent
        history.append({"content": step.content + calls, "name": name, "role": "assistant", "step": step.index})
    return {
        "question_ID": question_id,
        "question": record.task.question,
        "ground_truth": record.task.gold_answer or "",
        "history": history,
        "mistake_agent": record.gold.agent or record.steps[record.gold.step].agent,
        "mistake_step": str(record.gold.step),
        "mistake_reason": _reason(record, codes),
    }


def _write_parquet(rows: list[dict[str, Any]], target: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ConfigError(
            "writing parquet needs pyarrow: pip install 'failforge[attribution]' (or write .jsonl)"
        ) from exc
    history = pa.list_(
        pa.struct([("content", pa.string()), ("name", pa.string()), ("role", pa.string()), ("step", pa.int64())])
    )
    schema = pa.schema(
        [
            ("question_ID", pa.string()),
            ("question", pa.string()),
            ("ground_truth", pa.string()),
            ("history", history),
            ("mistake_agent", pa.string()),
            ("mistake_step", pa.string()),
            ("mistake_reason", pa.string()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), target)


@exporters.register("tracertraj", description="AgenTracer TracerTraj rows: <out>.parquet (pyarrow) or <out>.jsonl")
def export_tracertraj(
    items: Iterable[Trajectory | LabelledFailure], output: Path, codes: Literal["release", "failforge"] = "release"
) -> ExportSummary:
    check_codes(codes)
    records = as_records(items)
    target = Path(output)
    if target.suffix not in (".parquet", ".jsonl"):
        raise ConfigError(f"{target}: a TracerTraj export is a .parquet or .jsonl file")
    ids = unique_names(records, lambda r: safe_name(r.id))
    rows = [to_row(r, qid, codes) for r, qid in zip(records, ids, strict=False)]
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.suffix == ".parquet":
        _write_parquet(rows, target)
    else:
        target.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return ExportSummary(written=len(rows), files=[str(target)])
