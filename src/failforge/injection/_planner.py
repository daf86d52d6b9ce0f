"""Choose (decisive step, error mode) pairs a seed can honestly support.

A pair is only planned where the mode applies (see the taxonomy's applicability rules), judged from
the seed itself: the original step's tool calls, whether tools were offered, how many agent steps came
before, whether the step is the final answer, and, with several agents, the step's place in the
team's conversation (its author's role, whether it delegates, passes information to another agent or
acts on a peer's message; see :func:`team_context`), and whether its turn withholds a detail or a
function, so asking was right (:mod:`failforge.clarification`). Sampling is seeded, so a plan is reproducible.
Any agent's model call is a candidate: injection works at a worker's step as at the orchestrator's.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

from failforge.clarification import withheld_at
from failforge.gold import JobSpec
from failforge.injection._step_policy import allowed_points
from failforge.judgement import is_code_step
from failforge.roster import COORDINATING_ROLES
from failforge.taxonomy import StepContext, applicable_modes
from failforge.trajectory import Step, Trajectory


class AttemptSpec(JobSpec, frozen=True):
    """One action attempt: the error mode ``mode`` at the seed's agent step ``step`` (the action gold kind's job)."""

    mode: str
    job: Literal["action"] = "action"
    original_arm: dict[str, Any] | None = None
    """The decisiveness check's original arm at (seed, step), settled by the campaign driver before the
    attempt runs (shared by every attempt at that point); None: the attempt measures it itself."""

    @property
    def attempt_id(self) -> str:
        return f"{self.seed_id}@{self.step}:{self.mode}#{self.sample}"


def step_context(seed: Trajectory, step: Step) -> StepContext:
    prior = sum(1 for s in seed.steps[: step.index] if s.kind == "agent")
    request = step.model_call.request if step.model_call else {}
    has_image = any(
        isinstance(m.get("content"), list)
        and any(isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"])
        for m in request.get("messages", [])
        if isinstance(m, dict)
    )
    code = is_code_step(
        seed, step.index
    )  # a code block run in the interpreter is the step's action (judgement/_code.py)
    return StepContext(
        has_tool_call=bool(step.tool_calls) or code,
        tools_available=bool(request.get("tools")) or code,
        has_image=has_image,
        n_agents=len(seed.agents),
        # Final = the author's last word. A message mid-conversation (to the user, to another agent) after
        # which its author speaks again is a turn's end, not its final answer: stopping there (A.5) is early.
        is_final=step.is_final()
        and not any(s.kind == "agent" and s.agent == step.agent for s in seed.steps[step.index + 1 :]),
        prior_agent_steps=prior,
        withheld=withheld_at(seed, step.index),  # a turn to ask at (BFCL miss_param / miss_func)
        **team_context(seed, step),
    )


def team_context(seed: Trajectory, step: Step) -> dict[str, Any]:
    """Where the step sits among the agents: its author's role; whether it is addressed to another
    agent (and so delegates, when the author coordinates); whether it acts on a peer's message (the
    latest earlier step addressed to its author was sent by another agent)."""
    profile = seed.profile(step.agent)
    role = profile.role if profile else "agent"
    agents = set(seed.agents)
    addresses_agent = step.recipient in agents and step.recipient != step.agent
    latest_to_author = next((s for s in reversed(seed.steps[: step.index]) if s.recipient == step.agent), None)
    acts_on_peer = (
        latest_to_author is not None and latest_to_author.agent in agents and latest_to_author.agent != step.agent
    )
    return {
        "role": role,
        "addresses_agent": addresses_agent,
        "delegates": addresses_agent and role in COORDINATING_ROLES,
        "acts_on_peer": acts_on_peer,
    }


def candidate_points(seed: Trajectory) -> list[int]:
    """Agent steps that can be branched: produced by a recorded model call (not step 0)."""
    return [s.index for s in seed.steps if s.kind == "agent" and s.model_call is not None and s.index > 0]


def plan_attempts(
    seed: Trajectory,
    *,
    modes: Sequence[str] | None = None,
    steps_per_seed: int = 2,
    modes_per_step: int = 2,
    samples: int = 1,
    rng_seed: int = 0,
    step_policy: str | None = None,
) -> list[AttemptSpec]:
    """Pick up to ``steps_per_seed`` decisive steps, and at each up to ``modes_per_step`` applicable modes.
    Steps of a turn that withholds a detail or a function (:mod:`failforge.clarification`) are taken first.
    ``step_policy``: which steps may be decisive (``injection/_step_policy.py``; None: the environment's default)."""
    rng = random.Random(f"{rng_seed}:{seed.id}")
    points_allowed = allowed_points(seed, candidate_points(seed), step_policy)
    usable_at = {
        t: [m.code for m in applicable_modes(step_context(seed, seed.steps[t]), modes)] for t in points_allowed
    }
    points = [t for t, usable in usable_at.items() if usable]  # only steps where some requested mode applies
    rng.shuffle(points)
    points.sort(key=lambda t: withheld_at(seed, t) is None)  # a turn to ask at first: what a miss_* task is for
    plan: list[AttemptSpec] = []
    for t in sorted(points[:steps_per_seed]):
        usable = list(usable_at[t])
        rng.shuffle(usable)
        for code in sorted(usable[:modes_per_step]):
            plan.extend(AttemptSpec(seed_id=seed.id, step=t, mode=code, sample=k) for k in range(samples))
    return plan
