"""P.1 / P.2 gold from screenshot seeds: the campaign with the rule guide, the vision policy as the agent.

    PYTHONPATH=src python3 scripts/vision_gold.py --seeds /tmp/vision-seeds --out /tmp/vision-gold
        [--modes P.2,P.1] [--steps 3]

Reads the seeds written by scripts/vision_seeds.py (--seeds/seeds.jsonl, its screenshots beside it in
--seeds/images), runs one campaign (guide = rules, the loopback vision policy answering every agent call;
gold.jsonl and rejected.jsonl get their images in --out/campaign/images), prints kept / rejected per mode
and the image bytes per gold record (its distinct images, as found in the campaign's images/ folder).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
from collections import Counter
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--modes", default="P.2,P.1")
    parser.add_argument("--steps", type=int, default=3, help="steps per seed")
    parser.add_argument("--glob", default="*", help="which seed ids to use (e.g. '*-seed1-vision')")
    args = parser.parse_args()
    os.environ.setdefault("FAILFORGE_IMAGE_DIR", str((args.out / "store").resolve()))  # live screenshots (a cache)

    from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
    from failforge.environments.miniwob._vision_policy import vision_script
    from failforge.images import beside_dir, record_images
    from failforge.jsonl import read_jsonl
    from failforge.llm import ModelEndpoint
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import load_jsonl, write_jsonl

    read, bad = load_jsonl(args.seeds / "seeds.jsonl")
    for problem in bad:
        print(f"skipped seed: {problem}", file=sys.stderr)
    seeds = [s for s in read if fnmatch.fnmatch(s.id, args.glob)]
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "seeds.jsonl", seeds)
    modes = [m for m in args.modes.split(",") if m]
    with LoopbackModelServer(agent_policy=lambda agent, body: vision_script(0, body)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="vision-policy", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(args.out / "seeds.jsonl")],
            output=str(args.out / "campaign"),
            guide_kind="rules",
            plan={"steps_per_seed": args.steps, "modes_per_step": len(modes), "modes": modes},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, _ = (
        load_jsonl(args.out / "campaign" / "gold.jsonl")
        if (args.out / "campaign" / "gold.jsonl").exists()
        else ([], None)
    )
    folder = beside_dir(args.out / "campaign" / "gold.jsonl")
    kept = Counter(r.label.mode_code for r in gold if r.label is not None)
    sizes = [sum((folder / f"{h}.png").stat().st_size for h in record_images(r)) for r in gold]
    rejected_path = args.out / "campaign" / "rejected.jsonl"
    rejected: list[dict[str, object]] = []
    for item in read_jsonl(rejected_path) if rejected_path.exists() else []:
        if isinstance(item, tuple):
            rejected.append(item[1])
        else:  # a bad line is reported, the rest counted
            print(f"skipped: {item}", file=sys.stderr)
    reasons = Counter(str(r.get("mode")) + ": " + str((r.get("reasons") or ["?"])[0])[:90] for r in rejected)
    kept_tasks = sorted({r.task.task_id for r in gold})
    print(
        json.dumps(
            {
                "seeds": len(seeds),
                "planned": summary.planned,
                "attempts": summary.attempts,
                "kept": dict(kept),
                "kept_tasks": kept_tasks,
                "rejected": len(rejected),
                "rejected_by": dict(summary.rejected_by),
                "failed": summary.failed,
                "failed_by": dict(summary.failed_by),
                "image_bytes_per_record": sizes,
                "images_folder": {
                    "files": len(list(folder.glob("*.png"))) if folder.is_dir() else 0,
                    "bytes": sum(p.stat().st_size for p in folder.glob("*.png")) if folder.is_dir() else 0,
                },
                "top_rejections": reasons.most_common(8),
            },
            indent=1,
            default=str,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
