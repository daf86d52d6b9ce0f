"""Reject attempts whose gold answer was already stated by the agent before the decisive step.

If the answer is on the table before t, a later mistake is not what made the task fail in any sense an
attribution model could learn from, and the decisive-step label would be arguable.
"""

from failforge.gold import FilterContext, verdict
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "gold_exposure"
MIN_LENGTH = 4


@filters.register(NAME, order=20, default=True, description="the gold answer is not stated before the decisive step")
def check(ctx: FilterContext) -> FilterVerdict:
    gold = (ctx.seed.task.gold_answer or "").strip()
    if len(gold) < MIN_LENGTH:
        return verdict(NAME, True, f"no gold answer of at least {MIN_LENGTH} characters to look for")
    needle = " ".join(gold.lower().split())
    for step in ctx.branch.steps[1 : ctx.step]:
        if step.kind == "agent" and needle in " ".join((step.content or "").lower().split()):
            return verdict(
                NAME,
                False,
                f"the gold answer {gold[:60]!r} is already stated at step {step.index}, before the decisive step",
            )
    return verdict(NAME, True, "the gold answer is not stated by the agent before the decisive step")
