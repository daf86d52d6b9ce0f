#!/usr/bin/env python3
"""Re-derive the kept likelihood predictions (docs/results/whowhen_<method>/) under the current prediction rule,
from their recorded per-step scores: no model, no tokens. Used when the rule changed but the scores did not
(tool outputs no longer nameable, ``failforge.attribution._likelihood.nameable``).

    python scripts/whowhen_likelihood_rederive.py --dataset ../shared/datasets/who_and_when -o rederived
    failforge score ww.jsonl rederived/incremental

Prints, per method, how many predictions named ``Computer_terminal`` before and after and how many steps changed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", type=Path, required=True, help="the Who&When folder (Algorithm-Generated, Hand-Crafted)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, required=True, help="folder for one <method>/predictions.jsonl each"
    )
    parser.add_argument(
        "--results", type=Path, default=ROOT / "docs" / "results", help="where the kept predictions are"
    )
    args = parser.parse_args()

    from failforge.attribution import summarise
    from failforge.attribution._likelihood import _outcome
    from failforge.attribution._predictions import load_predictions
    from failforge.plugins import importers

    records = {}
    for sub in ("Algorithm-Generated", "Hand-Crafted"):
        loaded, _ = summarise(importers.get("whowhen")(args.dataset / sub))
        records.update({r.id: r for r in loaded})
    for method in ("incremental", "leave_one_out"):
        predictions, bad = load_predictions(args.results / f"whowhen_{method}" / "predictions.jsonl")
        before = after = changed = 0
        lines = []
        for p in predictions:
            record = records[p.record_id]
            scored = [i for i, s in enumerate(p.step_scores or []) if s is not None]
            outcome = _outcome(record, scored, [float(p.step_scores[i]) for i in scored])  # type: ignore[index]
            before += p.agent == "Computer_terminal"
            after += outcome.agent == "Computer_terminal"
            changed += outcome.step != p.step
            lines.append(
                p.model_copy(
                    update={"agent": outcome.agent, "step": outcome.step, "step_text": outcome.step_text}
                ).model_dump_json()
            )
        folder = args.output / method.replace("_", "-")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "predictions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(
            f"{method}: {len(predictions)} predictions ({len(bad)} unreadable); naming Computer_terminal {before} ->"
            f" {after}; step changed in {changed}"
        )


if __name__ == "__main__":
    main()
