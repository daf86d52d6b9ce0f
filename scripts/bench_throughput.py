"""Benchmark: campaign throughput (attempts per minute) at concurrency 1, 4 and 16.

The model is a loopback OpenAI-compatible server with a fixed latency per call (failforge.testing),
so the measurement is about failforge's scheduling, not model speed; environment, replay, injection
and filters are the real ones (AgentDojo banking and slack oracle seeds). Prints attempts/min per
concurrency and the ratio to concurrency 1 (target: 16 >= 12x).

    python scripts/bench_throughput.py [--latency 1.0] [--attempts 32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.environments.agentdojo import list_user_tasks
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.trajectory import write_jsonl


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per model call")
    parser.add_argument("--attempts", type=int, default=32, help="attempts per concurrency level (at least 16)")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    return parser


def main() -> None:
    opts = arguments().parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    with tempfile.TemporaryDirectory() as tmp:
        seeds = [oracle_seed("agentdojo", f"{s}/{t}") for s, t in list_user_tasks(("banking", "slack"))]
        seeds_path = Path(tmp) / "seeds.jsonl"
        write_jsonl(seeds_path, [s for s in seeds if s.outcome and s.outcome.success])
        rates: dict[int, float] = {}
        with LoopbackModelServer(latency=opts.latency) as server:
            endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=60)
            resolved = ResolvedModels(agent=endpoint, guide=endpoint)
            for level in opts.levels:
                # Enough seeds for the attempt budget: one attempt per seed (1 step x 1 mode).
                config = CampaignConfig(
                    seeds=[str(seeds_path)],
                    output=str(Path(tmp) / f"out-{level}"),
                    concurrency=level,
                    plan={"steps_per_seed": 1, "modes_per_step": 1, "max_seeds": opts.attempts},
                )
                start = time.perf_counter()
                summary = run_campaign(config, resolved)
                elapsed = time.perf_counter() - start
                done = summary.kept + summary.rejected + summary.failed
                rates[level] = done / elapsed * 60
                print(
                    f"concurrency {level:>3}: {done} attempts in {elapsed:6.1f}s = {rates[level]:7.1f} attempts/min"
                    f" (failed {summary.failed})"
                )
        base = rates[opts.levels[0]]
        for level in opts.levels:
            print(f"ratio concurrency {level} / {opts.levels[0]}: {rates[level] / base:.1f}x")
        if 16 in rates:
            print(f"target: concurrency 16 >= 12x concurrency 1 -> {'met' if rates[16] / base >= 12 else 'NOT met'}")


if __name__ == "__main__":
    main()
