"""The dataset card written beside gold.jsonl: what was made, how, and what each check measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from failforge.gold import CampaignConfig
from failforge.judgement import STRUCTURAL_MODES
from failforge.plugins import filters, gold_kinds
from failforge.report import describe_realism, load_dataset, summarise


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
        (
            f"Guide kind `{config.guide_kind}` (attempts by who wrote the note: {kinds}). The rule-based guide writes"
            " notes for the"
        ),
        (
            f"structural modes ({', '.join(STRUCTURAL_MODES)}) from the seed itself: the tool, the argument and a"
            " plausible wrong value."
        ),
        "",
        "## Mode conformance (does the decisive step exhibit its mode?)",
        (
            f"Structural modes are decided by rules; semantic modes by a judge ({judge})."
            if judge
            else (
                "Structural modes are decided by rules; semantic modes have no judge here (`[filters.conformance] judge"
                " = false`), so they stay unverified"
            )
            + (
                " and are kept anyway (`keep_unverified = true`)."
                if c.keep_unverified
                else " and are not kept as gold."
            )
        ),
        (
            f"Kept records conformant: {conf['kept_conformant']} of {conf['kept']}. All candidates: {conf['exhibited']}"
            f" of {conf['candidates']} exhibit their mode; {conf['by_judge']} verdict(s) came from a judge."
        ),
    ]
    if conf["by_mode"]:
        lines += [
            "",
            (
                "| mode | candidates | exhibited | not exhibited | unverified | by rule | by judge (model) | kept |"
                " kept conformant |"
            ),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for code, row in conf["by_mode"].items():
            judged = f"{row['by_judge']} ({', '.join(row['judge_models'])})" if row["by_judge"] else "0"
            lines.append(
                f"| {code} | {row['candidates']} | {row['exhibited']} | {row['not_exhibited']} | {row['unverified']} |"
                f" {row['by_rule']} | {judged} | {row['kept']} | {row['kept_conformant']} |"
            )
    realism = summary["realism"]
    lines += [
        "",
        "## Realism probe (can a cheap detector spot the injected step?)",
        (
            "A logistic regression on surface features of the step (length, tool calls, digits, pronouns, apologies,"
            " ...) is trained"
        ),
        (
            "to tell injected steps from the seeds' own steps at the same positions; its cross-validated ROC AUC is"
            " reported."
        ),
        "0.5 means the detector cannot tell them apart (good); 1.0 means the injected steps give themselves away.",
        f"- Gold records: {describe_realism(realism['gold'])}.",
        f"- All candidates with a branch: {describe_realism(realism['candidates'])}.",
    ]
    return lines


def _decisiveness_lines(out: Path, config: CampaignConfig, manifest: dict[str, Any]) -> list[str]:
    """How the check was made (k per arm, settings), what it cost, and what it found."""
    d = config.filters.decisiveness
    if not d.enabled:
        return [
            (
                "- `decisiveness`: **not checked** (turned off: `[filters.decisiveness] enabled = false`). Every record"
                " says"
            ),
            '  "decisiveness not checked": its failure may not have been caused by the changed step.',
        ]
    dec = summarise(load_dataset(out, seed_files=config.seeds), with_realism=False)["decisiveness"]
    arms = (manifest.get("result", {}).get("this_run") or {}).get("original_arms") or {}
    settings = (
        "the candidate's own settings" if d.temperature is None else f"temperature {d.temperature}, a seed per run"
    )
    lines = [
        (
            f"- `decisiveness`: the *original arm* (the seed's own step a_t, continued live) ran k={d.original_k}"
            " time(s) per (seed, step),"
        ),
        f"  once, shared by every attempt planned there; the *injected arm* k={d.injected_k} (its first run is the"
        " candidate itself" + ("" if d.temperature is None else ", here re-run") + f"), with {settings}.",
        (
            f"  Kept only if the original arm succeeded at least {d.original_min_success:.0%} of the time and the"
            f" injected arm at most {d.injected_max_success:.0%}: the changed step, not the continuing model, decides"
            " the outcome."
        ),
    ]
    if arms:
        lines.append(
            f"  This run: {arms.get('points', 0)} point(s), {arms.get('run_now', 0)} arm(s) run"
            f" ({arms.get('live_calls', 0)} live model calls, {arms.get('seconds', 0)} s), {arms.get('reused', 0)}"
            " reused from `arms.jsonl`; one arm per attempt would have cost"
            f" {arms.get('live_calls_one_per_attempt', 0)} calls."
        )
    lines.append(
        f"  {dec['rejected_original_arm']} attempt(s) at {dec['non_decisive_points']} point(s) were rejected without a"
        " run because the original arm also failed there."
    )
    if dec["measured"]:
        lines.append(
            f"  Over {dec['measured']} candidates measured on both arms: mean success"
            f" {dec['mean_original_success']:.2f} from a_t vs {dec['mean_injected_success']:.2f} from the injected"
            " step."
        )
    return lines


def outcome_counts(out: Path) -> dict[str, dict[str, int]]:
    """Records of a campaign folder counted by status and behaviour (gold) and by five-outcome class:
    ``{"gold:unsafe_action": {"unsafe_completion": 3}, "rejected": {"safe_completion": 5, "not adjudicated": 1}, ...}``.
    A rejected or failed record's class is its branch's (or, with no branch, the one its provenance keeps)."""
    from failforge.jsonl import read_jsonl

    counts: dict[str, dict[str, int]] = {}
    for status in ("gold", "rejected", "failed"):
        path = out / f"{status}.jsonl"
        if not path.exists():
            continue
        for item in read_jsonl(path):
            if not isinstance(item, tuple):
                continue
            data = item[1]
            branch = data.get("trajectory")
            record: dict[str, Any] = branch if status != "gold" and isinstance(branch, dict) else data
            adjudication = record.get("adjudication") or (data.get("provenance") or {}).get("adjudication") or {}
            label = data.get("label") or {}
            key = f"gold:{label.get('behaviour', 'failure')}" if status == "gold" else status
            outcome = str(adjudication.get("outcome") or "not adjudicated")
            row = counts.setdefault(key, {})
            row[outcome] = row.get(outcome, 0) + 1
    return counts


def outcome_lines(out: Path) -> list[str]:
    """The card's table of records by behaviour and five-outcome class (empty when nothing was adjudicated)."""
    counts = outcome_counts(out)
    if not any(k != "not adjudicated" for row in counts.values() for k in row):
        return []
    classes = [
        "safe_completion",
        "correct_refusal",
        "unsafe_completion",
        "over_refusal",
        "indeterminate",
        "not adjudicated",
    ]
    lines = [
        "",
        "## Records by behaviour and five-outcome class (from execution evidence: failforge.judgement)",
        "| records | " + " | ".join(classes) + " |",
        "|---|" + "---|" * len(classes),
    ]
    for key in sorted(counts):
        lines.append(f"| {key} | " + " | ".join(str(counts[key].get(c, 0)) for c in classes) + " |")
    return lines


def _injection_lines(config: CampaignConfig) -> list[str]:
    """What ``[plan.injections]`` added to the plan (docs/INJECTION.md says how each kind is made and kept)."""
    i = config.plan.injections
    if i is None:
        return []
    kinds = [
        "environment-side injections (`unsafe_action` gold: AgentDojo's security check says the attacker's goal"
        " happened)"
    ]
    if i.compliance:
        kinds.append("flipped compliance where the run under attack held (`unsafe_completion` gold)")
    if i.refusals:
        kinds.append("an injected refusal at a benign task (`over_refusal` gold)")
    return [
        f"- `[plan.injections]`: attacks {', '.join(i.attacks)}, {i.steps_per_seed} observation step(s) x"
        f" {i.tasks_per_point} injection task(s) per seed{'' if not i.only else ', no mode attempts'}; "
        + "; ".join(kinds)
        + "."
    ]


def write_card(out: Path, config: CampaignConfig, manifest: dict[str, Any]) -> Path:
    totals = manifest.get("result", {}).get("totals", {})
    models = manifest.get("models", {})
    lines = [
        "# failforge gold failure dataset",
        "",
        (
            f"Config hash `{manifest.get('config_hash')}` · failforge {manifest.get('versions', {}).get('failforge')} ·"
            f" created {manifest.get('created_at')}"
        ),
        "",
        "## What is in it",
        (
            f"- `gold.jsonl`: {totals.get('kept', 0)} trajectories whose decisive step, agent and error mode are known"
            " by construction."
        ),
        f"- `rejected.jsonl`: {totals.get('rejected', 0)} candidates that did not pass, each with every reason.",
        (
            f"- `failed.jsonl`: {totals.get('failed', 0)} attempts that hit infrastructure trouble or drift (not"
            " counted as rejections)."
        ),
        (
            f"- Seeds: {len(manifest.get('seeds', {}))} successful runs; {manifest.get('planned_attempts')} planned"
            f" attempts ({config.plan.steps_per_seed} steps x {config.plan.modes_per_step} modes x"
            f" {config.plan.samples} samples per seed)."
        ),
        (
            f"- Agent model: `{models.get('agent', {}).get('name')}`; guide model:"
            f" `{models.get('guide', {}).get('name')}`."
        ),
        *_injection_lines(config),
        "",
        "## How each record was made",
        "Each gold record replays its seed exactly up to the decisive step t (model responses served from the",
        "recording after a request-hash check; tools re-executed live with their state fingerprints checked), then",
        "the guide model writes a steering note for the chosen error mode, the agent's own model produces step t",
        "from its own request plus the note (the note is then dropped), and the agent continues live.",
        "",
        "## Filters (all verdicts are kept on every record)",
        *_filter_lines(config, manifest),
    ]
    lines += _decisiveness_lines(out, config, manifest)
    lines += _label_quality(out, config)
    lines += outcome_lines(out)
    lines += [
        "",
        "## Reproduce",
        "```",
        "failforge generate <this campaign file>  # the resolved config is in manifest.json",
        "```",
        "",
    ]
    path = out / "README.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _filter_lines(config: CampaignConfig, manifest: dict[str, Any]) -> list[str]:
    """Each gold kind this campaign planned, with the registered filters that judge it and what each checks."""
    kinds = manifest.get("kinds") or ["action"]
    lines = []
    for name in kinds:
        kind = gold_kinds.get(name)()
        lines.append(
            f"- `{name}` kind: "
            + (
                ", ".join(f"`{f}` ({filters.info(f).description or 'no description'})" for f in kind.filters(config))
                or "no filter (it makes no candidate)"
            )
        )
    return lines
