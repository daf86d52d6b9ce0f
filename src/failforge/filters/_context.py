"""What every filter sees: the seed, the branch, the decisive step, the mode and the note.

Optional fields carry what the attempt learnt before the filters ran: the stage-1 request (so the
leak filter can look for the guide's own prompt in the branch), the conformance verdict (so a judge
is called once, by the attempt, and the filter only reads its answer) and the conformance policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from failforge.conformance import ConformanceVerdict
from failforge.taxonomy import ErrorMode
from failforge.trajectory import FilterVerdict, Step, Trajectory


@dataclass(frozen=True)
class FilterContext:
    seed: Trajectory
    branch: Trajectory
    step: int
    mode: ErrorMode
    note: str
    guide_request: dict[str, Any] | None = None
    """The stage-1 request as sent (a chat request for a model guide, the rule's derivation for rules)."""

    conformance: ConformanceVerdict | None = None
    """The attempt's conformance verdict (judge included); None: the filter computes the deterministic one."""

    keep_unverified: bool = False
    """Keep a semantic-mode candidate that nothing could verify (no judge) instead of rejecting it."""

    @property
    def original(self) -> Step:
        return self.seed.steps[self.step]

    @property
    def injected(self) -> Step:
        return self.branch.steps[self.step]

    def agent_steps_from_t(self) -> list[Step]:
        return [s for s in self.branch.steps[self.step :] if s.kind == "agent"]


def verdict(name: str, passed: bool, reason: str) -> FilterVerdict:
    return FilterVerdict(name=name, passed=passed, reason=reason)
