"""A method's prediction for one record, as written to ``predictions.jsonl`` and read by ``score``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from failforge.attribution._audit import Audit
from failforge.attribution._record import RecordProblem, iter_validated


class Prediction(BaseModel):
    """Who, when, how, plus everything needed to audit it. Unreadable fields stay None (scored wrong)."""

    model_config = ConfigDict(extra="forbid")

    attempt_id: str
    record_id: str
    method: str
    agent: str | None = None
    step: int | None = None
    mode: str | None = None
    step_text: str | None = Field(
        default=None, description="the step exactly as the judge wrote it (digits), as failforge read it"
    )
    description: str | None = Field(
        default=None, description="free-text error description, before it was mapped to a mode"
    )
    reply: str | None = Field(default=None, description="the decisive judge reply, verbatim")
    replies: list[str] = Field(default_factory=list, description="every judge reply of the session, verbatim, in order")
    problems: list[str] = Field(default_factory=list)
    step_scores: list[float | None] | None = Field(
        default=None, description="likelihood methods: one score per step (None = not a candidate)"
    )
    ranking: list[str] | None = Field(
        default=None, description="component ids, most likely primary first (component-level methods)"
    )
    attack_chain: list[str] | None = Field(default=None, description="predicted attack chain (component ids, in order)")
    execution_chain: list[str] | None = Field(
        default=None, description="predicted execution chain (component ids, in order)"
    )
    chain_threshold: float | None = Field(
        default=None, description="likelihood methods: tau of the chain rule (kept: c_j > 0 and c_j >= tau * c_primary)"
    )
    audit: Audit | None = Field(
        default=None, description="auditor: its whole validated output (decision map, O/C/T, source, impact)"
    )
    calls: int = 0
    live_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


def iter_predictions(path: str | Path) -> Iterator[Prediction | RecordProblem]:
    return iter_validated(path, Prediction)


def load_predictions(path: str | Path) -> tuple[list[Prediction], list[RecordProblem]]:
    good: list[Prediction] = []
    bad: list[RecordProblem] = []
    for item in iter_predictions(path):
        (bad if isinstance(item, RecordProblem) else good).append(item)  # type: ignore[arg-type]
    return good, bad
