"""Oracle seeds for AgentDojo: the ground truth, recorded through a real harness.

The oracle plays the model: call k returns the k-th ground-truth tool call, and the call after the
last returns the task's ``GROUND_TRUTH_OUTPUT``. Because it runs through the model boundary like any
model, an oracle seed carries the exact requests the harness sent, so it replays and branches like a
model-recorded seed; only ``oracle=True`` and ``source="oracle"`` on its model calls tell them apart.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from failforge.environments.agentdojo_env import DEFAULT_CLOCK, SUITES, AgentDojoEpisode, agentdojo_version, list_user_tasks
from failforge.harnesses import Harness, ToolCallingAgent, ToolCallingAgentConfig
from failforge.llm import OracleResponder, fixed_tool_calls
from failforge.replay import record
from failforge.trajectory import ComponentSpec, Trajectory

DEFAULT_AGENT_MODEL = "smollm2-135m-instruct"


def env_spec(suite: str, task_id: str, clock: str = DEFAULT_CLOCK) -> ComponentSpec:
    """The environment spec recorded in a trajectory; ``python_hash_seed`` is recorded because
    AgentDojo's calendar orders participants by set iteration, which follows it."""
    return ComponentSpec(
        name="agentdojo",
        version=agentdojo_version(),
        config={
            "suite": suite,
            "task_id": task_id,
            "benchmark_version": "v1",
            "clock": clock,
            "normaliser": "agentdojo-state/1",
            "python_hash_seed": os.environ.get("PYTHONHASHSEED", "random"),
        },
    )


def oracle_seed(suite: str, task_id: str, *, model: str = DEFAULT_AGENT_MODEL, harness: Harness | None = None, clock: str = DEFAULT_CLOCK) -> Trajectory:
    """Record the ground truth of one user task through ``harness`` (the built-in agent by default)."""
    spec = env_spec(suite, task_id, clock)
    with AgentDojoEpisode(suite, task_id, clock=clock) as probe:
        calls = probe.ground_truth_calls()
        final = str(probe.task.GROUND_TRUTH_OUTPUT) or "Done."
    harness = harness or ToolCallingAgent(ToolCallingAgentConfig(max_model_calls=max(20, len(calls) + 2)))
    seed = record(
        env_spec=spec,
        harness=harness,
        model=ComponentSpec(name=model, config={"role": "agent"}),
        upstream=OracleResponder(fixed_tool_calls(calls, final), name="agentdojo.ground_truth"),
        oracle=True,
        trajectory_id=f"agentdojo-{suite}-{task_id}-oracle",
    )
    return seed


def oracle_seeds(suites: tuple[str, ...] = SUITES, *, model: str = DEFAULT_AGENT_MODEL) -> Iterator[Trajectory]:
    for suite, task_id in list_user_tasks(suites):
        yield oracle_seed(suite, task_id, model=model)
