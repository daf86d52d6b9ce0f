"""The dataset card written beside gold.jsonl: what was made, how, and what each check measured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from failforge.campaign._config import CampaignConfig
from failforge.conformance import STRUCTURAL_MODES
from failforge.report import describe_realism, load_dataset, summarise


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


def _label_quality(out: Path, config: CampaignConfig) -> list[str]:
    """Steering notes, mode conformance per mode (and which verdicts a judge gave), and the realism probe."""
    summary = summarise(load_dataset(out, seed_files=config.seeds))
    conf = summary["conformance"]
    c = config.filters.conformance
    kinds = ", ".join(f"{kind} {n}" for kind, n in summary["guide_kinds"].items()) or "none"
    judge = (c.judge_model.model if c.judge_model else "the guide endpoint") if c.judge else None
    lines = [
        "",
        "## Steering notes",
        f"Guide kind `{config.guide_kind}` (attempts by who wrote the note: {kinds}). The rule-based guide writes notes for the",
        f"structural modes ({', '.join(STRUCTURAL_MODES)}) from the seed itself: the tool, the argument and a plausible wrong value.",
        "",
        "## Mode conformance (does the decisive step exhibit its mode?)",
        f"Structural modes are decided by rules; semantic modes by a judge ({judge})." if judge else
        "Structural modes are decided by rules; semantic modes have no judge here (`[filters.conformance] judge = false`), so they stay unverified"
        + (" and are kept anyway (`keep_unverified = true`)." if c.keep_unverified else " and are not kept as gold."),
        f"Kept records conformant: {conf['kept_conformant']} of {conf['kept']}. "
        f"All candidates: {conf['exhibited']} of {conf['candidates']} exhibit their mode; {conf['by_judge']} verdict(s) came from a judge.",
    ]
    if conf["by_mode"]:
        lines += ["", "| mode | candidates | exhibited | not exhibited | unverified | by rule | by judge (model) | kept | kept conformant |", "|---|---|---|---|---|---|---|---|---|"]
        for code, row in conf["by_mode"].items():
            judged = f"{row['by_judge']} ({', '.join(row['judge_models'])})" if row["by_judge"] else "0"
            lines.append(
                f"| {code} | {row['candidates']} | {row['exhibited']} | {row['not_exhibited']} | {row['unverified']} | {row['by_rule']} | {judged} | {row['kept']} | {row['kept_conformant']} |"
            )
    realism = summary["realism"]
    lines += [
        "",
        "## Realism probe (can a cheap detector spot the injected step?)",
        "A logistic regression on surface features of the step (length, tool calls, digits, pronouns, apologies, ...) is trained",
        "to tell injected steps from the seeds' own steps at the same positions; its cross-validated ROC AUC is reported.",
        "0.5 means the detector cannot tell them apart (good); 1.0 means the injected steps give themselves away.",
        f"- Gold records: {describe_realism(realism['gold'])}.",
        f"- All candidates with a branch: {describe_realism(realism['candidates'])}.",
    ]
    return lines


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
    lines += _label_quality(out, config)
    lines += ["", "## Reproduce", "```", "failforge generate <this campaign file>  # the resolved config is in manifest.json", "```", ""]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
