"""The proxy's run API: every request and response body as a pydantic model.

These models validate what arrives (a body that fails is a 400 naming the field and showing the
expected shape) and are the source of the published JSON schemas (``GET /openapi.json``), so the
documentation and the validation cannot disagree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.roster import AgentProfile
from failforge.trajectory import Outcome

#: The run modes the proxy serves (a subset of :data:`failforge.runlog.Mode`, spelled the same way).
ProxyMode = Literal["record", "replay", "branch"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InjectedCall(_Body):
    name: str = Field(min_length=1, description="the tool the injected response calls")
    arguments: dict[str, Any] = Field(default_factory=dict)


class Injection(_Body):
    """The response served at the branch step instead of the recorded one (the mistake)."""

    content: str | None = None
    tool_calls: list[InjectedCall] = Field(default_factory=list)


class RunRequest(_Body):
    """``POST /runs``: the run to open and its mode."""

    mode: ProxyMode = "record"
    run_id: str | None = Field(default=None, max_length=128, description="a name for the run (default: a fresh id)")
    framework: str = Field(default="external", description="recorded in the trajectory's harness spec")
    model: str = "external-model"
    task: str | None = Field(default=None, description="the instruction (step 0); in replay it must equal the seed's")
    benchmark: str = "external"
    task_id: str = "task"
    roster: list[AgentProfile] = Field(
        default_factory=list, description="the agents; empty: an open roster (agents join as they call)"
    )
    seed_id: str | None = Field(
        default=None, description="replay/branch: a seed the proxy was started with, or a run it finished"
    )
    seed: dict[str, Any] | None = Field(default=None, description="replay/branch: the seed itself (a trajectory)")
    branch_at: int | None = Field(default=None, ge=1, description="branch: the step served by the injection (or live)")
    injection: Injection | None = None


class ToolReport(_Body):
    """``POST /runs/{id}/tools``: one tool call the outside process ran, and what it saw."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] | None = None
    tool_call_id: str | None = None
    observation: str
    error: str | None = None
    state: dict[str, Any] = Field(
        default_factory=dict, description="the environment's state after the call, by part; fingerprinted here"
    )


class FinishRequest(_Body):
    """``POST /runs/{id}/finish``: the run's final answer and, for a recording, the outside evaluator's verdict."""

    final_output: str | None = None
    outcome: Outcome | None = None


class RunOpened(BaseModel):
    run_id: str
    token: str = Field(
        description=(
            "the run's capability token: every route of the run needs it "
            "(X-Failforge-Token, or the path segment id~token)"
        )
    )
    base_url: str = Field(
        description=(
            "the run's model base URL, carrying the token (agents name themselves by "
            "header); per agent: {base}/runs/{id}~{token}/agents/{agent}/v1"
        )
    )
    mode: ProxyMode
    replay_until: int


class Failure(BaseModel):
    type: str
    message: str
    step: int | None = None
    agent: str | None = None
    trajectory_id: str | None = Field(default=None, description="for a drift: the seed's id")
    nearest: list[dict[str, Any]] = Field(
        default_factory=list, description="for a request that matched none: the nearest recorded requests"
    )


class RunResult(BaseModel):
    """``POST /runs/{id}/finish`` and ``GET /runs/{id}`` of a finished run."""

    run_id: str
    status: Literal["finished", "failed"]
    trajectory: dict[str, Any]
    identical: bool | None = Field(default=None, description="replay: whether the run reproduced the seed")
    failure: Failure | None = None


class RunStatus(BaseModel):
    """``GET /runs/{id}`` of an open run."""

    run_id: str
    status: Literal["open"] = "open"
    mode: ProxyMode
    steps: int
    replay_until: int
    agents: list[str]
    failure: Failure | None = None


class ToolRecorded(BaseModel):
    step: int
    state_fingerprint: str | None


class ErrorDetail(BaseModel):
    message: str
    type: str
    code: str
    param: str | None = None
    expected: dict[str, Any] | None = Field(
        default=None, description="a body that failed its schema: the JSON schema it must fit"
    )


class ErrorBody(BaseModel):
    error: ErrorDetail


__all__ = [
    "ErrorBody",
    "ErrorDetail",
    "Failure",
    "FinishRequest",
    "InjectedCall",
    "Injection",
    "ProxyMode",
    "RunOpened",
    "RunRequest",
    "RunResult",
    "RunStatus",
    "ToolRecorded",
    "ToolReport",
]
