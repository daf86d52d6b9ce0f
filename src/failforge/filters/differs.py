"""ã_t must differ materially from a_t: same text and same calls with the same arguments is no injection."""

from failforge.gold import FilterContext, verdict
from failforge.judgement import action_signature
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "differs"


@filters.register(NAME, order=30, default=True, description="the changed step does something other than the seed's")
def check(ctx: FilterContext) -> FilterVerdict:
    if action_signature(ctx.original) == action_signature(ctx.injected):
        return verdict(NAME, False, "the injected step does the same as the original (same text and tool calls)")
    return verdict(NAME, True, "the injected step differs from the original")
