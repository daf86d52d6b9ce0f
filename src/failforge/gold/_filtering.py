"""How a candidate is judged: every verdict comes from a filter registered in :data:`failforge.plugins.filters`.

A filter is a function ``(FilterContext) -> FilterVerdict | None`` registered with
``@filters.register("name", order=..., default=True)``; ``None`` means it does not apply to this candidate (no
verdict is recorded). Every verdict, passed or not, is kept on the record, so a user can see why a candidate was
kept or dropped without re-running anything. Registry metadata a filter may set:

- ``default``: in the action kind's default list (``[filters] enabled`` in a campaign file), ordered by ``order``;
- ``after_passed``: run only when every earlier filter passed (it costs live runs: decisiveness);
- ``stage``: where a failure inside it is reported (``filters`` unless it says otherwise).

The built-in filters live in :mod:`failforge.filters`; an environment may register its own (AgentDojo's security
and twin checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from failforge.judgement import ConformanceVerdict
from failforge.plugins import filters as registry
from failforge.taxonomy import ErrorMode
from failforge.trajectory import FilterVerdict, Step, Trajectory

if TYPE_CHECKING:
    from failforge.gold._engine import JobContext


@dataclass
class FilterContext:
    """What every filter sees: the seed, the changed run, the decisive step, and what the kind made it with."""

    seed: Trajectory
    branch: Trajectory
    step: int
    mode: ErrorMode | None = None
    """The error mode an action candidate is labelled with (None for other kinds of change)."""
    note: str = ""
    guide_request: dict[str, Any] | None = None
    """The stage-1 request as sent (a chat request for a model guide, the rule's derivation for rules)."""
    conformance: ConformanceVerdict | None = None
    """A conformance verdict already made (a caller's); None: the mode-conformance filter decides (rule, or judge)."""
    keep_unverified: bool = False
    """Keep a semantic-mode candidate that nothing could verify (no judge) instead of rejecting it."""
    spec: Any = None
    """The job's spec (its kind's pydantic model); None outside a campaign."""
    job: JobContext | None = None
    """The running job (models, campaign config, deadline); None outside a campaign (then no filter calls a model)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """What the kind learnt making the candidate (injected text, twin, target and chains, the stage-2 response)."""
    reference: Trajectory | None = None
    """The run the change is measured against when it is not the seed (a compliance flip: the run under attack)."""
    earlier: list[FilterVerdict] = field(default_factory=list)
    """The verdicts of the filters before this one."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Provenance a filter adds to the record (the conformance verdict, the decisiveness arms), written by the
    engine."""

    @property
    def base(self) -> Trajectory:
        return self.reference if self.reference is not None else self.seed

    @property
    def original(self) -> Step:
        return self.base.steps[self.step]

    @property
    def injected(self) -> Step:
        return self.branch.steps[self.step]

    def agent_steps_from_t(self) -> list[Step]:
        return [s for s in self.branch.steps[self.step :] if s.kind == "agent"]


def verdict(name: str, passed: bool, reason: str) -> FilterVerdict:
    return FilterVerdict(name=name, passed=passed, reason=reason)


class FilterFailed(Exception):
    """A filter that raised (a judge that is down, a bug): the attempt fails at the filter's stage, with its error."""

    def __init__(self, name: str, stage: str, cause: BaseException) -> None:
        super().__init__(f"filter {name}: {type(cause).__name__}: {cause}")
        self.name, self.stage, self.cause = name, stage, cause


def default_filters() -> list[str]:
    """The filters an action attempt runs unless the campaign names others, in the order they are reported."""
    return [
        i.name for i in sorted(registry, key=lambda i: (i.meta.get("order", 1000), i.name)) if i.meta.get("default")
    ]


def run_filters(ctx: FilterContext, names: Sequence[str] | None = None) -> list[FilterVerdict]:
    """Run the named filters in order (all of them, so every reason is known; an ``after_passed`` filter only when
    every earlier one passed). A filter that raises is :class:`FilterFailed`."""
    verdicts: list[FilterVerdict] = []
    for name in default_filters() if names is None else names:
        info = registry.info(name)
        ctx.earlier = list(verdicts)
        if info.meta.get("after_passed") and not all(v.passed for v in verdicts):
            found = info.meta["when_skipped"](ctx) if "when_skipped" in info.meta else None
        else:
            try:
                found = info.obj(ctx)
            except Exception as exc:  # a judge that is down, or a bug: the attempt fails, never a rejection
                raise FilterFailed(name, str(info.meta.get("stage", "filters")), exc) from exc
        if found is not None:
            verdicts.append(found)
    return verdicts


__all__ = ["FilterContext", "FilterFailed", "default_filters", "run_filters", "verdict"]
