"""Keep only branches the benchmark's own evaluator judges failed: the failure is real, not assumed."""

from failforge.gold import FilterContext, verdict
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "evaluator_failure"


@filters.register(
    NAME, order=0, default=True, description="the benchmark's own evaluator judges the changed run failed"
)
def check(ctx: FilterContext) -> FilterVerdict:
    outcome = ctx.branch.outcome
    if outcome is None or outcome.success is None:
        return verdict(NAME, False, "the evaluator gave no verdict")
    if outcome.success:
        return verdict(
            NAME, False, f"{outcome.evaluator} judged the branch successful, so the injected step was not decisive"
        )
    return verdict(NAME, True, f"{outcome.evaluator} judged the task failed")
