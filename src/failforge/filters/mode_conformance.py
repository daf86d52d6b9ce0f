"""Keep a candidate only if its decisive step exhibits the labelled error mode.

A label is the product: an "R.3 numerical error" whose decisive step contains no number teaches an
attribution model a wrong fact. Structural modes are decided by rules (see
:mod:`failforge.conformance`); semantic modes by the judge the attempt called, when one is enabled.
A semantic candidate that nothing verified is rejected unless the campaign asks to keep unverified
candidates, so by default every gold record's mode has been confirmed by a rule or a judge.
"""

from failforge.conformance import deterministic_verdict
from failforge.filters._context import FilterContext, verdict
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict

NAME = "mode_conformance"


@filters.register(NAME, order=50, default=True)
def check(ctx: FilterContext) -> FilterVerdict:
    found = ctx.conformance or deterministic_verdict(ctx.seed, ctx.injected, ctx.step, ctx.mode.code)
    code = ctx.mode.code
    if found.exhibited is True:
        return verdict(NAME, True, f"{code} exhibited ({found.method}): {found.reason}")
    if found.exhibited is False:
        return verdict(NAME, False, f"{code} not exhibited ({found.method}): {found.reason}")
    if ctx.keep_unverified:
        return verdict(NAME, True, f"{code} unverified, kept because keep_unverified is set: {found.reason}")
    return verdict(NAME, False, f"{code} unverified: {found.reason}; enable [filters.conformance] judge = true to judge semantic modes")
