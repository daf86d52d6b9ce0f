"""Benchmark: replaying a seed's prefix vs the live run that recorded it, per harness; and how fast a drift surfaces.

For each harness (failforge's built-in loop and AgentDojo's own ``AgentPipeline``), records one seed
live with the embedded local model on an AgentDojo task, noting when each model call returned; then
replays the prefix up to the last model call several times with no model at all
(``fidelity.replay(seed, until=t)``, the code path branching uses). Prints per harness:

- the live time of the prefix (from the start of the recording to the return of the prefix's last
  model call) and the tokens it cost;
- the replay time of the same prefix, from the start of the replay to the moment the branch
  point's request reaches the model boundary (the prefix is then replayed: what follows is the
  injected step's business), and, separately, the time the whole ``replay`` call took including
  stopping at the branch point and closing the environment, so nothing is hidden;
- their ratio (target: replay/live <= 0.01) and the model calls / tokens spent on the prefix (target: 0);
- drift: the seed with the last prefix model call's request edited, replayed; the time from the moment
  the drifting request reaches the boundary to the moment ``PromptDrift`` reaches the caller, and the
  number of requests the drifting step got (targets: < 0.5 s, exactly 1).

A multi-agent harness (``--harnesses orchestrator-workers plan-execute-verify``) is measured the same
way: the local model plays every agent, and the replayed prefix holds several agents' calls, each
served from that agent's own stream.

    python scripts/bench_replay.py [--repeats 5] [--suite banking --task user_task_3] [--harnesses failforge.tool_calling agentdojo.pipeline orchestrator-workers]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import Counter
from typing import Any

from failforge.environments.agentdojo_env import env_spec
from failforge.errors import PromptDrift
from failforge.llm import LOCAL_MODEL_NAME, AgentIdentity, LocalModelServer, ModelBoundary, ModelEndpoint
from failforge.replay import replay
from failforge.seeds import harness_for, record
from failforge.trajectory import ComponentSpec, Trajectory


class Timed:
    """Live upstream that notes when each call finished and the tokens it used."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.start = inner, "timed", time.perf_counter()
        self.finished: list[float] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.inner(body)
        self.finished.append(time.perf_counter() - self.start)
        return response


class Arrivals:
    """When each request reached the model boundary, and how many reached it per step (the real boundary, only observed)."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.count: Counter[int] = Counter()
        self._real = ModelBoundary.complete

    def __enter__(self) -> Arrivals:
        arrivals, real = self, self._real

        def complete(boundary: ModelBoundary, body: dict[str, Any], identity: AgentIdentity | None = None) -> dict[str, Any]:
            index = boundary.log.next_index
            arrivals.count[index] += 1
            arrivals.at.setdefault(index, time.perf_counter())
            return real(boundary, body, identity)

        ModelBoundary.complete = complete
        return self

    def __exit__(self, *exc: object) -> None:
        ModelBoundary.complete = self._real


def _tokens(steps: list[Any]) -> int:
    return sum(int((s.model_call.response.get("usage") or {}).get("total_tokens") or 0) for s in steps if s.model_call is not None)


def bench_harness(harness_name: str, endpoint: ModelEndpoint, suite: str, task: str, repeats: int) -> dict[str, float]:
    harness = harness_for(harness_name, env_spec(suite, task))  # a team harness needs the environment's tool split
    timed = Timed(endpoint.upstream())
    timed.start = time.perf_counter()
    seed = record(env_spec=env_spec(suite, task), harness=harness, model=ComponentSpec(name=LOCAL_MODEL_NAME), upstream=timed)
    agent_steps = seed.agent_steps()
    if len(agent_steps) < 2:
        raise SystemExit(f"{harness_name}: the recorded run has only {len(agent_steps)} model call(s); try another --task")
    t = agent_steps[-1].index  # replay everything before the last model call
    in_prefix = [s for s in agent_steps if s.index < t]
    live = timed.finished[len(in_prefix) - 1]  # when the last model call of the prefix returned
    prefix_times, whole_times = [], []
    for _ in range(repeats):
        with Arrivals() as arrivals:
            started = time.perf_counter()
            report = replay(seed, until=t)
            whole_times.append(time.perf_counter() - started)
        assert report.identical and report.steps_replayed == t, report.to_dict()
        assert arrivals.count[t] == 1, f"the branch point got {arrivals.count[t]} requests"
        prefix_times.append(arrivals.at[t] - started)
    drifted = Trajectory.model_validate_json(seed.model_dump_json())
    target = in_prefix[-1].index
    drifted.steps[target].model_call.request["messages"][0]["content"] += " (edited)"
    surface, requests = [], []
    for _ in range(repeats):
        with Arrivals() as arrivals:
            try:
                replay(drifted)
            except PromptDrift as drift:
                surfaced = time.perf_counter()
                assert drift.step == target, drift
            else:
                raise AssertionError("the edited seed replayed without drift")
        surface.append(surfaced - arrivals.at[target])
        requests.append(arrivals.count[target])
    prefix = statistics.median(prefix_times)
    row = {
        "seed_steps": len(seed.steps), "model_calls": len(agent_steps), "t": t, "prefix_calls": len(in_prefix),
        "live": live, "live_tokens": _tokens(in_prefix), "replay": prefix, "replay_whole": statistics.median(whole_times),
        "ratio": prefix / live, "ratio_whole": statistics.median(whole_times) / live,
        "drift_surface": statistics.median(surface), "drift_surface_max": max(surface), "drift_requests": max(requests),
    }
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--task", default="user_task_3")
    parser.add_argument("--harnesses", nargs="+", default=["failforge.tool_calling", "agentdojo.pipeline"])
    opts = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    rows = {}
    with LocalModelServer() as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
        for name in opts.harnesses:
            rows[name] = bench_harness(name, endpoint, opts.suite, opts.task, opts.repeats)
    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    print(f"{opts.suite}/{opts.task}, {opts.repeats} repeats (medians); load average {load}")
    for name, r in rows.items():
        print(f"\n{name}: seed of {r['seed_steps']} steps, {r['model_calls']} model calls; prefix = steps 0..{r['t'] - 1} ({r['prefix_calls']} model calls)")
        print(f"  live time of the prefix (recording):          {r['live']:8.3f} s, {r['live_tokens']} tokens")
        print(f"  replay of the prefix, to the branch request:  {r['replay']:8.3f} s   ratio replay/live {r['ratio']:.4f}  (target <= 0.01)")
        print(f"  the whole replay call, stop and close incl.:  {r['replay_whole']:8.3f} s   ratio {r['ratio_whole']:.4f}")
        print("  model calls / tokens spent on the prefix during replay: 0 / 0  (a replay has no model at all)")
        print(f"  drift: surfaced {r['drift_surface'] * 1000:.1f} ms after the drifting request (max {r['drift_surface_max'] * 1000:.1f} ms; target < 500 ms); "
              f"requests for the drifting step: {r['drift_requests']} (target 1)")


if __name__ == "__main__":
    main()
