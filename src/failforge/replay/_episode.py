"""Run one episode through both boundaries: the single code path for record, replay and branch.

Whether a step is recorded, replayed, injected or live is decided by the RunLog and the boundaries,
never by the harness, so the agent loop that produced a seed is the same loop that replays it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from failforge.canonical import readable_diff
from failforge.environments.registry import open_environment
from failforge.errors import EnvironmentDrift, FailforgeError, PromptDrift
from failforge.harnesses import Harness
from failforge.llm import ModelBoundary, Responder, boundary_client, surface_boundary_error
from failforge.llm._boundary import Injector
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step


@dataclass
class EpisodeResult:
    steps: list[Step]
    final_output: str | None
    outcome: Outcome | None
    boundary: ModelBoundary
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def run_episode(
    *,
    env_spec: ComponentSpec,
    harness: Harness,
    model: str,
    log: RunLog,
    upstream: Responder | None,
    injector: Injector | None = None,
    strict: bool = True,
    source: str = "model",
    evaluate: bool = True,
) -> EpisodeResult:
    """Run the harness in a fresh environment; raise the typed drift error at the first divergence."""
    started = time.perf_counter()
    with open_environment(env_spec) as episode:
        instruction = episode.instruction()
        task_step = Step(index=0, kind="task", agent="user", role="user", content=instruction, phase=log.phase_for(0))
        if log.replaying(0):
            expected = log.expected_step(0)
            if expected is None or expected.kind != "task" or expected.content != instruction:
                drift: type[EnvironmentDrift] = getattr(episode, "drift_error", EnvironmentDrift)
                raise drift(
                    "the task instruction differs from the recorded one",
                    trajectory_id=log.trajectory_id,
                    step=0,
                    expected=getattr(expected, "content", None),
                    actual=instruction,
                    diff=readable_diff(str(getattr(expected, "content", "")), instruction),
                )
        log.append(task_step)
        boundary = ModelBoundary(log, upstream=upstream, injector=injector, strict=strict, source=source)
        client = boundary_client(boundary)
        try:
            final = harness.run(client, model, instruction, episode.toolbox(log))
        except FailforgeError:
            raise
        except Exception as exc:
            surfaced = surface_boundary_error(boundary, exc)
            if surfaced is exc:
                raise
            raise surfaced from exc
        finally:
            client.close()
        if boundary.failure is not None:
            # A foreign loop may swallow the SDK error and stop; the typed failure still wins.
            raise boundary.failure
        if log.next_index < log.replay_until:
            raise PromptDrift(
                f"the harness ended the run after step {log.next_index - 1}, but the seed goes on to step {log.replay_until - 1}",
                trajectory_id=log.trajectory_id,
                step=log.next_index,
                expected=f"{log.replay_until} steps",
                actual=f"{log.next_index} steps",
            )
        outcome = episode.evaluate(final, log.steps) if evaluate else None
        return EpisodeResult(
            steps=list(log.steps),
            final_output=final,
            outcome=outcome,
            boundary=boundary,
            seconds=time.perf_counter() - started,
            extra={"task": episode.task_record()},
        )
