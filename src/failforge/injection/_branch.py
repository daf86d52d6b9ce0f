"""Branch a seed at step t: replay the prefix, inject ã_t, continue live, evaluate."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass

from failforge import __version__
from failforge.harnesses import harness_from_spec
from failforge.injection._injector import GuideResult, StageTwo
from failforge.llm import Responder
from failforge.replay import run_episode
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
    note: str,
    agent: Responder,
    agent_model: ComponentSpec,
    branch_id: str,
) -> Branch:
    """Replay ``seed`` exactly up to step ``t`` (drift raises), have the agent's own model produce ã_t
    under the note, and continue live with ``agent`` to the end of the run."""
    if not (0 < t < len(seed.steps)) or seed.steps[t].kind != "agent":
        raise ValueError(f"step {t} of {seed.id} is not an agent step")
    stage_two = StageTwo(agent=agent, note=note)
    log = RunLog(trajectory_id=branch_id, expected=seed.steps, replay_until=t, record_phase="live")
    result = run_episode(
        env_spec=seed.environment,
        harness=harness_from_spec(seed.harness),
        model=seed.model.name,
        log=log,
        upstream=agent,
        injector=stage_two,
    )
    trajectory = Trajectory(
        id=branch_id,
        task=seed.task,
        steps=result.steps,
        outcome=result.outcome,
        harness=seed.harness,
        environment=seed.environment,
        model=agent_model,
        agents=seed.agents,
        oracle=False,
        parent_id=seed.id,
        branch_step=t,
        provenance={
            "failforge_version": __version__,
            "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "seconds": round(result.seconds, 3),
            "live_model_calls": result.boundary.live_calls,
        },
    )
    return Branch(trajectory=trajectory, stage_two=stage_two, live_calls=result.boundary.live_calls)


__all__ = ["Branch", "GuideResult", "branch"]
