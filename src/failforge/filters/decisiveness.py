"""Does the changed step decide the outcome? Kept only when the seed's own step, continued live, still succeeds
(the *original arm*, run once per (seed, t) and shared: :mod:`failforge.gold._arms`) and the changed step fails.

The injected arm's first run is the candidate itself; ``[filters.decisiveness] injected_k`` > 1 adds re-runs from
the candidate's recorded ã_t (sampled at ``temperature`` when set). It runs only when every other filter passed
(its re-runs cost live calls); a candidate another filter rejected keeps the original arm's verdict alone in its
provenance. A point whose original arm fails never reaches here: its attempts are rejected before any guide call.
"""

from __future__ import annotations

from typing import Any

from failforge.gold import FilterContext, OriginalArm, continuing_agent, verdict
from failforge.plugins import filters
from failforge.replay import branch
from failforge.trajectory import FilterVerdict

NAME = "decisiveness"


def _skipped(ctx: FilterContext) -> None:
    """Another filter rejected the candidate: the injected arm is not run; the shared original arm is still told."""
    arm: OriginalArm | None = ctx.facts.get("original_arm")
    if arm is not None:
        ctx.evidence["decisiveness"] = arm.alone()


@filters.register(
    NAME,
    order=1000,
    after_passed=True,
    when_skipped=_skipped,
    stage="decisiveness",
    description="the seed's own step continued live still succeeds, and the changed step fails",
)
def check(ctx: FilterContext) -> FilterVerdict:
    job, arm = ctx.job, ctx.facts.get("original_arm")
    if job is None or arm is None:
        raise ValueError(
            "the decisiveness filter needs a running job and its point's original arm (run it inside a campaign)"
        )
    cfg = job.config.filters.decisiveness
    outcomes: list[bool] = []
    if cfg.temperature is None:
        outcomes.append(bool(ctx.branch.outcome and ctx.branch.outcome.success))
    injected: dict[str, Any] = ctx.facts["injected_response"]
    for i in range(cfg.injected_k - len(outcomes)):
        agent = continuing_agent(job.models, cfg, job.deadline, i)
        run = branch(
            ctx.seed,
            ctx.step,
            response=injected,
            agent=agent,
            agent_model=job.models.agent_spec,
            branch_id=f"decisive-injected-{i}",
            deadline=job.deadline,
        )
        outcomes.append(bool(run.trajectory.outcome and run.trajectory.outcome.success))
    injected_rate = sum(outcomes) / len(outcomes)
    ctx.evidence["decisiveness"] = {
        "checked": True,
        "original": arm.verdict(),
        "injected": {
            "k": cfg.injected_k,
            "successes": sum(outcomes),
            "success_rate": injected_rate,
            "temperature": cfg.temperature,
            "first_is_candidate": cfg.temperature is None,
        },
        "original_success_rate": arm.success_rate,
        "injected_success_rate": injected_rate,
        "original_min_success": cfg.original_min_success,
        "injected_max_success": cfg.injected_max_success,
    }
    ok = arm.passes(cfg) and injected_rate <= cfg.injected_max_success
    reason = (
        f"original arm succeeded {arm.successes}/{arm.k}, injected arm {sum(outcomes)}/{cfg.injected_k}"
        f"{'' if cfg.temperature is None else f' at T={cfg.temperature}'}"
    )
    return verdict(NAME, ok, reason)
