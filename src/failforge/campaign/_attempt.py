"""One attempt, (seed, step, mode, sample) → gold, rejected or failed. Pure: no files, no ledger.

It runs in a worker thread or a Ray task and returns its result to the driver, which alone writes.
A bad candidate is never an exception: it is a rejection with reasons. Infrastructure trouble and
drift are ``failed`` with the error, never counted as rejections.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from failforge.adjudication import adjudicate
from failforge.campaign._arms import ArmSpec, OriginalArm, arm_key, continuing_agent, run_original_arm
from failforge.campaign._config import CampaignConfig
from failforge.campaign._models import Models
from failforge.canonical import canonical_hash
from failforge.conformance import ConformanceVerdict, assess, is_structural
from failforge.decisions import control_change
from failforge.errors import DriftError, InfrastructureError
from failforge.filters import FilterContext, run_filters
from failforge.injection import RULES_GUIDE, RULES_VERSION, AttemptSpec, GuideResult, branch, guide_kind_for, guide_request, rules_note, write_steering_note
from failforge.llm import BoundedResponder
from failforge.taxonomy import ErrorMode, get_mode
from failforge.trajectory import FilterVerdict, GoldLabel, Trajectory


class Rejection(BaseModel):
    attempt_id: str
    seed_id: str
    step: int
    mode: str
    sample: int
    status: Literal["rejected", "failed"]
    stage: Literal["plan", "guide", "replay", "continuation", "filters", "decisiveness", "output"]
    """Where the attempt stopped; ``output``: its record could not be written (a screenshot it names is nowhere)."""
    reasons: list[str]
    verdicts: list[FilterVerdict] = Field(default_factory=list)
    note: str | None = None
    error: dict[str, Any] | None = None
    error_kind: Literal["drift", "infrastructure", "error", "interrupted"] | None = Field(
        default=None, description="for failed attempts: drift (the seed does not replay), infrastructure (retried on the next run), error (a bug), interrupted"
    )
    trajectory: Trajectory | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)


@dataclass
class AttemptResult:
    status: Literal["gold", "rejected", "failed"]
    record: Trajectory | Rejection

    @property
    def attempt_id(self) -> str:
        if isinstance(self.record, Rejection):
            return self.record.attempt_id
        return str(self.record.provenance["attempt_id"])


def _error(exc: BaseException) -> dict[str, Any]:
    return exc.to_dict() if isinstance(exc, DriftError) else {"type": type(exc).__name__, "message": str(exc)}


def error_kind(exc: BaseException) -> Literal["drift", "infrastructure", "error"]:
    """Drift is the seed's (deterministic, never retried by default); infrastructure is the world's
    (a dead endpoint, a crashed browser: retried on the next run); anything else is a bug of ours."""
    if isinstance(exc, DriftError):
        return "drift"
    if isinstance(exc, InfrastructureError):
        return "infrastructure"
    return "error"


def original_arm(seed: Trajectory, spec: AttemptSpec, models: Models, config: CampaignConfig) -> OriginalArm:
    """The point's original arm: the one the driver settled and handed over, or measured here."""
    if spec.original_arm is not None:
        return OriginalArm.model_validate(spec.original_arm)
    key = arm_key(config.config_hash(), canonical_hash(seed.model_dump(mode="json")), spec.step)
    return run_original_arm(seed, ArmSpec(seed_id=seed.id, step=spec.step, key=key), models, config)


def not_decisive(arm: OriginalArm, config: CampaignConfig, base: dict[str, Any]) -> AttemptResult:
    """An attempt at a point whose original arm failed: rejected before any guide or agent call.

    A drifting seed is the seed's fault, not the candidate's: failed (drift), like a drift in the attempt's own replay.
    """
    cfg = config.filters.decisiveness
    provenance = {**base["provenance"], "decisiveness": arm.alone()}
    fields = {**base, "provenance": provenance}
    reason = arm.why_not_decisive(cfg)
    if arm.status == "drift":
        return AttemptResult("failed", Rejection(**fields, status="failed", stage="decisiveness", reasons=[f"DriftError: original arm: {reason}"],
                                                 error=arm.error, error_kind="drift"))
    verdict = FilterVerdict(name="decisiveness", passed=False, reason=f"original arm: {reason}")
    return AttemptResult("rejected", Rejection(**fields, status="rejected", stage="decisiveness", reasons=[f"decisiveness: {verdict.reason}"], verdicts=[verdict]))


def decisiveness(
    seed: Trajectory, spec: AttemptSpec, candidate: Trajectory, injected: dict[str, Any], arm: OriginalArm, models: Models, config: CampaignConfig, deadline: float
) -> tuple[dict[str, Any], FilterVerdict]:
    """Both arms' verdicts on a candidate: the point's shared original arm, and the injected arm (the
    candidate's own continuation first, then re-runs from its recorded ã_t)."""
    cfg = config.filters.decisiveness
    outcomes: list[bool] = []
    if cfg.temperature is None:
        outcomes.append(bool(candidate.outcome and candidate.outcome.success))
    for i in range(cfg.injected_k - len(outcomes)):
        agent = continuing_agent(models, cfg, deadline, i)
        run = branch(seed, spec.step, response=injected, agent=agent, agent_model=models.agent_spec, branch_id=f"decisive-injected-{i}", deadline=deadline)
        outcomes.append(bool(run.trajectory.outcome and run.trajectory.outcome.success))
    injected_rate = sum(outcomes) / len(outcomes)
    rates: dict[str, Any] = {
        "checked": True,
        "original": arm.verdict(),
        "injected": {"k": cfg.injected_k, "successes": sum(outcomes), "success_rate": injected_rate, "temperature": cfg.temperature,
                     "first_is_candidate": cfg.temperature is None},
        "original_success_rate": arm.success_rate,
        "injected_success_rate": injected_rate,
        "original_min_success": cfg.original_min_success,
        "injected_max_success": cfg.injected_max_success,
    }
    ok = arm.passes(cfg) and injected_rate <= cfg.injected_max_success
    reason = (f"original arm succeeded {arm.successes}/{arm.k}, injected arm {sum(outcomes)}/{cfg.injected_k}"
              f"{'' if cfg.temperature is None else f' at T={cfg.temperature}'}")
    return rates, FilterVerdict(name="decisiveness", passed=ok, reason=reason)


def _base(seed: Trajectory, spec: AttemptSpec, provenance: dict[str, Any]) -> dict[str, Any]:
    return {"attempt_id": spec.attempt_id, "seed_id": seed.id, "step": spec.step, "mode": spec.mode, "sample": spec.sample, "provenance": provenance}


def not_decisive_attempt(seed: Trajectory, spec: AttemptSpec, arm: OriginalArm, config: CampaignConfig, provenance: dict[str, Any]) -> AttemptResult:
    """:func:`not_decisive` for the driver, which settles such attempts without sending them to an executor."""
    return not_decisive(arm, config, _base(seed, spec, provenance))


def arm_unsettled(seed: Trajectory, spec: AttemptSpec, arm_failure: Rejection, provenance: dict[str, Any]) -> AttemptResult:
    """An attempt whose point's original arm could not be run (its worker failed): failed with the arm's error and
    kind (infrastructure is retried on the next run)."""
    return AttemptResult("failed", Rejection(
        **_base(seed, spec, provenance), status="failed", stage="decisiveness", reasons=[f"original arm: {r}" for r in arm_failure.reasons],
        error=arm_failure.error, error_kind=arm_failure.error_kind,
    ))


NOT_CHECKED = {"checked": False, "reason": "decisiveness not checked: turned off in the campaign ([filters.decisiveness] enabled = false)"}


def judge_conformance(seed: Trajectory, trajectory: Trajectory, spec: AttemptSpec, mode: ErrorMode, models: Models, config: CampaignConfig, deadline: float) -> ConformanceVerdict:
    """The candidate's conformance verdict: a rule for structural modes, the judge (if enabled) for the rest.

    The judge is the guide endpoint unless the campaign names one; its call goes through the model
    boundary and is kept on the record, so the verdict replays without a model.
    """
    cfg = config.filters.conformance
    injected = trajectory.steps[spec.step]
    if not cfg.judge or is_structural(mode.code):
        return assess(seed, injected, spec.step, mode)
    if cfg.judge_model is None:
        return assess(seed, injected, spec.step, mode, judge=models.guide(deadline=deadline), judge_model=models.guide_spec.name, record_id=spec.attempt_id)
    upstream = cfg.judge_model.upstream()
    try:
        return assess(seed, injected, spec.step, mode, judge=BoundedResponder(upstream, deadline=deadline), judge_model=cfg.judge_model.model, record_id=spec.attempt_id)
    finally:
        upstream.close()


def with_agent_command(seed: Trajectory, command: list[str] | None) -> Trajectory:
    """An external-harness seed run with another agent command (the campaign's ``agent_cmd``); other seeds unchanged."""
    if not command or seed.harness.name != "external":
        return seed
    return seed.model_copy(update={"harness": seed.harness.model_copy(update={"config": {**seed.harness.config, "command": list(command)}})})


def run_attempt(seed: Trajectory, spec: AttemptSpec, models: Models, config: CampaignConfig, provenance: dict[str, Any]) -> AttemptResult:
    seed = with_agent_command(seed, config.agent_cmd)
    started = time.monotonic()
    deadline = started + config.attempt_deadline
    mode = get_mode(spec.mode)
    kind = guide_kind_for(config.guide_kind, mode.code, seed, spec.step)
    guide_name = f"{RULES_GUIDE}-v{RULES_VERSION}" if kind == "rules" else models.guide_spec.name
    provenance = {**provenance, "guide_kind": kind, "guide_name": guide_name}
    base = {**_base(seed, spec, provenance), "mode": mode.code}

    def failed(stage: str, exc: BaseException, note: str | None = None) -> AttemptResult:
        return AttemptResult("failed", Rejection(**base, status="failed", stage=stage, reasons=[f"{type(exc).__name__}: {exc}"], note=note, error=_error(exc), error_kind=error_kind(exc)))  # type: ignore[arg-type]

    arm: OriginalArm | None = None
    if config.filters.decisiveness.enabled:
        try:
            arm = original_arm(seed, spec, models, config)
        except Exception as exc:  # infrastructure or a bug: failed with its error (retried when infrastructure)
            return failed("decisiveness", exc)
        if not arm.passes(config.filters.decisiveness):
            return not_decisive(arm, config, base)
    guide: GuideResult
    if kind == "rules":
        guide = rules_note(seed, spec.step, mode, rng_seed=config.plan.rng_seed, sample=spec.sample)
    else:
        g_request = guide_request(
            seed, spec.step, mode, model=models.guide_spec.name, temperature=config.guide_temperature, seed_value=config.plan.rng_seed * 1000 + spec.sample
        )
        try:
            guide = write_steering_note(models.guide(deadline=deadline), g_request, mode)
        except InfrastructureError as exc:
            return failed("guide", exc)
    if not guide.feasible or guide.note is None:
        return AttemptResult("rejected", Rejection(**base, status="rejected", stage="guide", reasons=[guide.reason], note=guide.raw or None))
    try:
        result = branch(
            seed, spec.step, note=guide.note, agent=models.agent(deadline=deadline), agent_model=models.agent_spec,
            branch_id=f"gold-{canonical_hash(spec.attempt_id)[:12]}", pin_tool=guide.pin_tool if config.pin_tool else None, deadline=deadline,
        )
    except DriftError as exc:
        return failed("replay", exc.of_seed(seed.id), guide.note)
    except Exception as exc:  # infrastructure or a bug: failed with its error; the campaign goes on
        return failed("continuation", exc, guide.note)
    trajectory = result.trajectory
    trajectory.provenance.update(provenance)
    trajectory.provenance["attempt_id"] = spec.attempt_id
    if trajectory.environment.name in ("agentdojo", "tau2"):  # five-outcome class from the benchmark's evidence, on gold and rejected alike
        trajectory.adjudication = adjudicate(trajectory)
    try:
        conformance = judge_conformance(seed, trajectory, spec, mode, models, config, deadline)
    except Exception as exc:  # a judge that is down, or a bug: failed with its error, never a rejection
        return failed("filters", exc, guide.note)
    trajectory.provenance["conformance"] = conformance.model_dump(mode="json")
    context = FilterContext(
        seed=seed, branch=trajectory, step=spec.step, mode=mode, note=guide.note, guide_request=guide.request,
        conformance=conformance, keep_unverified=config.filters.conformance.keep_unverified,
    )
    verdicts = run_filters(context, config.filters.enabled)
    rejected = [v for v in verdicts if not v.passed]
    if not rejected and config.filters.decisiveness.enabled:
        try:
            rates, verdict = decisiveness(seed, spec, trajectory, result.stage_two.response, arm, models, config, deadline)  # type: ignore[arg-type]
        except Exception as exc:
            return failed("decisiveness", exc, guide.note)
        trajectory.provenance["decisiveness"] = rates
        verdicts.append(verdict)
        if not verdict.passed:
            rejected = [verdict]
    elif arm is not None:  # rejected by another filter: the injected arm is not run, the shared original arm is still told
        trajectory.provenance["decisiveness"] = arm.alone()
    else:
        trajectory.provenance["decisiveness"] = dict(NOT_CHECKED)
    if rejected:
        return AttemptResult(
            "rejected",
            Rejection(**base, status="rejected", stage="filters", reasons=[f"{v.name}: {v.reason}" for v in rejected], verdicts=verdicts, note=guide.note, trajectory=trajectory),
        )
    original = seed.steps[spec.step]
    expected, found = control_change(seed, trajectory, spec.step)
    by_user = {a.name: a.role for a in seed.roster}.get(original.agent) == "user"  # a simulated user's step (tau2)
    trajectory.label = GoldLabel(
        decisive_step=spec.step,
        decisive_agent=original.agent,
        changed="user" if by_user else "action",
        mode_code=mode.code,
        mode_family=mode.family.value,
        original_step=original,
        steering_note=guide.note,
        guide_model=guide_name,
        agent_model=models.agent_spec.name,
        filter_verdicts=verdicts,
        seed_id=seed.id,
        branch_step=spec.step,
        evaluator_output=trajectory.outcome,  # type: ignore[arg-type]
        guide_request=guide.request,
        agent_request=result.stage_two.sent,
        expected_decision=expected,
        found_decision=found,
    )
    return AttemptResult("gold", trajectory)
