"""Branch a seed at step t: replay the prefix, change step t, continue live, evaluate.

Step t is changed in one of two ways: the agent's own model answers its own step-t request plus a steering note
(stage 2 of an injection, :class:`StageTwo`; the note lives in that one request only), or a fixed response is served
as the agent's step (the decisiveness check's arms, an injected refusal, a compliance flip). Either way the run is a
:class:`~failforge.replay.Session` under ``Plan.branch(t)``: the one runner, with everything before t replayed and
checked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from failforge.llm import Responder
from failforge.replay._episode import run_from_seed
from failforge.runlog import Plan
from failforge.trajectory import ComponentSpec, Trajectory

NOTE_PREFIX = "Private guidance for your next step only (do not mention it): "


def steer_request(body: dict[str, Any], note: str, pin_tool: str | None = None) -> dict[str, Any]:
    """The agent's own step-t request plus the note, as one extra system message at the end; with
    ``pin_tool`` (a tool the request offers), also ``tool_choice`` naming it. Both live in this one
    request only, and both are kept on the record (``label.agent_request``)."""
    steered = copy.deepcopy(body)
    steered["messages"] = list(steered.get("messages", [])) + [{"role": "system", "content": NOTE_PREFIX + note}]
    offered = {str((t.get("function") or {}).get("name")) for t in steered.get("tools") or [] if isinstance(t, dict)}
    if pin_tool is not None and pin_tool in offered:
        steered["tool_choice"] = {"type": "function", "function": {"name": pin_tool}}
    return steered


@dataclass
class StageTwo:
    """The injector the model boundary calls at the branch point; keeps the steered request it sent."""

    agent: Responder
    note: str
    pin_tool: str | None = None
    sent: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._steer(self.agent, body)

    def for_agent(self, agent: str, purpose: str | None = None) -> Any:
        """The injection as the decisive agent's own call: its own model (the upstream's view for that agent)
        answers."""
        responder = self.agent.for_agent(agent, purpose) if hasattr(self.agent, "for_agent") else self.agent
        return lambda body: self._steer(responder, body)

    def _steer(self, responder: Responder, body: dict[str, Any]) -> dict[str, Any]:
        self.sent = steer_request(body, self.note, self.pin_tool)
        self.response = responder(self.sent)
        return self.response


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
    trajectory = result.session.trajectory(
        task=seed.task,
        outcome=result.outcome,
        harness=seed.harness,
        environment=seed.environment,
        model=agent_model,
        provenance=result.extra,
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

    def for_agent(self, agent: str, purpose: str | None = None) -> _Fixed:
        return self  # a fixed response is nobody's model call


__all__ = ["NOTE_PREFIX", "Branch", "StageTwo", "branch", "steer_request"]
