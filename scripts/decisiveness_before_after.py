"""The same campaign with the decisiveness check off (the old default) and on (the default now).

Runs the demo's seeds (the bundled AgentDojo oracle seeds, single- and multi-agent; or ``--seeds``) with
the embedded local model as every agent, once with ``[filters.decisiveness] enabled = false`` and once
with the defaults, in two output folders, and prints per run: planned, kept, rejected by decisiveness,
the original arms run and their live model calls against what one arm per attempt would have cost, and
which records kept with the check off were not decisive (their point's original arm failed).

    python scripts/decisiveness_before_after.py [--seeds FILE] [--out DIR] [--modes A.2 A.5 R.3] [--max-seeds N]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from failforge.campaign import CampaignConfig, open_models, run_campaign
from failforge.judgement import STRUCTURAL_MODES


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=Path, default=None, help="seed JSONL (default: the demo's seeds)")
    parser.add_argument("--out", type=Path, default=Path("decisiveness-before-after"))
    parser.add_argument("--modes", nargs="+", default=list(STRUCTURAL_MODES))
    parser.add_argument("--max-seeds", type=int, default=None)
    parser.add_argument("--steps-per-seed", type=int, default=2)
    parser.add_argument(
        "--runs",
        nargs="+",
        choices=("off", "on"),
        default=["off", "on"],
        help="which runs to make (a run already in OUT/decisiveness-NAME is resumed, so a finished one costs nothing)",
    )
    return parser.parse_args(argv)


def _rows(path: Path) -> list[dict]:
    from failforge.jsonl import read_jsonl

    return [item[1] for item in read_jsonl(path) if isinstance(item, tuple)] if path.exists() else []


def main(argv: list[str] | None = None) -> None:
    from failforge.cli._generate import _demo_seeds

    args = arguments(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = args.seeds or _demo_seeds(args.out)
    results = {}
    with open_models(None, None) as resolved:
        for name, enabled in (("off", False), ("on", True)):
            if name not in args.runs:
                continue
            out = args.out / f"decisiveness-{name}"
            config = CampaignConfig(
                seeds=[str(seeds)],
                output=str(out),
                plan={"modes": args.modes, "steps_per_seed": args.steps_per_seed, "max_seeds": args.max_seeds},
                filters={"decisiveness": {"enabled": enabled}},
            )
            started = time.perf_counter()
            summary = run_campaign(config, resolved)
            seconds = time.perf_counter() - started
            gold, rejected = _rows(out / "gold.jsonl"), _rows(out / "rejected.jsonl")
            results[name] = (summary, gold, rejected, seconds)
            by = Counter(r["stage"] if r["stage"] != "filters" else r["reasons"][0].split(":")[0] for r in rejected)
            print(
                f"decisiveness {name}: planned {summary.planned}, kept {summary.kept}, rejected {summary.rejected}"
                f" {dict(by)}, failed {summary.failed}, {seconds:.0f} s"
            )
            if summary.arms:
                a = summary.arms
                print(
                    f"  original arms: {a['points']} point(s), {a['run_now']} run, {a['live_calls']} live model calls"
                    f" ({a['seconds']} s); one arm per attempt: {a['live_calls_one_per_attempt']} calls;"
                    f" {a['failed_points']} point(s) where the seed's own step also failed"
                )
    gold_off = _rows(args.out / "decisiveness-off" / "gold.jsonl")
    rejected_on = _rows(args.out / "decisiveness-on" / "rejected.jsonl")
    not_decisive = {(r["seed_id"], r["step"]) for r in rejected_on if r["stage"] == "decisiveness"}
    fake = [g for g in gold_off if (g["label"]["seed_id"], g["label"]["decisive_step"]) in not_decisive]
    print(f"kept with the check off whose point's original arm failed: {len(fake)} of {len(gold_off)}")
    for g in fake:
        print(
            f"  {g['label']['mode_code']} at step {g['label']['decisive_step']} of {g['label']['seed_id']} (agent"
            f" {g['label']['decisive_agent']})"
        )


if __name__ == "__main__":
    main()
