"""Which agent steps a plan may take as decisive: the step policy.

``all`` takes every branchable agent step. ``paper`` is Who&When Pro's: never the agent's first step and never
its final-answer step (the paper injects mostly at steps 2-5; a mistake at step 1 has no history to be a
mistake about, and one at the final answer leaves nothing to propagate through). The default is the
environment's (``Environment.step_policy``: ``paper`` for DA-Bench, whose seeds are the paper's setting; ``all``
elsewhere, which keeps every existing campaign's plan as it was); a campaign's ``[plan] step_policy`` (and
``plan_attempts(step_policy=...)``) overrides it for any environment.
"""

from __future__ import annotations

from collections.abc import Sequence

from failforge.plugins import environments
from failforge.trajectory import Trajectory

STEP_POLICIES: tuple[str, ...] = ("all", "paper")


def policy_for(seed: Trajectory, step_policy: str | None) -> str:
    name = seed.environment.name
    chosen = step_policy or (environments.get(name).step_policy if name in environments else "all")
    if chosen not in STEP_POLICIES:
        raise ValueError(f"unknown step policy {chosen!r}; choose one of {', '.join(STEP_POLICIES)}")
    return chosen


def allowed_points(seed: Trajectory, points: Sequence[int], step_policy: str | None = None) -> list[int]:
    """The candidate points the policy keeps (``paper``: not the first agent step, not the final-answer step)."""
    if policy_for(seed, step_policy) == "all":
        return list(points)
    agent_steps = [s.index for s in seed.steps if s.kind == "agent"]
    if not agent_steps:
        return []
    first, final = agent_steps[0], agent_steps[-1]
    return [t for t in points if t not in (first, final) and not _answers(seed, t)]


def _answers(seed: Trajectory, t: int) -> bool:
    """Step t gives the final answer: a text answer (no tool call, no code run after it) or a code block whose run
    called ``final_answer`` (its observation says so)."""
    after = seed.steps[t + 1] if t + 1 < len(seed.steps) else None
    if after is None:
        return True
    return after.kind == "tool" and '"is_final_answer": true' in (after.content or "")


__all__ = ["STEP_POLICIES", "allowed_points", "policy_for"]
