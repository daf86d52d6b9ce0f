"""Scoring predictions against gold. Every definition here is also written in docs/ATTRIBUTION.md.

N is the number of gold records. A record with no prediction, or whose prediction lacks a field, or
names a step outside ``0..len(steps)-1``, is wrong on that field and stays in N. Steps are compared
as integers. Where a source accepts several answers (``gold.accepted_*``, e.g. any turn of the gold
round in debate/dylan) a prediction is right if it matches any of them.

- Agent: share of multi-agent records whose predicted agent equals the gold agent after
  normalisation (handoff suffixes such as ``(-> WebSurfer)``/``(thought)`` removed, whitespace
  collapsed, case folded). Single-agent records are not in its N (they are trivially right).
- Step exact: share of records with a valid predicted step equal to the gold step.
- Step ±k: share of records with a valid predicted step within k of the gold step.
- MAE: mean |predicted - gold| over valid predictions, computed per source and averaged with weights
  N_b / N over the sources that have at least one valid prediction (re-normalised).
- Signed error: mean (predicted - gold) over valid predictions. Early share: share of valid
  predictions strictly before the gold step (early commitment); late share: strictly after.
- Error macro-F1 (18 modes): over records whose gold has a mode; F1 per mode = 2TP / (2TP + FP + FN),
  a missing or unmappable predicted mode counting as a false negative of the gold mode; averaged over
  the modes with gold support (a mode absent from the gold has no defined F1). Family macro-F1: the
  same on the 6 families.
- Joint: agent (multi-agent only; single-agent trivially right) and step exact and mode (only where
  the gold has a mode; sources without modes, e.g. Who&When, need agent and step).

Accuracies and F1 are percentages; MAE and signed error are in steps. Groups: every source, modality
and topology; macro = unweighted mean of a metric over the groups where it is defined.

``upstream_substring``: the same predictions scored exactly as Who&When's ``evaluate.py`` scores them
(ag2ai/Agents_Failure_Attribution, ``Automated_FA/evaluate.py`` at commit f4d2b6da, see
:func:`upstream_report`): a prediction is read only when its text matches both ``Agent Name:\\s*([\\w_]+)``
and ``Step Number:\\s*(\\d+)`` (a prediction missing either, or writing ``-1``, is wrong on both), then a
step is right if the gold step's text occurs inside the predicted digits (``"1" in "10"``) and an agent
if the gold name occurs inside the predicted word; the denominator is every record. The difference to
the integer rule is the inflation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from failforge.attribution._codes import family_of
from failforge.attribution._component_metrics import component_report
from failforge.attribution._predictions import Prediction
from failforge.attribution._protocols import normalise_agent
from failforge.attribution._record import LabelledFailure
from failforge.attribution._stats import paired_bootstrap, wilson

PROPORTIONS = ("agent", "step_exact", "step_within_k", "joint", "early_share", "late_share")


@dataclass
class Judged:
    """One record's prediction judged field by field."""

    record: LabelledFailure
    prediction: Prediction | None
    multi: bool
    agent_ok: bool
    step_valid: bool
    step_exact: bool
    distance: int | None
    signed: int | None
    within_k: bool
    mode_gold: str | None
    mode_pred: str | None
    mode_ok: bool
    joint: bool

    @property
    def source(self) -> str:
        return self.record.source


def judge(record: LabelledFailure, prediction: Prediction | None, k: int) -> Judged:
    gold = record.gold
    multi = record.topology == "multi"
    accepted_agents = {normalise_agent(a) for a in [gold.agent, *gold.accepted_agents] if a}
    agent_ok = bool(prediction and prediction.agent) and normalise_agent(prediction.agent) in accepted_agents  # type: ignore[union-attr]
    step = prediction.step if prediction else None
    valid = isinstance(step, int) and not isinstance(step, bool) and 0 <= step < len(record.steps)
    accepted = sorted(record.accepted_step_set())
    distance = min(abs(step - s) for s in accepted) if valid else None  # type: ignore[operator]
    signed = (step - gold.step) if valid else None  # type: ignore[operator]
    exact = valid and step in accepted
    mode_pred = prediction.mode if prediction else None
    mode_ok = gold.mode is not None and mode_pred is not None and mode_pred in {gold.mode, *gold.accepted_modes}
    joint = (agent_ok or not multi) and exact and (mode_ok or gold.mode is None)
    return Judged(
        record,
        prediction,
        multi,
        agent_ok,
        valid,
        exact,
        distance,
        signed,
        valid and distance is not None and distance <= k,
        gold.mode,
        mode_pred,
        mode_ok,
        joint,
    )


def macro_f1(pairs: Sequence[tuple[str, str | None]]) -> float | None:
    """Macro-F1 over the gold labels present; ``pairs`` are (gold, predicted or None)."""
    labels = sorted({g for g, _ in pairs})
    if not labels:
        return None
    scores = []
    for label in labels:
        tp = sum(1 for g, p in pairs if g == label and p == label)
        fp = sum(1 for g, p in pairs if g != label and p == label)
        fn = sum(1 for g, p in pairs if g == label and p != label)
        scores.append(2 * tp / (2 * tp + fp + fn) if (2 * tp + fp + fn) else 0.0)
    return 100 * sum(scores) / len(scores)


def _pct(hits: int, n: int) -> dict[str, object]:
    return {"value": round(100 * hits / n, 2) if n else None, "n": n, "hits": hits, "ci95": wilson(hits, n)}


def _mae(items: Sequence[Judged]) -> float | None:
    by_source: dict[str, list[Judged]] = {}
    for j in items:
        by_source.setdefault(j.source, []).append(j)
    parts = []
    for group in by_source.values():
        valid = [j.distance for j in group if j.distance is not None]
        if valid:
            parts.append((len(group), sum(valid) / len(valid)))
    total = sum(n for n, _ in parts)
    return round(sum(n * m for n, m in parts) / total, 3) if total else None


def metrics(items: Sequence[Judged], k: int) -> dict[str, object]:
    n = len(items)
    multi = [j for j in items if j.multi]
    valid = [j for j in items if j.step_valid]
    with_mode = [j for j in items if j.mode_gold is not None]
    signed = [j.signed for j in valid if j.signed is not None]
    early = sum(
        1
        for j in valid
        if j.step_valid
        and j.prediction
        and j.prediction.step is not None
        and j.prediction.step < min(j.record.accepted_step_set())
    )
    late = sum(
        1
        for j in valid
        if j.step_valid
        and j.prediction
        and j.prediction.step is not None
        and j.prediction.step > max(j.record.accepted_step_set())
    )
    mode_pairs = [(j.mode_gold, j.mode_pred) for j in with_mode]
    family_pairs = [(family_of(j.mode_gold), family_of(j.mode_pred)) for j in with_mode]
    return {
        "n": n,
        "predicted": sum(1 for j in items if j.prediction is not None),
        "valid_steps": len(valid),
        "agent": _pct(sum(j.agent_ok for j in multi), len(multi)),
        "step_exact": _pct(sum(j.step_exact for j in items), n),
        "step_within_k": {**_pct(sum(j.within_k for j in items), n), "k": k},
        "mae": {"value": _mae(items), "n": len(valid)},
        "signed_error": {"value": round(sum(signed) / len(signed), 3) if signed else None, "n": len(signed)},
        "early_share": _pct(early, len(valid)),
        "late_share": _pct(late, len(valid)),
        "mode_macro_f1": {
            "value": _round(macro_f1([(g, p) for g, p in mode_pairs if g])),
            "n": len(with_mode),
            "labels": len({g for g, _ in mode_pairs}),
        },
        "family_macro_f1": {
            "value": _round(macro_f1([(g, p) for g, p in family_pairs if g])),
            "n": len(with_mode),
            "labels": len({g for g, _ in family_pairs}),
        },
        "joint": _pct(sum(j.joint for j in items), n),
    }


def _round(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


# --- Who&When's evaluate.py, exactly ------------------------------------------------------------------
# ag2ai/Agents_Failure_Attribution at f4d2b6da464a826580e59b3a0eae15ea2d642d7c, Automated_FA/evaluate.py
# (last changed in aeffbf5c): read_predictions() cuts the log inference.py printed into blocks
# "Prediction for <file>.json: ..." and keeps a block only when both patterns below match (re.search,
# ignoring case); evaluate_accuracy() then counts `mistake_agent in predicted_agent` and
# `mistake_step in predicted_step` on strings, over every file of the data folder.

UPSTREAM_AGENT = re.compile(r"Agent Name:\s*([\w_]+)", re.IGNORECASE)
UPSTREAM_STEP = re.compile(r"Step Number:\s*(\d+)", re.IGNORECASE)
#: Methods whose prediction is the judge's reply itself: Who&When's all_at_once prints the model's reply
#: verbatim as the prediction; its step_by_step and binary_search print "Agent Name: {agent}\nStep Number:
#: {step}" for the step the protocol chose (and nothing when step by step judged no step decisive).
REPLY_METHODS = frozenset({"all-at-once"})


def upstream_text(prediction: Prediction) -> str | None:
    """What Who&When's ``inference.py`` would print after ``Prediction for N.json:`` for this prediction
    (None: it prints no prediction block at all)."""
    if prediction.method.split("/")[0] in REPLY_METHODS:
        return prediction.reply or ""
    if prediction.agent is None or prediction.step is None:
        return None
    return f"Agent Name: {prediction.agent}\nStep Number: {prediction.step}"


def upstream_read(text: str | None) -> tuple[str, str] | None:
    """(predicted agent, predicted step) as ``evaluate.py`` reads a block, or None when it cannot (both
    patterns must match; ``-1`` does not, nor ``**Agent Name:** X``, nor ``Step Number: step 4``). A
    block ends where the log next says ``Prediction for``, even inside a reply."""
    block = (text or "").split("Prediction for", 1)[0]
    agent = UPSTREAM_AGENT.search(block)
    step = UPSTREAM_STEP.search(block)
    return (agent.group(1), step.group(1)) if agent and step else None


def upstream_gold(record: LabelledFailure) -> tuple[str, str]:
    """``(str(mistake_agent), str(mistake_step))`` of the Who&When log the record is, or (any other
    source) of the log failforge's Who&When exporter writes for it."""
    if record.origin.format == "whowhen":
        return str(record.gold.agent), record.gold.step_label
    return str(record.gold.agent or record.steps[record.gold.step].agent), str(record.gold.step)


def upstream_report(
    records: Sequence[LabelledFailure], predictions: Sequence[Prediction], items: Sequence[Judged]
) -> dict[str, object]:
    """The predictions scored by Who&When's ``evaluate.py`` rule, beside failforge's integer rule.

    Blocks are read in order and a readable one replaces an earlier one of the same record (a dict keyed
    by file); an unreadable block replaces nothing. Every record is in the denominator."""
    parsed: dict[str, tuple[str, str]] = {}
    for prediction in predictions:
        read = upstream_read(upstream_text(prediction))
        if read is not None:
            parsed[prediction.record_id] = read
    step_hits = agent_hits = 0
    step_right: set[str] = set()
    for record in records:
        read = parsed.get(record.id)
        if read is None:
            continue
        gold_agent, gold_step = upstream_gold(record)
        agent_hits += gold_agent in read[0]
        if gold_step in read[1]:
            step_hits += 1
            step_right.add(record.id)
    n = len(items)
    exact = sum(j.step_exact for j in items)
    agent_exact = sum(j.agent_ok for j in items)

    def pct(hits: int) -> float | None:
        return round(100 * hits / n, 2) if n else None

    return {
        "n": n,
        "rule": "Who&When Automated_FA/evaluate.py (ag2ai/Agents_Failure_Attribution@f4d2b6da)",
        "parsed": sum(1 for r in records if r.id in parsed),
        "step_hits_substring": step_hits,
        "agent_hits_substring": agent_hits,
        "step_accuracy_integer": pct(exact),
        "step_accuracy_substring": pct(step_hits),
        "step_inflation_pp": pct(step_hits - exact),
        "records_counted_only_by_substring": sum(1 for j in items if j.record.id in step_right and not j.step_exact),
        "agent_accuracy_normalised": pct(agent_exact),
        "agent_accuracy_substring": pct(agent_hits),
    }


def _exact(metric: dict[str, object]) -> float:
    """A proportion's unrounded value (so a macro average does not average rounding errors)."""
    if "hits" in metric and metric.get("n"):
        return 100 * metric["hits"] / metric["n"]  # type: ignore[operator]
    return float(metric["value"])  # type: ignore[arg-type]


def _macro(groups: dict[str, dict[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    keys = (
        "agent",
        "step_exact",
        "step_within_k",
        "joint",
        "mode_macro_f1",
        "family_macro_f1",
        "mae",
        "signed_error",
        "early_share",
    )
    for key in keys:
        cells = [g.get(key) for g in groups.values()]
        values = [_exact(c) for c in cells if isinstance(c, dict) and c["value"] is not None]
        out[key] = {"value": round(sum(values) / len(values), 2) if values else None, "groups": len(values)}  # type: ignore[arg-type]
    return out


def judge_all(
    records: Sequence[LabelledFailure], predictions: Sequence[Prediction], k: int
) -> tuple[list[Judged], dict[str, int]]:
    by_id: dict[str, Prediction] = {}
    duplicates = 0
    for p in predictions:
        if p.record_id in by_id:
            duplicates += 1
        by_id[p.record_id] = p
    ids = {r.id for r in records}
    judged = [judge(r, by_id.get(r.id), k) for r in records]
    counts = {
        "records": len(records),
        "predictions": len(predictions),
        "missing": sum(1 for r in records if r.id not in by_id),
        "extra": sum(1 for rid in by_id if rid not in ids),
        "duplicates": duplicates,
        "with_problems": sum(1 for r in records if r.id in by_id and by_id[r.id].problems),
    }
    return judged, counts


def score(records: Sequence[LabelledFailure], predictions: Sequence[Prediction], *, k: int = 5) -> dict[str, object]:
    judged, counts = judge_all(records, predictions, k)
    report: dict[str, object] = {"counts": counts, "k": k, "overall": metrics(judged, k)}
    for axis, attr in (("source", "source"), ("modality", "modality"), ("topology", "topology")):
        groups: dict[str, list[Judged]] = {}
        for j in judged:
            groups.setdefault(getattr(j.record, attr), []).append(j)
        per = {name: metrics(items, k) for name, items in sorted(groups.items())}
        report[f"by_{axis}"] = per
        report[f"macro_{axis}"] = _macro(per)
    report["upstream_substring"] = upstream_report(records, predictions, judged)
    components = component_report(records, predictions)
    if components is not None:
        report["components"] = components
    methods = sorted({p.method for p in predictions})
    report["methods"] = methods
    return report


def compare(
    records: Sequence[LabelledFailure],
    a: Sequence[Prediction],
    b: Sequence[Prediction],
    *,
    k: int = 5,
    resamples: int = 10_000,
    seed: int = 20260820,
) -> dict[str, object]:
    """Paired, source-stratified bootstrap of A - B for the main metrics."""
    ja, _ = judge_all(records, a, k)
    jb, _ = judge_all(records, b, k)
    pairs = list(zip(ja, jb, strict=False))
    strata = [r.source for r in records]

    def prop(field: str, only_multi: bool = False):  # type: ignore[no-untyped-def]
        def metric(sample: Sequence[tuple[Judged, Judged]]) -> float | None:
            rows = [p for p in sample if p[0].multi] if only_multi else list(sample)
            if not rows:
                return None
            return 100 * (sum(getattr(x, field) for x, _ in rows) - sum(getattr(y, field) for _, y in rows)) / len(rows)

        return metric

    def f1(sample: Sequence[tuple[Judged, Judged]]) -> float | None:
        rows = [p for p in sample if p[0].mode_gold]
        fa = macro_f1([(x.mode_gold, x.mode_pred) for x, _ in rows])  # type: ignore[misc]
        fb = macro_f1([(y.mode_gold, y.mode_pred) for _, y in rows])  # type: ignore[misc]
        return None if fa is None or fb is None else fa - fb

    out: dict[str, object] = {
        "resamples": resamples,
        "seed": seed,
        "stratified_by": "source",
        "difference": "A - B (percentage points)",
    }
    for name, fn in (
        ("agent", prop("agent_ok", True)),
        ("step_exact", prop("step_exact")),
        ("step_within_k", prop("within_k")),
        ("joint", prop("joint")),
        ("mode_macro_f1", f1),
    ):
        out[name] = paired_bootstrap(pairs, strata, fn, resamples=resamples, seed=seed)
    return out
