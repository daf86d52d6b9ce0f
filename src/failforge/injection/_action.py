"""The action kind: an agent's step t steered into one error mode (the taxonomy's 18), on its own model.

Plan: (step, mode) pairs where the mode applies (:func:`plan_attempts`). Branch: with the decisiveness check on,
the point's original arm must succeed first (run once per (seed, t) by the driver, or measured here); then stage 1
writes the steering note (rules for the structural modes, the guide model otherwise), stage 2 sends the decisive
agent's own step-t request plus the note, and the run continues live. Filters: the campaign's ``[filters] enabled``
(evaluator failure, note leak, gold exposure, differs, well-formed, mode conformance by rule or judge) and then
decisiveness. Label: decisive step, agent (or the simulated user), mode, the note and both requests.

The original arm is its own small kind (``original-arm``): the driver runs one per point before the attempts,
through the same executors, and hands it to every attempt there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from failforge.canonical import canonical_hash
from failforge.environments import environment
from failforge.gold import (
    NOT_CHECKED,
    ArmResult,
    ArmSpec,
    AttemptResult,
    CampaignConfig,
    Candidate,
    FilterContext,
    GoldKind,
    JobContext,
    OriginalArm,
    Planned,
    arm_key,
    not_decisive,
    rejected,
    run_original_arm,
)
from failforge.injection._injector import GuideResult, guide_request, write_steering_note
from failforge.injection._planner import AttemptSpec, plan_attempts
from failforge.injection._rules import RULES_GUIDE, RULES_VERSION, guide_kind_for, rules_note
from failforge.judgement import adjudicate, control_change
from failforge.plugins import gold_kinds
from failforge.replay import branch
from failforge.taxonomy import get_mode
from failforge.trajectory import FilterVerdict, GoldLabel, Trajectory


def with_agent_command(seed: Trajectory, command: list[str] | None) -> Trajectory:
    """An external-harness seed run with another agent command (the campaign's ``agent_cmd``); other seeds unchanged."""
    if not command or seed.harness.name != "external":
        return seed
    return seed.model_copy(
        update={
            "harness": seed.harness.model_copy(update={"config": {**seed.harness.config, "command": list(command)}})
        }
    )


def original_arm(seed: Trajectory, spec: AttemptSpec, ctx: JobContext) -> OriginalArm:
    """The point's original arm: the one the driver settled and handed over, or measured here."""
    if spec.original_arm is not None:
        return OriginalArm.model_validate(spec.original_arm)
    key = arm_key(ctx.config.config_hash(), canonical_hash(seed.model_dump(mode="json")), spec.step)
    return run_original_arm(seed, ArmSpec(seed_id=seed.id, step=spec.step, key=key), ctx.models, ctx.config)


@gold_kinds.register(
    "action", description="an agent's step steered into one error mode of the taxonomy, on its own model"
)
class ActionKind(GoldKind):
    name = "action"
    spec = AttemptSpec

    def plan(self, seeds: Sequence[Trajectory], config: CampaignConfig) -> Planned:
        p = config.plan
        if p.injections is not None and p.injections.only:
            return Planned()
        return Planned(
            jobs=[
                (seed, spec)
                for seed in seeds
                for spec in plan_attempts(
                    seed,
                    modes=p.modes,
                    steps_per_seed=p.steps_per_seed,
                    modes_per_step=p.modes_per_step,
                    samples=p.samples,
                    rng_seed=p.rng_seed,
                    step_policy=p.step_policy,
                )
            ]
        )

    def base(self, seed: Trajectory, spec: Any, ctx: JobContext) -> dict[str, Any]:
        mode = get_mode(spec.mode)
        kind = guide_kind_for(ctx.config.guide_kind, mode.code, seed, spec.step)
        guide_name = f"{RULES_GUIDE}-v{RULES_VERSION}" if kind == "rules" else ctx.models.guide_spec.name
        provenance = {**ctx.provenance, "guide_kind": kind, "guide_name": guide_name}
        return {
            "attempt_id": spec.attempt_id,
            "seed_id": seed.id,
            "step": spec.step,
            "mode": mode.code,
            "sample": spec.sample,
            "provenance": provenance,
        }

    def branch(self, seed: Trajectory, spec: Any, ctx: JobContext) -> Candidate | AttemptResult:
        seed = with_agent_command(seed, ctx.config.agent_cmd)
        config, models = ctx.config, ctx.models
        base = ctx.base or self.base(seed, spec, ctx)
        provenance = base["provenance"]
        mode = get_mode(spec.mode)
        arm: OriginalArm | None = None
        if config.filters.decisiveness.enabled:
            ctx.stage = "decisiveness"
            arm = original_arm(seed, spec, ctx)
            if not arm.passes(config.filters.decisiveness):
                return not_decisive(arm, config, base)
        guide: GuideResult
        ctx.stage = "guide"
        if provenance["guide_kind"] == "rules":
            guide = rules_note(seed, spec.step, mode, rng_seed=config.plan.rng_seed, sample=spec.sample)
        else:
            request = guide_request(
                seed,
                spec.step,
                mode,
                model=models.guide_spec.name,
                temperature=config.guide_temperature,
                seed_value=config.plan.rng_seed * 1000 + spec.sample,
            )
            guide = write_steering_note(models.guide(deadline=ctx.deadline), request, mode)
        if not guide.feasible or guide.note is None:
            return rejected(base, "guide", [guide.reason], note=guide.raw or None)
        ctx.stage, ctx.note = "replay", guide.note
        result = branch(
            seed,
            spec.step,
            note=guide.note,
            agent=models.agent(deadline=ctx.deadline),
            agent_model=models.agent_spec,
            branch_id=f"gold-{canonical_hash(spec.attempt_id)[:12]}",
            pin_tool=guide.pin_tool if config.pin_tool else None,
            deadline=ctx.deadline,
        )
        trajectory = result.trajectory
        trajectory.provenance.update(provenance)
        trajectory.provenance["attempt_id"] = spec.attempt_id
        if environment(trajectory.environment.name).adjudicates:  # five-outcome class from the benchmark's evidence
            trajectory.adjudication = adjudicate(trajectory)
        if arm is None:
            trajectory.provenance["decisiveness"] = dict(NOT_CHECKED)
        facts = {
            "mode": mode,
            "guide": guide,
            "original_arm": arm,
            "injected_response": result.stage_two.response,
            "agent_request": result.stage_two.sent,
        }
        return Candidate(trajectory=trajectory, step=spec.step, facts=facts, note=guide.note)

    def filters(self, config: CampaignConfig) -> list[str]:
        return [*config.filters.enabled, *(["decisiveness"] if config.filters.decisiveness.enabled else [])]

    def filter_context(self, seed: Trajectory, spec: Any, candidate: Candidate, ctx: JobContext) -> FilterContext:
        guide: GuideResult = candidate.facts["guide"]
        return FilterContext(
            seed=with_agent_command(seed, ctx.config.agent_cmd),
            branch=candidate.trajectory,
            step=spec.step,
            mode=candidate.facts["mode"],
            note=guide.note or "",
            guide_request=guide.request,
            keep_unverified=ctx.config.filters.conformance.keep_unverified,
            spec=spec,
            job=ctx,
            facts=candidate.facts,
        )

    def label(
        self, seed: Trajectory, spec: Any, candidate: Candidate, verdicts: list[FilterVerdict], ctx: JobContext
    ) -> GoldLabel:
        seed = with_agent_command(seed, ctx.config.agent_cmd)
        trajectory, mode, guide = candidate.trajectory, candidate.facts["mode"], candidate.facts["guide"]
        original = seed.steps[spec.step]
        expected, found = control_change(seed, trajectory, spec.step)
        by_user = {a.name: a.role for a in seed.roster}.get(original.agent) == "user"  # a simulated user's step (tau2)
        return GoldLabel(
            decisive_step=spec.step,
            decisive_agent=original.agent,
            changed="user" if by_user else "action",
            mode_code=mode.code,
            mode_family=mode.family.value,
            original_step=original,
            steering_note=guide.note,
            guide_model=trajectory.provenance["guide_name"],
            agent_model=ctx.models.agent_spec.name,
            filter_verdicts=verdicts,
            seed_id=seed.id,
            branch_step=spec.step,
            evaluator_output=trajectory.outcome,  # type: ignore[arg-type]
            guide_request=guide.request,
            agent_request=candidate.facts["agent_request"],
            expected_decision=expected,
            found_decision=found,
        )


@gold_kinds.register(
    "original-arm", description="the action kind's original arm: the seed's own step continued live, once per (seed, t)"
)
class OriginalArmKind(GoldKind):
    """Not a change: the decisiveness check's shared pre-run, planned by the driver and run through the same
    executors."""

    name = "original-arm"
    spec = ArmSpec

    def branch(self, seed: Trajectory, spec: Any, ctx: JobContext) -> ArmResult:
        return ArmResult(run_original_arm(seed, spec, ctx.models, ctx.config))

    def filters(self, config: CampaignConfig) -> list[str]:
        return []

    def label(
        self, seed: Trajectory, spec: Any, candidate: Candidate, verdicts: list[FilterVerdict], ctx: JobContext
    ) -> str:
        return "an original arm makes no candidate"


__all__ = ["ActionKind", "OriginalArmKind", "original_arm", "with_agent_command"]
