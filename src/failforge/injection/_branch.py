"""Branch a seed at step t: replay the prefix, change step t, continue live, evaluate."""

from __future__ import annotations

from dataclasses import dataclass

from failforge.injection._injector import GuideResult, StageTwo
from failforge.llm import Responder
from failforge.replay import Plan, run_from_seed
from failforge.trajectory import ComponentSpec, Trajectory


@dataclass
class Branch:
    trajectory: Trajectory
    stage_two: StageTwo
    live_calls: int


def branch(
    seed: Trajectory,
    t: int,
    *,
    agent: Responder,
    note: str | None = None,
    response: dict | None = None,
    agent_model: ComponentSpec,
    branch_id: str,
    pin_tool: str | None = None,
    deadline: float | None = None,
) -> Branch:
    """Replay ``seed`` exactly up to step ``t`` (drift raises), produce step t, continue live with
    ``agent`` to the end of the run.

    Step t is either the agent's own model under ``note`` (the injection), or a given ``response``
    served as-is (the decisiveness check re-runs from the original a_t and from a recorded ã_t).
    """
    if not (0 < t < len(seed.steps)) or seed.steps[t].kind != "agent":
        raise ValueError(f"step {t} of {seed.id} is not an agent step")
    if (note is None) == (response is None):
        raise ValueError("branch() needs exactly one of note= (inject) or response= (serve a fixed step t)")
    stage_two = StageTwo(agent=agent, note=note, pin_tool=pin_tool) if note is not None else _Fixed(response)  # type: ignore[arg-type]
    result = run_from_seed(seed, Plan.branch(t), upstream=agent, change=stage_two, run_id=branch_id, deadline=deadline)
    trajectory = result.session.trajectory(task=seed.task, outcome=result.outcome, harness=seed.harness, environment=seed.environment, model=agent_model,
                                           provenance=result.extra)
    return Branch(trajectory=trajectory, stage_two=stage_two, live_calls=result.boundary.live_calls)


class _Fixed(StageTwo):
    """Serve a given response at the branch point (no model call)."""

    def __init__(self, response: dict) -> None:
        super().__init__(agent=None, note="")  # type: ignore[arg-type]
        self.response = response

    def __call__(self, body: dict) -> dict:
        self.sent = body
        return self.response

    def for_agent(self, agent: str, purpose: str | None = None) -> _Fixed:
        return self  # a fixed response is nobody's model call


__all__ = ["Branch", "GuideResult", "branch"]
