"""Keep a candidate only if its decisive step exhibits the labelled error mode.

A label is the product: an "R.3 numerical error" whose decisive step contains no number teaches an
attribution model a wrong fact. Structural modes are decided by rules (see :mod:`failforge.judgement`);
semantic modes by a judge model when the campaign enables one (``[filters.conformance] judge = true``: the
guide endpoint unless ``judge_model`` names another). The judge's call goes through the model boundary and is
kept on the record (``provenance.conformance``), so the verdict replays without a model. A semantic candidate that
nothing verified is rejected unless the campaign asks to keep unverified candidates, so by default every gold
record's mode has been confirmed by a rule or a judge.
"""

from __future__ import annotations

from failforge.gold import FilterContext, verdict
from failforge.judgement import ConformanceVerdict, assess, deterministic_verdict, is_structural
from failforge.llm import BoundedResponder
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "mode_conformance"


def judged(ctx: FilterContext) -> ConformanceVerdict:
    """The candidate's conformance verdict: a rule for structural modes, the campaign's judge (if enabled) for the
    rest."""
    assert ctx.mode is not None
    if ctx.conformance is not None:
        return ctx.conformance
    job = ctx.job
    if job is None:
        return deterministic_verdict(ctx.seed, ctx.injected, ctx.step, ctx.mode.code)
    cfg = job.config.filters.conformance
    record_id = str(getattr(ctx.spec, "attempt_id", "") or "")
    if not cfg.judge or is_structural(ctx.mode.code):
        return assess(ctx.seed, ctx.injected, ctx.step, ctx.mode)
    if cfg.judge_model is None:
        return assess(
            ctx.seed,
            ctx.injected,
            ctx.step,
            ctx.mode,
            judge=job.models.guide(deadline=job.deadline),
            judge_model=job.models.guide_spec.name,
            record_id=record_id,
        )
    upstream = cfg.judge_model.upstream()
    try:
        return assess(
            ctx.seed,
            ctx.injected,
            ctx.step,
            ctx.mode,
            judge=BoundedResponder(upstream, deadline=job.deadline),
            judge_model=cfg.judge_model.model,
            record_id=record_id,
        )
    finally:
        upstream.close()


@filters.register(
    NAME, order=50, default=True, description="the decisive step exhibits its mode (rules, or a recorded judge)"
)
def check(ctx: FilterContext) -> FilterVerdict | None:
    if ctx.mode is None:
        return None  # not an error-mode candidate: nothing to conform to
    found = judged(ctx)
    ctx.evidence["conformance"] = found.model_dump(mode="json")
    code = ctx.mode.code
    if found.exhibited is True:
        return verdict(NAME, True, f"{code} exhibited ({found.method}): {found.reason}")
    if found.exhibited is False:
        return verdict(NAME, False, f"{code} not exhibited ({found.method}): {found.reason}")
    if ctx.keep_unverified:
        return verdict(NAME, True, f"{code} unverified, kept because keep_unverified is set: {found.reason}")
    return verdict(
        NAME,
        False,
        f"{code} unverified: {found.reason}; enable [filters.conformance] judge = true to judge semantic modes",
    )
