"""What the AgentAtlas trajectory auditor says about one record, as data (kept on predictions and records).

Separate from the method (``_auditor.py``) so the record and prediction schemas can hold an audit without
importing the method machinery. The states, error sources and impacts are failforge's own
(:mod:`failforge.judgement`), so an audit and failforge's rule-based labels use one vocabulary.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.judgement import ErrorSource, Impact

AuditState = Literal["act", "ask", "refuse", "stop", "confirm", "recover"]


class AuditDecision(BaseModel):
    """One agent step's control decision as the auditor judged it; the quote was checked against the step's text."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    state: AuditState
    evidence: str = Field(
        description="the auditor's quote from the step (found in the step's text, whitespace and case aside)"
    )
    confidence: float = Field(ge=0, le=1, description="the auditor's confidence that the decision was right")


class Audit(BaseModel):
    """The auditor's validated output; a field it gave invalidly (twice) is None, with the problem in ``problems``."""

    model_config = ConfigDict(extra="forbid")

    decisions: list[AuditDecision] = Field(default_factory=list)
    outcome: int | None = Field(default=None, ge=0, le=5, description="O: did the run reach its goal (0-5)")
    control: int | None = Field(default=None, ge=0, le=5, description="C: control-decision quality (0-5)")
    trajectory: int | None = Field(default=None, ge=0, le=5, description="T: trajectory quality (0-5)")
    error_source: ErrorSource | None = None
    impact: Impact | None = None
    agent: str | None = None
    step: int | None = None
    mode: str | None = None
    description: str | None = Field(default=None, description="free-text arm: the auditor's own words before mapping")
    reason: str | None = None
    mode_source: ErrorSource | None = Field(
        default=None,
        description="failforge's mode-to-source table (decisions.SOURCE_BY_MODE) for ``mode``: agreement check",
    )
    problems: list[str] = Field(default_factory=list)
    method: str | None = Field(
        default=None, description="set when attached to a record: the method key that produced it"
    )
    judge_model: str | None = Field(default=None, description="set when attached to a record: the judge model")
