"""Evaluation cost side by side: failforge's tau2 evaluation (copy-on-access DB, gold hashes memoised)
and tau2's own ``evaluate_simulation`` (re-reads the DB file per environment), on the same trajectories:
each oracle seed (succeeds) and the seed with its last write call cut off (fails, for a task whose reward
rests on the DB), first evaluation and a repeated one (what every later attempt of a task pays). Verdicts
and rewards must agree; the script exits 1 if any does not.

    PYTHONPATH=src python3 scripts/tau2_eval_cost.py [--domain airline] [--tasks 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from failforge.environments import environment
from failforge.seeds import oracle_seed
from failforge.trajectory import Step

READS = ("get_", "find_", "search_", "list_", "calculate", "think", "check_", "transfer_to_human")


def _without_last_write(steps: list[Step]) -> list[Step] | None:
    writes = [
        s.index for s in steps if s.kind == "agent" and s.tool_calls and not s.tool_calls[0].name.startswith(READS)
    ]
    return steps[: writes[-1]] if writes else None


def tau2_own_evaluation(episode: Any, steps: list[Step]) -> tuple[float, float]:
    """Seconds and reward of tau2's own ``evaluate_simulation`` on the run ``steps``
    (also used by bench_attempt_cpu.py)."""
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    messages, stopped = episode.messages(steps)
    sim = SimulationRun(
        id="x",
        task_id=episode.task_id,
        start_time="0",
        end_time="0",
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP if stopped else TerminationReason.MAX_STEPS,
        messages=messages,
    )
    episode._reset()
    started = time.perf_counter()
    reward = evaluate_simulation(sim, episode.task, EvaluationType.ALL, solo_mode=False, domain=episode.domain)
    return time.perf_counter() - started, float(reward.reward)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", action="append", choices=["airline", "retail", "telecom"])
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args()
    from failforge.environments.tau2._package import tau2

    tau2()  # quiet import first (tau2 prints its registry on import)
    plugin = environment("tau2")
    disagreements = 0
    for domain in args.domain or ["airline", "retail", "telecom"]:
        first: list[float] = []
        again: list[float] = []
        theirs: list[float] = []
        compared = failing = 0
        for task_id in plugin.tasks(plugin.Options(domain=domain))[: args.tasks]:
            seed = oracle_seed("tau2", task_id, {"domain": domain})
            spec = plugin.spec(task_id, plugin.Options(domain=domain))
            variants = [seed.steps] + ([cut] if (cut := _without_last_write(seed.steps)) else [])
            with plugin.open(spec) as episode:
                for steps in variants:
                    started = time.perf_counter()
                    outcome = episode.evaluate(None, steps)
                    first.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    repeated = episode.evaluate(None, steps)
                    again.append(time.perf_counter() - started)
                    seconds, reward = tau2_own_evaluation(episode, steps)
                    theirs.append(seconds)
                    compared += 1
                    failing += int(reward < 1.0)
                    if not (outcome.score == repeated.score == reward):
                        disagreements += 1
                        print(
                            f"  DISAGREE {domain}/{task_id} ({len(steps)} steps): failforge {outcome.score} then"
                            f" {repeated.score}, tau2 {reward}"
                        )
        print(
            f"{domain}: {compared} trajectories ({failing} failing), failforge first evaluation median"
            f" {statistics.median(first):.3f} s, repeated {statistics.median(again):.3f} s; tau2 evaluate_simulation"
            f" median {statistics.median(theirs):.3f} s; ratio tau2/failforge first"
            f" {statistics.median(theirs) / statistics.median(first):.1f}x, repeated"
            f" {statistics.median(theirs) / statistics.median(again):.1f}x",
            flush=True,
        )
    print(f"rewards disagreeing: {disagreements}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    raise SystemExit(main())
