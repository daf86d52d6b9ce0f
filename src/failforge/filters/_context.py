"""What every filter sees: the seed, the branch, the decisive step, the mode and the note."""

from __future__ import annotations

from dataclasses import dataclass

from failforge.taxonomy import ErrorMode
from failforge.trajectory import FilterVerdict, Step, Trajectory


@dataclass(frozen=True)
class FilterContext:
    seed: Trajectory
    branch: Trajectory
    step: int
    mode: ErrorMode
    note: str

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
