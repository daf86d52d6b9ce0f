"""ã_t must be a well-formed agent action, unless the mode is itself a format error (A.4).

Well-formed: it says something or calls something, and every tool call has a name and a JSON-object
argument string. An unknown tool name is allowed: that is what A.3 (hallucinated tool) produces.
"""

from failforge.gold import FilterContext, verdict
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "well_formed"


@filters.register(
    NAME, order=40, default=True, description="the changed step is well formed (unless its mode is a format error)"
)
def check(ctx: FilterContext) -> FilterVerdict | None:
    if ctx.mode is None:
        return None  # not an error-mode candidate
    if ctx.mode.format_error:
        return verdict(NAME, True, f"{ctx.mode.code} is a format error, so malformed output is the point")
    step = ctx.injected
    if not (step.content or "").strip() and not step.tool_calls:
        return verdict(NAME, False, "the injected step is empty: no text and no tool call")
    for call in step.tool_calls:
        if not call.name.strip():
            return verdict(NAME, False, "a tool call in the injected step has no name")
        if call.parsed_arguments() is None:
            return verdict(
                NAME,
                False,
                f"tool call {call.name!r} has arguments that are not a JSON object: {call.arguments[:80]!r}",
            )
    return verdict(NAME, True, "the injected step is a well-formed action")
