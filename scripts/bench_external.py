"""What an external-harness run costs failforge next to an in-process adapter's, on one framework and task.

smolagents both ways: the in-process ``smolagents`` adapter, and ``examples/external/smolagents_team.py``
(the same team) as an external agent command — models on per-agent routes, tools over MCP. The model
is a zero-latency loopback team policy. For each door, per round: a whole replay of the seed and a
branch at a worker's step (a fixed response at t, then live), timed end to end; for the external
command the process's start (spawn to its first model call: interpreter, imports, team construction)
is reported separately and subtracted, since it is the framework's own start, not failforge's work.

Printed: seconds per run (median over rounds), the process start, the command's own shutdown after its
last answer (interpreter teardown: the framework's, not failforge's), and the ratio external / in-process
of the run's cost with and without that shutdown. Target: <= 1.2x. Usage:

    PYTHONHASHSEED=0 python3 scripts/bench_external.py [--task banking/user_task_3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--task", default="banking/user_task_3")
    parser.add_argument("--rounds", type=int, default=5)
    return parser


def main() -> None:
    args = arguments().parse_args()

    from failforge.environments import environment
    from failforge.harnesses.external import ExternalAgent
    from failforge.injection import branch
    from failforge.llm import HttpUpstream
    from failforge.replay import replay
    from failforge.seeds import env_spec, harness_for, record
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import ComponentSpec

    spec = env_spec("agentdojo", args.task)
    calls, final = environment("agentdojo").ground_truth(spec)
    adapter = harness_for("smolagents", spec)
    policy = adapter.scripted_policy(calls, final)  # type: ignore[attr-defined]
    roster = adapter.roster()  # type: ignore[attr-defined]
    external = ExternalAgent.for_command(
        [sys.executable, str(HERE / "examples" / "external" / "smolagents_team.py")],
        framework="smolagents",
        roster=roster,
    )
    rows: dict[str, dict[str, list[float]]] = {
        "in-process": {"replay": [], "branch": []},
        "external": {
            "replay": [],
            "branch": [],
            "start": [],
            "exit": [],
            "replay without exit": [],
            "branch without exit": [],
        },
    }
    with LoopbackModelServer(agent_policy=lambda agent, body: policy.respond(agent or "", body)) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1)
        model = ComponentSpec(name="loopback", config={"role": "agent"})
        seeds = {
            "in-process": record(env_spec=spec, harness=adapter, model=model, upstream=upstream),
            "external": record(env_spec=spec, harness=external, model=model, upstream=upstream),
        }
        for door, seed in seeds.items():
            assert seed.outcome is not None and seed.outcome.success, (door, seed.outcome)
        for _ in range(args.rounds):
            for door, seed in seeds.items():
                t = next(s.index for s in seed.agent_steps() if s.agent.endswith("_worker"))
                starts: list[float] = []
                for what in ("replay", "branch"):
                    started = time.perf_counter()
                    if what == "replay":
                        report = replay(seed)
                        assert report.identical, (door, report.drift)
                        stats = report.harness_stats or {}
                    else:
                        response = seed.steps[t].model_call.response  # type: ignore[union-attr]
                        made = branch(
                            seed, t, response=response, agent=upstream, agent_model=model, branch_id=f"bench-{door}"
                        )
                        assert made.trajectory.outcome is not None
                        stats = made.trajectory.provenance.get("harness_stats") or {}
                    took = time.perf_counter() - started
                    start = float(stats.get("process_start") or 0.0) if door == "external" else 0.0
                    if door == "external":
                        exit_ = float(stats.get("process_exit") or 0.0)
                        rows[door]["exit"].append(exit_)
                        rows[door][f"{what} without exit"].append(took - start - exit_)
                    starts.append(start)
                    rows[door][what].append(took - start)
                if door == "external":
                    rows[door]["start"].extend(starts)
        upstream.close()

    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    print(f"task {args.task}, {args.rounds} rounds, zero-latency loopback team model, smolagents both ways")
    print(
        f"external command: process start {med(rows['external']['start']):.2f} s (always subtracted), "
        f"its own shutdown after its last answer {med(rows['external']['exit']):.2f} s"
    )
    print(
        f"{'run':<8} {'in-process s':>13} {'external s':>11} {'ratio':>6} {'external without shutdown s':>28}"
        f" {'ratio':>6}"
    )
    for what in ("replay", "branch"):
        inside, outside, bare = (
            med(rows["in-process"][what]),
            med(rows["external"][what]),
            med(rows["external"][f"{what} without exit"]),
        )
        print(
            f"{what:<8} {inside:>13.3f} {outside:>11.3f} {outside / inside:>6.2f} {bare:>28.3f} {bare / inside:>6.2f}"
        )
    print("target: <= 1.2x (the run's own cost, the command's process start reported separately)")


if __name__ == "__main__":
    main()
