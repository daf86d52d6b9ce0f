"""Record screenshot-harness seeds on MiniWoB++ with the pixel vision policy, replay them, print the numbers.

    PYTHONPATH=src python3 scripts/vision_seeds.py --out /tmp/vision-seeds
        [--tasks click-button,enter-text] [--episodes 1]

For each task and episode seed: record through ``failforge.miniwob_vision`` (screenshots only, coordinate
actions) with :func:`vision_script` as the model, keep it if MiniWoB's reward says success, replay it to
its end (every screenshot's hash is in the request hash) and report identical / drift. Writes the kept
seeds to --out/seeds.jsonl, their screenshots beside it in --out/images/<sha256>.png (the dataset folder:
copy --out and it replays elsewhere); live screenshots go to the store --out/store (FAILFORGE_IMAGE_DIR,
a cache). Run ``failforge audit --out/seeds.jsonl`` afterwards to audit the folder as written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tasks", default="")
    parser.add_argument("--episodes", type=int, default=1, help="episode seeds per task (1..N)")
    parser.add_argument("--no-audit", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FAILFORGE_IMAGE_DIR", str((args.out / "store").resolve()))

    from failforge.environments.miniwob import env_spec
    from failforge.environments.miniwob._vision_policy import VISION_TASKS, vision_script
    from failforge.errors import FailforgeError
    from failforge.harnesses.miniwob_vision import VisionAgent
    from failforge.llm import OracleResponder
    from failforge.replay import replay
    from failforge.seeds import record
    from failforge.trajectory import ComponentSpec, append_jsonl

    tasks = [t for t in args.tasks.split(",") if t] or list(VISION_TASKS)
    cache = str((args.out / "http-cache").resolve())
    seeds_file = args.out / "seeds.jsonl"
    seeds_file.unlink(missing_ok=True)
    rows = []
    for task in tasks:
        for episode in range(1, args.episodes + 1):
            started = time.monotonic()
            row: dict[str, object] = {"task": task, "episode": episode}
            try:
                spec = env_spec(task, episode, cache_dir=cache, cache_mode="record", action_space="coordinate")
                seed = record(
                    env_spec=spec,
                    harness=VisionAgent(),
                    model=ComponentSpec(name="vision-policy", config={"role": "agent"}),
                    upstream=OracleResponder(vision_script, name="miniwob.vision_policy"),
                    oracle=True,
                    trajectory_id=f"miniwob-{task}-seed{episode}-vision",
                )
            except FailforgeError as exc:
                row.update(recorded=False, error=str(exc).splitlines()[0][:200])
                rows.append(row)
                print(json.dumps(row), flush=True)
                continue
            ok = bool(seed.outcome and seed.outcome.success)
            images = sorted({h for s in seed.steps for h in s.images})
            row.update(
                recorded=True,
                success=ok,
                steps=len(seed.steps),
                images=len(images),
                reward=seed.outcome.score if seed.outcome else None,
            )
            if not ok:
                row["policy_said"] = next(
                    (s.content for s in reversed(seed.steps) if s.kind == "agent" and s.content), ""
                )[:200]
            if ok:
                append_jsonl(seeds_file, [seed])  # its screenshots copied into images/ beside the file first
                if not args.no_audit:
                    report = replay(seed, raise_on_drift=False)
                    row.update(identical=report.identical, drift=type(report.drift).__name__ if report.drift else None)
                    if report.drift is not None:
                        row["drift_at"] = report.drift.step
                        row["drift_message"] = str(report.drift).splitlines()[0][:200]
            row["seconds"] = round(time.monotonic() - started, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    solved = sorted({str(r["task"]) for r in rows if r.get("success")})
    identical = sum(1 for r in rows if r.get("identical"))
    print(
        json.dumps(
            {
                "tasks_tried": len(tasks),
                "episodes": len(rows),
                "seeds_kept": sum(1 for r in rows if r.get("success")),
                "tasks_solved": len(solved),
                "replays_identical": identical,
                "solved": solved,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
