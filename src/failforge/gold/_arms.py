"""The decisiveness check's original arm: the seed's own step a_t, continued live, once per (seed, t).

A candidate is gold only if the injected step is what made the run fail. The other half of that claim
is that the seed's own step, continued live by the same agent model under the same settings, still
succeeds. That run does not depend on the mode, the note or the sample, so it is made once per
(seed, t) and shared by every attempt planned there: the driver runs the arms a campaign needs before
the attempts, through the same executor, and keeps them in ``arms.jsonl`` in the campaign folder
(resumable; only rows of the campaign's own config hash and seed are reused). A point whose arm fails
costs its attempts nothing: they are rejected without a guide or agent call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from failforge.canonical import canonical_hash
from failforge.errors import DriftError
from failforge.gold._config import CampaignConfig, DecisivenessConfig
from failforge.gold._kind import JobSpec
from failforge.gold._models import Models
from failforge.gold._result import AttemptResult, Rejection
from failforge.replay import branch
from failforge.trajectory import Trajectory

ARMS = "arms.jsonl"
ARM_MODE = "original-arm"


class ArmSpec(JobSpec, frozen=True):
    """The original arm at one point; shaped like an attempt so that every executor runs it unchanged."""

    key: str
    mode: str = ARM_MODE
    job: Literal["original-arm"] = "original-arm"

    @property
    def attempt_id(self) -> str:
        return f"{self.seed_id}@{self.step}:{ARM_MODE}"


class ArmRun(BaseModel):
    """One live continuation from the seed's own a_t."""

    success: bool | None
    score: float | None = None
    evaluator: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    live_calls: int
    seconds: float


class OriginalArm(BaseModel):
    """The settled original arm of one (seed, t): its runs and what they say about the point."""

    key: str = Field(
        description="config hash, seed content and step: a row is reused only by the campaign and seed it was made for"
    )
    seed_id: str
    step: int
    status: Literal["measured", "drift"]
    k: int
    temperature: float | None
    runs: list[ArmRun] = Field(default_factory=list)
    error: dict[str, Any] | None = Field(
        default=None, description="drift: the seed does not replay up to t with its own step"
    )
    cost: dict[str, Any] | None = Field(
        default=None, description="what settling the arm spent: seconds, and live calls and tokens by role"
    )

    @property
    def successes(self) -> int:
        return sum(1 for run in self.runs if run.success)

    @property
    def success_rate(self) -> float:
        return self.successes / len(self.runs) if self.runs else 0.0

    @property
    def live_calls(self) -> int:
        return sum(run.live_calls for run in self.runs)

    @property
    def seconds(self) -> float:
        return sum(run.seconds for run in self.runs)

    def passes(self, cfg: DecisivenessConfig) -> bool:
        return self.status == "measured" and self.success_rate >= cfg.original_min_success

    def alone(self) -> dict[str, Any]:
        """``provenance.decisiveness`` of a record whose injected arm was not run (its point failed, or another filter
        rejected it)."""
        return {"checked": True, "original": self.verdict(), "original_success_rate": self.success_rate}

    def verdict(self) -> dict[str, Any]:
        """What every record of this point carries about the original arm."""
        return {
            "k": self.k,
            "successes": self.successes,
            "success_rate": self.success_rate,
            "temperature": self.temperature,
            "live_calls": self.live_calls,
            "seconds": round(self.seconds, 3),
            "key": self.key,
            "outcomes": [{"success": r.success, "score": r.score, "evaluator": r.evaluator} for r in self.runs],
        }

    def why_not_decisive(self, cfg: DecisivenessConfig) -> str:
        if self.status == "drift":
            return f"the seed does not replay up to step {self.step} ({(self.error or {}).get('message', 'drift')})"
        failed = [r for r in self.runs if not r.success]
        detail = (
            f" (evaluator {failed[0].evaluator}: {_short(failed[0].details)})" if failed and failed[0].evaluator else ""
        )
        return (
            f"the seed's own step {self.step} continued live succeeded {self.successes} of {len(self.runs)} time(s) "
            f"(needs {cfg.original_min_success:.0%}){detail}: step {self.step} does not decide the outcome"
        )


def _short(details: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in list(details.items())[:3])
    return text[:160] or "no details"


def arm_key(config_hash: str, seed_hash: str, step: int) -> str:
    """Which arm a row is: the campaign's config hash, the seed's content hash and the step (another config or an edited
    seed misses)."""
    return canonical_hash({"config": config_hash, "seed": seed_hash, "step": step})[:24]


def continuing_agent(models: Models, cfg: DecisivenessConfig, deadline: float, run: int) -> Any:
    """The agent one run of either arm continues with: the candidate's own settings, or sampled with a seed per run."""
    if cfg.temperature is None:
        return models.agent(deadline=deadline)
    return models.agent(deadline=deadline, temperature=cfg.temperature, seed=run + 1)


def run_original_arm(seed: Trajectory, spec: ArmSpec, models: Models, config: CampaignConfig) -> OriginalArm:
    """Replay ``seed`` to ``spec.step``, serve its own a_t, continue live ``original_k`` times.

    Drift is the seed's and deterministic: a settled ``drift`` arm. Anything else (a dead endpoint, a
    crashed browser) propagates: the executor records it failed and the point's attempts with it, to be
    retried on the next run.
    """
    cfg = config.filters.decisiveness
    deadline = time.monotonic() + config.attempt_deadline
    original = seed.steps[spec.step].model_call.response  # type: ignore[union-attr]
    runs: list[ArmRun] = []
    for i in range(cfg.original_k):
        started = time.monotonic()
        agent = continuing_agent(models, cfg, deadline, i)
        try:
            result = branch(
                seed,
                spec.step,
                response=original,
                agent=agent,
                agent_model=models.agent_spec,
                branch_id=f"original-arm-{i}",
                deadline=deadline,
            )
        except DriftError as exc:
            return OriginalArm(
                key=spec.key,
                seed_id=seed.id,
                step=spec.step,
                status="drift",
                k=cfg.original_k,
                temperature=cfg.temperature,
                runs=runs,
                error=exc.of_seed(seed.id).to_dict(),
            )
        outcome = result.trajectory.outcome
        runs.append(
            ArmRun(
                success=outcome.success if outcome else None,
                score=outcome.score if outcome else None,
                evaluator=outcome.evaluator if outcome else None,
                details=dict(outcome.details) if outcome else {},
                live_calls=result.live_calls,
                seconds=round(time.monotonic() - started, 3),
            )
        )
    return OriginalArm(
        key=spec.key,
        seed_id=seed.id,
        step=spec.step,
        status="measured",
        k=cfg.original_k,
        temperature=cfg.temperature,
        runs=runs,
    )


@dataclass
class ArmResult:
    """What an executor hands back for an :class:`ArmSpec` (beside attempts' :class:`AttemptResult`)."""

    record: OriginalArm
    status: Literal["arm"] = "arm"

    @property
    def attempt_id(self) -> str:
        return f"{self.record.seed_id}@{self.record.step}:{ARM_MODE}"


NOT_CHECKED = {
    "checked": False,
    "reason": "decisiveness not checked: turned off in the campaign ([filters.decisiveness] enabled = false)",
}


def not_decisive(arm: OriginalArm, config: CampaignConfig, base: dict[str, Any]) -> AttemptResult:
    """An attempt at a point whose original arm failed: rejected before any guide or agent call.

    A drifting seed is the seed's fault, not the candidate's: failed (drift), like a drift in the attempt's own replay.
    """
    from failforge.trajectory import FilterVerdict

    cfg = config.filters.decisiveness
    provenance = {**base["provenance"], "decisiveness": arm.alone()}
    fields = {**base, "provenance": provenance}
    reason = arm.why_not_decisive(cfg)
    if arm.status == "drift":
        return AttemptResult(
            "failed",
            Rejection(
                **fields,
                status="failed",
                stage="decisiveness",
                reasons=[f"DriftError: original arm: {reason}"],
                error=arm.error,
                error_kind="drift",
            ),
        )
    verdict = FilterVerdict(name="decisiveness", passed=False, reason=f"original arm: {reason}")
    return AttemptResult(
        "rejected",
        Rejection(
            **fields,
            status="rejected",
            stage="decisiveness",
            reasons=[f"decisiveness: {verdict.reason}"],
            verdicts=[verdict],
        ),
    )


def arm_unsettled(base: dict[str, Any], arm_failure: Rejection) -> AttemptResult:
    """An attempt whose point's original arm could not be run (its worker failed): failed with the arm's error and
    kind (infrastructure is retried on the next run)."""
    return AttemptResult(
        "failed",
        Rejection(
            **base,
            status="failed",
            stage="decisiveness",
            reasons=[f"original arm: {r}" for r in arm_failure.reasons],
            error=arm_failure.error,
            error_kind=arm_failure.error_kind,
        ),
    )
