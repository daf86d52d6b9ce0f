"""P.1 / P.2 gold from screenshot seeds: the campaign with the rule guide, the vision policy as the agent.

    PYTHONPATH=src python3 scripts/vision_gold.py --seeds /tmp/vision-seeds --out /tmp/vision-gold [--modes P.2,P.1] [--steps 3]

Reads the seeds written by scripts/vision_seeds.py (--seeds/seeds/*.json, images in --seeds/images), runs
one campaign (guide = rules, the loopback vision policy answering every agent call), prints kept /
rejected per mode and the image bytes per gold record.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--glob", default="*.json", help="which seed files of --seeds/seeds to use (e.g. '*-seed1-vision.json')")
    args = parser.parse_args()
    os.environ.setdefault("FAILFORGE_IMAGE_DIR", str((args.seeds / "images").resolve()))

    from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
    from failforge.environments.miniwob._vision_policy import vision_script
    from failforge.images import ImageStore
    from failforge.jsonl import read_jsonl
    from failforge.llm import ModelEndpoint
    from failforge.testing import LoopbackModelServer
    from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

    seeds = [Trajectory.model_validate_json(p.read_text()) for p in sorted((args.seeds / "seeds").glob(args.glob))]
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "seeds.jsonl", seeds)
    modes = [m for m in args.modes.split(",") if m]
    with LoopbackModelServer(agent_policy=lambda agent, body: vision_script(0, body)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="vision-policy", api_key_env=None)
        config = CampaignConfig(seeds=[str(args.out / "seeds.jsonl")], output=str(args.out / "campaign"), guide_kind="rules",
                                plan={"steps_per_seed": args.steps, "modes_per_step": len(modes), "modes": modes})
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, _ = load_jsonl(args.out / "campaign" / "gold.jsonl") if (args.out / "campaign" / "gold.jsonl").exists() else ([], None)
    store = ImageStore()
    kept = Counter(r.label.mode_code for r in gold)
    sizes = [sum(store.path(h).stat().st_size for h in {h for s in r.steps for h in s.images} | set(_request_images(r))) for r in gold]
    rejected_path = args.out / "campaign" / "rejected.jsonl"
    rejected: list[dict[str, object]] = []
    for item in read_jsonl(rejected_path) if rejected_path.exists() else []:
        if isinstance(item, tuple):
            rejected.append(item[1])
        else:  # a bad line is reported, the rest counted
            print(f"skipped: {item}", file=sys.stderr)
    reasons = Counter(str(r.get("mode")) + ": " + str((r.get("reasons") or ["?"])[0])[:90] for r in rejected)
    kept_tasks = sorted({r.task.task_id for r in gold})
    print(json.dumps({"seeds": len(seeds), "planned": summary.planned, "attempts": summary.attempts, "kept": dict(kept), "kept_tasks": kept_tasks,
                      "rejected": len(rejected), "rejected_by": dict(summary.rejected_by), "failed": summary.failed, "failed_by": dict(summary.failed_by),
                      "image_bytes_per_record": sizes, "top_rejections": reasons.most_common(8)}, indent=1, default=str))
    return 0


def _request_images(record) -> list[str]:  # type: ignore[no-untyped-def]
    from failforge.images import image_refs

    return [h for s in record.steps if s.model_call is not None for h in image_refs(s.model_call.request)]


if __name__ == "__main__":
    sys.exit(main())
