#!/usr/bin/env python3
"""Benchmark DA-Bench on the stateful interpreter: replay vs live recording, and what one code step costs.

For each backend and each interpreter mode (``persistent``: one live interpreter process per run, the default;
``fresh``: each block in a new process that first re-runs the run's earlier blocks): the scripted analyst's seed of
a question recorded (live: the oracle plays the model, every code block runs) and replayed (model calls served from
the recording, every code block re-run and checked), medians over ``--repeat`` runs, and the replay/live ratio.
Then the interpreter alone: the cost of one step as the history grows, against a bare ``python3 -c pass`` in the
same sandbox. Milliseconds, medians; the last line compares the modes.

    PYTHONPATH=src python3 scripts/bench_dabench.py [--backends local docker] [--modes persistent fresh]
        [--task ID] [--repeat 3] [--steps 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["local", "docker"])
    parser.add_argument("--modes", nargs="+", default=["persistent", "fresh"], choices=["persistent", "fresh"])
    parser.add_argument(
        "--task", default="dabench-18", help="a question of the data folder (default: the shipped subset)"
    )
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8, help="interpreter steps in the per-step cost")
    return parser


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> int:
    args = arguments().parse_args()
    from failforge.environments import environment
    from failforge.replay import replay
    from failforge.runlog import Plan, RunLog
    from failforge.seeds import oracle_seed

    results: dict[str, dict[str, float | list[float]]] = {}
    for backend, mode in [(b, m) for b in args.backends for m in args.modes]:
        options = {
            "backend": backend,
            "persistent": mode == "persistent",
            **({"data_dir": args.data_dir} if args.data_dir else {}),
        }
        seeds = []
        live = _median_ms(lambda: seeds.append(oracle_seed("dabench", args.task, options)), args.repeat)  # noqa: B023
        seed = seeds[-1]
        replayed = _median_ms(lambda: replay(seed), args.repeat)  # noqa: B023
        plugin = environment("dabench")
        spec = plugin.spec(args.task, plugin.Options(**options))
        per_step: list[float] = []
        with plugin.open(spec) as episode:
            bare = _median_ms(lambda: episode.sandbox.exec(["python3", "-c", "pass"]), args.repeat)  # noqa: B023
            box = episode.toolbox(RunLog(trajectory_id="bench", plan=Plan.record()))
            q = episode.question
            blocks = [f"import pandas as pd\ndf = pd.read_csv('data/{q.file_name}')\nprint(df.shape)"] + [
                f"x{k} = df.select_dtypes('number').sum().sum()\nprint(x{k})" for k in range(1, args.steps)
            ]
            for k, code in enumerate(blocks):
                started = time.perf_counter()
                box.call("python_interpreter", json.dumps({"code": code}), f"c{k}")
                per_step.append(round((time.perf_counter() - started) * 1000, 1))
        tool_steps = sum(1 for s in seed.steps if s.kind == "tool")
        results[f"{backend}/{mode}"] = {
            "live_ms": round(live, 1),
            "replay_ms": round(replayed, 1),
            "replay_over_live": round(replayed / live, 3),
            "code_steps": tool_steps,
            "bare_python_ms": round(bare, 1),
            "step_ms_by_position": per_step,
            "step_growth_ms": round((per_step[-1] - per_step[1]) / max(1, len(per_step) - 2), 1),
        }
    for backend, row in results.items():
        print(
            f"{backend}: live {row['live_ms']} ms, replay {row['replay_ms']} ms, replay/live {row['replay_over_live']} "
            f"({row['code_steps']} code steps); bare python3 {row['bare_python_ms']} ms; "
            f"interpreter step k (ms): {row['step_ms_by_position']}; "
            f"growth per earlier block {row['step_growth_ms']} ms"
        )
    for backend in args.backends:
        a, b = results.get(f"{backend}/persistent"), results.get(f"{backend}/fresh")
        if a and b:
            steps_a, steps_b = a["step_ms_by_position"], b["step_ms_by_position"]
            assert isinstance(steps_a, list) and isinstance(steps_b, list)
            later_a = statistics.median(steps_a[1:])
            later_b = statistics.median(steps_b[1:])
            print(
                f"{backend}: persistent/fresh live {a['live_ms'] / b['live_ms']:.3f}, "
                f"replay {a['replay_ms'] / b['replay_ms']:.3f}; first step {steps_a[0]} vs {steps_b[0]} ms, "
                f"later steps (median) {later_a} vs {later_b} ms ({later_b / max(later_a, 0.1):.0f}x)"
            )
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
