"""The dataset card written beside gold.jsonl: what was made, how, and what each check measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from failforge.campaign._config import CampaignConfig


def _decisiveness_stats(gold_path: Path) -> tuple[int, float | None, float | None]:
    if not gold_path.exists():
        return 0, None, None
    original, injected = [], []
    with open(gold_path, encoding="utf-8") as handle:
        for line in handle:
            rates = (json.loads(line).get("provenance") or {}).get("decisiveness")
            if rates:
                original.append(rates["original_success_rate"])
                injected.append(rates["injected_success_rate"])
    if not original:
        return 0, None, None
    return len(original), sum(original) / len(original), sum(injected) / len(injected)


def write_card(out: Path, config: CampaignConfig, manifest: dict[str, Any]) -> Path:
    totals = manifest.get("result", {}).get("totals", {})
    models = manifest.get("models", {})
    d = config.filters.decisiveness
    lines = [
        "# failforge gold failure dataset",
        "",
        f"Config hash `{manifest.get('config_hash')}` · failforge {manifest.get('versions', {}).get('failforge')} · created {manifest.get('created_at')}",
        "",
        "## What is in it",
        f"- `gold.jsonl`: {totals.get('kept', 0)} trajectories whose decisive step, agent and error mode are known by construction.",
        f"- `rejected.jsonl`: {totals.get('rejected', 0)} candidates that did not pass, each with every reason.",
        f"- `failed.jsonl`: {totals.get('failed', 0)} attempts that hit infrastructure trouble or drift (not counted as rejections).",
        f"- Seeds: {len(manifest.get('seeds', {}))} successful runs; {manifest.get('planned_attempts')} planned attempts "
        f"({config.plan.steps_per_seed} steps x {config.plan.modes_per_step} modes x {config.plan.samples} samples per seed).",
        f"- Agent model: `{models.get('agent', {}).get('name')}`; guide model: `{models.get('guide', {}).get('name')}`.",
        "",
        "## How each record was made",
        "Each gold record replays its seed exactly up to the decisive step t (model responses served from the",
        "recording after a request-hash check; tools re-executed live with their state fingerprints checked), then",
        "the guide model writes a steering note for the chosen error mode, the agent's own model produces step t",
        "from its own request plus the note (the note is then dropped), and the agent continues live.",
        "",
        "## Filters (all verdicts are kept on every record)",
        *[f"- `{name}`" for name in config.filters.enabled],
    ]
    if d.enabled:
        n, orig, inj = _decisiveness_stats(out / "gold.jsonl")
        lines += [
            f"- `decisiveness`: for each candidate, the run was continued k={d.k} times from the original step a_t and k times",
            f"  from the injected step at sampling temperature {d.temperature} (applied at the model endpoint; the replayed",
            "  prefix is unchanged). A record is kept only if the original arm succeeded at least "
            f"{d.original_min_success:.0%} of the time and the injected arm at most {d.injected_max_success:.0%}.",
            "  This measures whether the injected step, rather than the continuation's own randomness, decides the outcome.",
        ]
        if n:
            lines.append(f"  Over the {n} kept records: mean success {orig:.2f} from a_t vs {inj:.2f} from the injected step.")
    else:
        lines.append("- decisiveness: not run (enable `[filters.decisiveness] enabled = true` to measure it).")
    lines += ["", "## Reproduce", "```", "failforge generate <this campaign file>  # the resolved config is in manifest.json", "```", ""]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
