"""Branch a seed at step t: replay the prefix, inject ã_t, continue live, evaluate."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from failforge import __version__
from failforge.episode import run_from_seed
from failforge.injection._injector import GuideResult, StageTwo
from failforge.llm import Responder
from failforge.runlog import RunLog
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
    log = RunLog(trajectory_id=branch_id, expected=seed.steps, replay_until=t, record_phase="live")
    result = run_from_seed(seed, log=log, upstream=agent, injector=stage_two)
    trajectory = Trajectory(
        id=branch_id,
        task=seed.task,
        steps=result.steps,
        outcome=result.outcome,
        harness=seed.harness,
        environment=seed.environment,
        model=agent_model,
        agents=seed.agents,
        roster=seed.roster,
        oracle=False,
        parent_id=seed.id,
        branch_step=t,
        provenance={
            "failforge_version": __version__,
            "created_at": _dt.datetime.now(_dt.UTC).isoformat(),
            "seconds": round(result.seconds, 3),
            "live_model_calls": result.boundary.live_calls,
        },
    )
    return Branch(trajectory=trajectory, stage_two=stage_two, live_calls=result.boundary.live_calls)


class _Fixed(StageTwo):
    """Serve a given response at the branch point (no model call)."""

    def __init__(self, response: dict) -> None:
        super().__init__(agent=None, note="")  # type: ignore[arg-type]
        self.response = response

    def __call__(self, body: dict) -> dict:
        self.sent = body
        return self.response


__all__ = ["Branch", "GuideResult", "branch"]
