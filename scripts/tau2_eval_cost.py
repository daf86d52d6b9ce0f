"""Evaluation cost side by side: failforge's tau2 evaluation (shared parsed-DB template) and tau2's own
``evaluate_simulation`` (re-reads the DB file per environment), on the same oracle-seed trajectories.

    PYTHONPATH=src python3 scripts/tau2_eval_cost.py [--domain airline] [--tasks 3]
"""

from __future__ import annotations

import argparse
import time

from failforge.environments import environment
from failforge.seeds import oracle_seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--domain", action="append", choices=["airline", "retail", "telecom"])
    parser.add_argument("--tasks", type=int, default=3)
    args = parser.parse_args()
    from failforge.environments.tau2._package import tau2

    tau2()  # quiet import first (tau2 prints its registry on import)
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    plugin = environment("tau2")
    for domain in args.domain or ["airline", "retail", "telecom"]:
        ours: list[float] = []
        theirs: list[float] = []
        agree = 0
        ids = plugin.tasks(plugin.Options(domain=domain))[: args.tasks]
        for task_id in ids:
            seed = oracle_seed("tau2", task_id, {"domain": domain})
            spec = plugin.spec(task_id, plugin.Options(domain=domain))
            with plugin.open(spec) as episode:
                started = time.perf_counter()
                outcome = episode.evaluate(None, seed.steps)
                ours.append(time.perf_counter() - started)
                messages, stopped = episode.messages(seed.steps)
                sim = SimulationRun(id="x", task_id=task_id, start_time="0", end_time="0", duration=0.0,
                                    termination_reason=TerminationReason.USER_STOP if stopped else TerminationReason.MAX_STEPS, messages=messages)
                episode._reset()
                started = time.perf_counter()
                reward = evaluate_simulation(sim, episode.task, EvaluationType.ALL, solo_mode=False, domain=domain)
                theirs.append(time.perf_counter() - started)
            agree += int((reward.reward >= 1.0) == outcome.success)
        print(f"{domain}: {len(ids)} seeds, failforge evaluation mean {sum(ours) / len(ours):.3f} s, "
              f"tau2 evaluate_simulation mean {sum(theirs) / len(theirs):.3f} s, verdicts agree {agree}/{len(ids)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
