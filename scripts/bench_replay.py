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
way: the model plays every agent, and the replayed prefix holds several agents' calls, each served
from that agent's own stream.

Who plays the model in the live run (``--live``): ``local`` is the embedded model; ``loopback`` is a
deterministic loopback server (``failforge.testing.LoopbackModelServer``) that answers every agent
as the task's ground truth does (the oracle run through the same harness, answered by request: a pure
function of (agent, request)), after ``--latency`` seconds per call, so the live side costs what a
hosted model of that latency would. ``auto`` (the default) tries the embedded model first and, when
its run has fewer than two model calls (SmolLM2-135M often answers without calling a tool, and a
prefix needs at least one call before the branch point), records with the loopback policy instead;
the output says which one played and at what latency.

    python scripts/bench_replay.py [--repeats 5] [--suite banking --task user_task_3]
        [--harnesses failforge.tool_calling agentdojo.pipeline orchestrator-workers]
    python scripts/bench_replay.py --live loopback --latency 0.5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from failforge.environments.agentdojo import env_spec
from failforge.errors import PromptDrift
from failforge.llm import LOCAL_MODEL_NAME, LocalModelServer, ModelBoundary, ModelEndpoint
from failforge.llm._upstream import _compatible  # the bytes an endpoint receives for a recorded request
from failforge.replay import replay
from failforge.seeds import harness_for, oracle_seed, record
from failforge.testing import LoopbackModelServer
from failforge.trajectory import ComponentSpec, Trajectory

#: The model name the loopback live side records under.
LOOPBACK_MODEL = "loopback-ground-truth"


class Timed:
    """Live upstream that notes when each call finished (every agent's calls, in the order they returned)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.start = inner, "timed", time.perf_counter()
        self.finished: list[float] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.inner(body)
        self.finished.append(time.perf_counter() - self.start)
        return response

    def for_agent(self, agent: str, purpose: str | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The calling agent's view (a loopback team policy answers by agent), timed like the rest."""
        inner = self.inner.for_agent(agent, purpose) if hasattr(self.inner, "for_agent") else self.inner

        def respond(body: dict[str, Any]) -> dict[str, Any]:
            response = inner(body)
            self.finished.append(time.perf_counter() - self.start)
            return response

        return respond


def _request_key(agent: str | None, body: dict[str, Any]) -> str:
    """What identifies a request for the ground-truth policy: the agent, its messages and its tools, as
    the endpoint receives them (the upstream smooths roles and content parts over for strict servers,
    after recording), not the model name, which the upstream rewrites, nor sampling settings."""
    wire = _compatible(body)
    return json.dumps([agent, wire.get("messages"), wire.get("tools")], sort_keys=True, default=str)


class GroundTruthPolicy:
    """A loopback ``agent_policy`` that answers each (agent, request) as the task's oracle run through the
    same harness answered it: deterministic, a pure function of (agent, request). A request the oracle
    run never made is answered with a refusal and counted, so a harness that diverges is reported."""

    def __init__(self, oracle: Trajectory) -> None:
        self.answers: dict[str, dict[str, Any]] = {}
        for step in oracle.agent_steps():
            call = step.model_call
            assert call is not None
            self.answers[_request_key(step.agent, call.request)] = call.response["choices"][0]["message"]
        self.misses = 0

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        message = self.answers.get(_request_key(agent, body))
        if message is None:
            self.misses += 1
            return "I cannot continue: the ground-truth run never saw this request.", None
        return message.get("content"), message.get("tool_calls")


class Arrivals:
    """When each request reached the model boundary, and how many it answered per step (the real boundary,
    only observed). Observed at ``ModelBoundary._answer``, which every transport's request goes through,
    before the plan decides anything: the end of a prefix is answered there (``prefix_complete``)
    without ``complete`` being called. An event loop's quick try that hands the call to a thread
    (None) is not an answer and is not counted."""

    def __init__(self) -> None:
        self.at: dict[int, float] = {}
        self.count: Counter[int] = Counter()
        self._real = ModelBoundary._answer

    def __enter__(self) -> Arrivals:
        arrivals, real = self, self._real

        def answer(boundary: ModelBoundary, *args: Any, **kwargs: Any) -> Any:
            index = boundary.log.next_index
            arrivals.at.setdefault(index, time.perf_counter())
            reply = real(boundary, *args, **kwargs)
            if reply is not None:
                arrivals.count[index] += 1
            return reply

        ModelBoundary._answer = answer  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        ModelBoundary._answer = self._real  # type: ignore[method-assign]


def _tokens(steps: list[Any]) -> int:
    return sum(
        int((s.model_call.response.get("usage") or {}).get("total_tokens") or 0)
        for s in steps
        if s.model_call is not None
    )


def record_live(
    harness_name: str, endpoint: ModelEndpoint, model: str, suite: str, task: str
) -> tuple[Trajectory, Timed]:
    """One live recording of the task through the harness, its model calls timed."""
    harness = harness_for(harness_name, env_spec(suite, task))  # a team harness needs the environment's tool split
    timed = Timed(endpoint.upstream())
    timed.start = time.perf_counter()
    seed = record(env_spec=env_spec(suite, task), harness=harness, model=ComponentSpec(name=model), upstream=timed)
    return seed, timed


def record_loopback(harness_name: str, suite: str, task: str, latency: float) -> tuple[Trajectory, Timed]:
    """The live recording with the ground-truth policy behind a loopback server of ``latency`` s per call."""
    spec = env_spec(suite, task)
    oracle = oracle_seed("agentdojo", f"{suite}/{task}", harness=harness_for(harness_name, spec), model=LOOPBACK_MODEL)
    policy = GroundTruthPolicy(oracle)
    with LoopbackModelServer(latency=latency, agent_policy=policy) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model=LOOPBACK_MODEL, api_key_env=None)
        seed, timed = record_live(harness_name, endpoint, LOOPBACK_MODEL, suite, task)
    if policy.misses:
        raise SystemExit(
            f"{harness_name}: {policy.misses} request(s) of the live run differ from the ground-truth run's; the"
            " loopback policy cannot play this harness"
        )
    return seed, timed


def bench_harness(harness_name: str, seed: Trajectory, timed: Timed, repeats: int) -> dict[str, float]:
    agent_steps = seed.agent_steps()
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
    drifted_call = drifted.steps[target].model_call
    assert drifted_call is not None
    drifted_call.request["messages"][0]["content"] += " (edited)"
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
        "seed_steps": len(seed.steps),
        "model_calls": len(agent_steps),
        "t": t,
        "prefix_calls": len(in_prefix),
        "live": live,
        "live_tokens": _tokens(in_prefix),
        "replay": prefix,
        "replay_whole": statistics.median(whole_times),
        "ratio": prefix / live,
        "ratio_whole": statistics.median(whole_times) / live,
        "drift_surface": statistics.median(surface),
        "drift_surface_max": max(surface),
        "drift_requests": max(requests),
    }
    return row


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--suite", default="banking")
    parser.add_argument("--task", default="user_task_3")
    parser.add_argument("--harnesses", nargs="+", default=["failforge.tool_calling", "agentdojo.pipeline"])
    parser.add_argument(
        "--live",
        choices=["auto", "local", "loopback"],
        default="auto",
        help=(
            "who plays the model in the live run: the embedded model, the ground-truth loopback policy, "
            "or the embedded model with the loopback policy when its run has fewer than 2 model calls (default)"
        ),
    )
    parser.add_argument(
        "--latency", type=float, default=1.0, help="seconds the loopback policy takes per model call (default 1.0)"
    )
    return parser


def main() -> None:
    opts = arguments().parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    rows, played_by, loopback_played = {}, {}, set()
    loopback = f"ground-truth loopback policy, {opts.latency:.3f} s per model call (--latency)"
    with ExitStack() as stack:
        local = stack.enter_context(LocalModelServer()) if opts.live != "loopback" else None
        for name in opts.harnesses:
            seed: Trajectory | None = None
            if local is not None:
                endpoint = ModelEndpoint(base_url=local.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
                seed, timed = record_live(name, endpoint, LOCAL_MODEL_NAME, opts.suite, opts.task)
                calls = len(seed.agent_steps())
                played_by[name] = f"the embedded model ({LOCAL_MODEL_NAME})"
                if calls < 2:
                    if opts.live == "local":
                        raise SystemExit(
                            f"{name}: the embedded model's run has only {calls} model call(s); try another --task, or"
                            " --live loopback"
                        )
                    played_by[name] = (
                        f"{loopback}; the embedded model's run had {calls} model call(s), too few for a prefix"
                    )
                    seed = None
            if seed is None:
                seed, timed = record_loopback(name, opts.suite, opts.task, opts.latency)
                played_by.setdefault(name, loopback)
                loopback_played.add(name)
            rows[name] = bench_harness(name, seed, timed, opts.repeats)
    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    print(f"{opts.suite}/{opts.task}, {opts.repeats} repeats (medians); load average {load}")
    for name, r in rows.items():
        print(
            f"\n{name}: seed of {r['seed_steps']} steps, {r['model_calls']} model calls; prefix = steps 0..{r['t'] - 1}"
            f" ({r['prefix_calls']} model calls)"
        )
        print(f"  live side: {played_by[name]}")
        tokens = (
            f"{r['live_tokens']} tokens"
            if name not in loopback_played
            else "tokens not counted (the loopback policy reports none)"
        )
        print(f"  live time of the prefix (recording):          {r['live']:8.3f} s, {tokens}")
        print(
            f"  replay of the prefix, to the branch request:  {r['replay']:8.3f} s   ratio replay/live {r['ratio']:.4f}"
            f"  (target <= 0.01: {'met' if r['ratio'] <= 0.01 else 'NOT met'})"
        )
        print(
            f"  the whole replay call, stop and close incl.:  {r['replay_whole']:8.3f} s   ratio {r['ratio_whole']:.4f}"
        )
        print("  model calls / tokens spent on the prefix during replay: 0 / 0  (a replay has no model at all)")
        print(
            f"  drift: surfaced {r['drift_surface'] * 1000:.1f} ms after the drifting request (max"
            f" {r['drift_surface_max'] * 1000:.1f} ms; target < 500 ms); requests for the drifting step:"
            f" {r['drift_requests']} (target 1)"
        )


if __name__ == "__main__":
    main()
