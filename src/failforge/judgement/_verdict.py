"""What a conformance check concludes about one candidate, kept on the record whatever it says."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Method = Literal["deterministic", "judge", "unverified"]


class JudgeRecord(BaseModel):
    """One judge call: the verdict it gave, its rationale, and the recorded call that replays it."""

    model: str
    exhibited: bool | None = Field(description="None when the judge's answer could not be read as yes or no")
    rationale: str
    raw: str
    call: dict[str, Any] = Field(
        description="the model call as the boundary recorded it (request, request hash, response)"
    )


class ConformanceVerdict(BaseModel):
    """Does the decisive step exhibit the labelled mode?

    ``exhibited`` is True or False when a deterministic check or a judge decided, and None when
    nothing could (a semantic mode with no judge enabled, or a judge answer that was not yes/no).
    """

    mode: str
    exhibited: bool | None
    method: Method
    reason: str
    judge: JudgeRecord | None = None

    @property
    def conformant(self) -> bool:
        return self.exhibited is True
