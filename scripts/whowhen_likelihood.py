#!/usr/bin/env python3
"""The likelihood baselines over all 184 Who&When logs, resumable across machines and sessions.

Both baselines (``incremental``, ``leave-one-out``) score every earlier step with the embedded
SmolLM2-135M's log-probabilities, in-process. On a 2-core machine ``incremental`` costs seconds per
Algorithm-Generated log and about a minute per Hand-Crafted log; ``leave-one-out`` re-evaluates the rest
of the context once per removed step, so a long Hand-Crafted log (80+ steps filling the 4,096-token
context) costs a quarter of an hour. The full run therefore outlives a session, and every session
here starts on a fresh machine: the predictions done so far are kept in the repository
(``docs/results/whowhen_<method>/predictions.jsonl``), a run folder is seeded with them (its ledger is
rebuilt from them, ``settled_from_files``), and ``--save`` writes the grown file back. Nothing is
computed twice; Ctrl-C at any time and rerun.

    python scripts/whowhen_likelihood.py --dataset ../shared/datasets/who_and_when  # both methods, all logs
    python scripts/whowhen_likelihood.py --dataset DIR --method leave-one-out --source hand_crafted --save
    python scripts/whowhen_likelihood.py --dataset DIR --score-only  # just the table

Prints, per method and source: logs done, seconds per log (mean and median of the predictions'
``seconds``) and the scores of ``failforge score`` over the logs done (with their bootstrap intervals).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"  # where the predictions done so far are kept (--results)
METHODS = ("incremental", "leave-one-out")
SOURCES = ("algorithm_generated", "hand_crafted")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset",
        type=Path,
        required=True,
        help="the Who&When folder (its Algorithm-Generated and Hand-Crafted JSON)",
    )
    parser.add_argument("--method", choices=METHODS, action="append", help="repeatable; default: both")
    parser.add_argument(
        "--source",
        choices=("all", *SOURCES),
        default="all",
        help="which logs to run (the scores are over the logs done)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("whowhen_likelihood"),
        help="folder for the records and one run folder per method (and --source)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help="where the predictions done so far are kept, one whowhen_<method>/ each (default: docs/results)",
    )
    parser.add_argument(
        "--save", action="store_true", help="copy each method's predictions back into the --results folder"
    )
    parser.add_argument(
        "--score-only",
        action="store_true",
        help="run nothing: score what the run folders (or the kept predictions) hold",
    )
    return parser


def kept(method: str, results: Path) -> Path:
    return results / f"whowhen_{method.replace('-', '_')}" / "predictions.jsonl"


def failforge(*args: str | Path) -> None:
    done = subprocess.run([sys.executable, "-m", "failforge", *map(str, args)], check=False)
    if done.returncode != 0:
        raise SystemExit(f"failforge {' '.join(map(str, args))}: exit {done.returncode}")


def records(dataset: Path, work: Path) -> Path:
    path = work / "ww.jsonl"
    if not path.exists():
        failforge("import", dataset, "--format", "whowhen", "-o", path)
    return path


def run_folder(method: str, source: str, work: Path, results: Path) -> Path:
    """The run folder of (method, source), seeded with the kept predictions the first time. One per source,
    because a run folder is bound to the records it was run on (another ``--ids`` is refused there); a
    seeded folder keeps the kept predictions of the other source too, so ``--save`` loses none."""
    folder = work / (method if source == "all" else f"{method}-{source}")
    if not (folder / "predictions.jsonl").exists() and kept(method, results).exists():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept(method, results), folder / "predictions.jsonl")
    return folder


def ids_file(good: list[Any], source: str, work: Path) -> Path | None:
    if source == "all":
        return None
    path = work / f"ids_{source}.txt"
    path.write_text("".join(f"{r.id}\n" for r in good if f"/{source}/" in r.id))
    return path


def cost_and_scores(method: str, data: Path, good: list[Any], folder: Path, results: Path) -> dict[str, Any] | None:
    """Per source: logs done, seconds per log, and the scores over the logs done (a partial run is not
    scored as if the rest were wrong)."""
    from failforge.attribution import write_records
    from failforge.attribution._predictions import load_predictions

    path = folder / "predictions.jsonl"
    if not path.exists():
        path = kept(method, results)
    if not path.exists():
        return None
    rows, bad = load_predictions(path)
    for problem in bad:
        print(f"skipped {problem}", file=sys.stderr)
    done = {r.record_id for r in rows}
    folder.mkdir(parents=True, exist_ok=True)
    scored, report = folder / "records_done.jsonl", folder / "score.json"
    write_records(scored, [r for r in good if r.id in done])
    failforge("score", scored, path, "--json", report)
    scores = json.loads(report.read_text())
    out: dict[str, Any] = {}
    for source in SOURCES:
        seconds = [r.seconds for r in rows if f"/{source}/" in r.record_id]
        group: dict[str, Any] = next((v for k, v in scores["by_source"].items() if k.endswith(source)), {})
        total = sum(1 for r in good if f"/{source}/" in r.id)
        out[source] = {
            "done": len(seconds),
            "total": total,
            "mean_s": statistics.fmean(seconds) if seconds else None,
            "median_s": statistics.median(seconds) if seconds else None,
            "scores": group,
        }
    return out


def metric(scores: dict[str, Any], name: str) -> str:
    value = scores.get(name) or {}
    if value.get("value") is None:
        return "—"
    ci = value.get("ci95")
    return f"{value['value']}" + (f" [{ci[0]:.0f}–{ci[1]:.0f}]" if ci else "")


def main(argv: list[str] | None = None) -> int:
    args = arguments().parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    data = records(args.dataset, args.work)
    from failforge.attribution import load_records

    good, _ = load_records(data)
    ids = ids_file(good, args.source, args.work)
    chosen = args.method or list(METHODS)
    folders = {method: run_folder(method, args.source, args.work, args.results) for method in chosen}
    for method in chosen:
        folder = folders[method]
        if not args.score_only:
            try:
                failforge("attribute", data, "--method", method, "-o", folder, *(("--ids", ids) if ids else ()))
            except KeyboardInterrupt:
                print(f"{method}: interrupted; rerun to resume", file=sys.stderr)
            if args.save:
                kept(method, args.results).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(folder / "predictions.jsonl", kept(method, args.results))
    for method in chosen:
        table = cost_and_scores(method, data, good, folders[method], args.results)
        if table is None:
            print(f"{method}: no predictions yet (none kept in {kept(method, args.results).parent})")
            continue
        for source, row in table.items():
            s = row["scores"]
            mean = "—" if row["mean_s"] is None else f"{row['mean_s']:.1f}"
            median = "—" if row["median_s"] is None else f"{row['median_s']:.1f}"
            metrics = "  ".join(
                f"{name} {metric(s, name)}" for name in ("agent", "step_exact", "step_within_k", "mae", "joint")
            )
            print(
                f"{method:14} {source:20} done {row['done']:3}/{row['total']}  s/log mean {mean:>6} median {median:>6} "
                f" {metrics}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
