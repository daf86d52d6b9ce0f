"""Benchmark: replaying a seed's prefix vs the live run that recorded it, and model tokens on the prefix.

Records one seed live with the embedded local model (AgentDojo's own AgentPipeline on banking, which
makes many tool calls), noting when each step completed; then replays the prefix up to the last
model call several times with a model that counts every call it gets. Prints the live time of the
prefix, the median replay time, their ratio, and the tokens spent on the prefix (target: 0).

``--harness orchestrator-workers`` (or ``plan-execute-verify``) does the same for a multi-agent run:
the local model plays every agent, and the replayed prefix holds several agents' calls, each served
from that agent's own stream.

    python scripts/bench_replay.py [--repeats 5] [--suite banking --task user_task_3] [--harness orchestrator-workers]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from failforge.environments.agentdojo_env import env_spec
from failforge.errors import PrefixComplete
from failforge.harnesses import AgentDojoPipelineHarness, harness_from_spec
from failforge.llm import LOCAL_MODEL_NAME, LocalModelServer, ModelEndpoint
from failforge.episode import run_episode
from failforge.seeds import harness_for, record
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec


class Timed:
    """Live upstream that notes when each call finished and the tokens it used."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.start = inner, "timed", time.perf_counter()
        self.finished: list[float] = []
        self.tokens = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.inner(body)
        self.finished.append(time.perf_counter() - self.start)
        self.tokens += int((response.get("usage") or {}).get("total_tokens") or 0)
        return response


class Counting:
    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - must never run
        self.calls += 1
        raise RuntimeError("replay asked the live model for a prefix step")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--task", default="user_task_3")
    parser.add_argument("--harness", default=None, help="a multi-agent harness (orchestrator-workers, plan-execute-verify); default: AgentDojo's pipeline")
    opts = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    spec = env_spec(opts.suite, opts.task)
    harness = AgentDojoPipelineHarness() if opts.harness is None else harness_for(opts.harness, spec)
    with LocalModelServer() as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
        timed = Timed(endpoint.upstream())
        timed.start = time.perf_counter()
        seed = record(env_spec=spec, harness=harness, model=ComponentSpec(name=LOCAL_MODEL_NAME), upstream=timed)
    agent_steps = seed.agent_steps()
    if len(agent_steps) < 2:
        raise SystemExit(f"the recorded run has only {len(agent_steps)} model call(s); try another --task")
    t = agent_steps[-1].index  # replay everything before the last model call
    calls_in_prefix = sum(1 for s in agent_steps if s.index < t)
    live_prefix = timed.finished[calls_in_prefix - 1]  # when the last model call of the prefix returned
    prefix_tokens_live = sum(int((s.model_call.response.get("usage") or {}).get("total_tokens") or 0) for s in agent_steps if s.index < t)
    times, counters = [], []
    for _ in range(opts.repeats):
        counting = Counting()

        def stop(body: dict[str, Any]) -> dict[str, Any]:
            raise PrefixComplete("prefix done")

        log = RunLog(trajectory_id=seed.id, expected=seed.steps, replay_until=t)
        start = time.perf_counter()
        try:
            run_episode(env_spec=seed.environment, harness=harness_from_spec(seed.harness), model=seed.model.name, log=log, upstream=counting, injector=stop, evaluate=False)
        except PrefixComplete:
            pass
        times.append(time.perf_counter() - start)
        counters.append(counting.calls)
        assert len(log.steps) == t, (len(log.steps), t)
    replay_med = statistics.median(times)
    agents_in_prefix = sorted({s.agent for s in agent_steps if s.index < t})
    print(f"seed: {seed.id} [{seed.harness.name}] ({len(seed.steps)} steps, {len(agent_steps)} model calls); prefix = steps 0..{t - 1} ({calls_in_prefix} model calls by {', '.join(agents_in_prefix)})")
    print(f"live time of the prefix (recording):   {live_prefix:8.3f} s, {prefix_tokens_live} tokens")
    print(f"replay time of the prefix (median of {opts.repeats}): {replay_med:8.3f} s")
    print(f"ratio replay/live: {replay_med / live_prefix:.3f}  (live/replay: {live_prefix / replay_med:.1f}x faster)")
    print(f"model calls / tokens spent on the prefix during replay: {sum(counters)} / 0  (target: 0)")


if __name__ == "__main__":
    main()
