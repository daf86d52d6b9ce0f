"""Component-level scores: primary-attribution localisation and chain recovery (failforge's definitions).

Seed system 1 (chenjing-2024/agent-trajectory-attribution) releases no scorer, so these definitions are
failforge's own, written to fit the names it uses (also in docs/COMPONENTS.md). N is every record with
component gold; a record with no prediction stays in N.

Localisation, over a ranking of components (``Prediction.ranking``). Candidates are the record's
components strictly before the target. The ranking is read in order; an entry that is not a candidate (an
unknown id, the target, anything after it) is dropped and counted in ``invalid_entries``, a repeated id
counts once. ``rank`` is the gold primary's 1-based place among what is left; a missing ranking, an empty
one or one without the primary has no rank and scores 0 on every metric.

- Top-k = share of records with rank <= k (k = 1, 3, 5), in percent.
- MRR = mean over N of 1/rank (0 without a rank), a fraction in [0, 1].

Chain recovery, per chain (attack, execution), with P the predicted id set (no prediction: empty) and G
the gold set:

- precision |P∩G|/|P|, recall |P∩G|/|G|, F1 their harmonic mean (0 when both are 0);
- both empty: precision = recall = F1 = 1 (seed_systems.md §1); P empty, G not: all 0 (precision
  undefined -> 0); P not empty, G empty: all 0 (recall undefined -> 0; failforge's choice, symmetric);
- exact = share of records with P = G (as sets);
- order-aware: with L the longest common subsequence of the predicted and gold *sequences*,
  precision L/|P|, recall L/|G|, F1, with the same empty conventions, and ``order_exact`` = the
  sequences are identical;
- every value a macro average over records, in percent; ``nonempty_gold`` repeats them over the records
  whose gold chain is not empty (the paper's chain-recovery task scores only those).

Groups: every source and every target type; macro = unweighted mean over sources.
"""

from __future__ import annotations

from collections.abc import Sequence

from failforge.attribution._components import candidates
from failforge.attribution._predictions import Prediction
from failforge.attribution._record import LabelledFailure

TOP_K = (1, 3, 5)
CHAINS = ("attack", "execution")


def rank_of(record: LabelledFailure, prediction: Prediction | None) -> tuple[int | None, int]:
    """(1-based rank of the gold primary among the valid candidates of the ranking or None, invalid entries)."""
    gold = record.components
    assert gold is not None
    if prediction is None or not prediction.ranking:
        return None, 0
    allowed = set(candidates(record.component_order(), gold.target))
    kept: list[str] = []
    invalid = 0
    for cid in prediction.ranking:
        if cid not in allowed:
            invalid += 1
        elif cid not in kept:
            kept.append(cid)
    return (kept.index(gold.primary) + 1 if gold.primary in kept else None), invalid


def set_prf(predicted: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of two id sets with the empty-chain conventions above, as fractions."""
    p, g = set(predicted), set(gold)
    if not p and not g:
        return 1.0, 1.0, 1.0
    if not p or not g:
        return 0.0, 0.0, 0.0
    hit = len(p & g)
    return _prf(hit / len(p), hit / len(g))


def lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, start=1):
            cur = row[j]
            row[j] = prev + 1 if x == y else max(row[j], row[j - 1])
            prev = cur
    return row[-1]


def ordered_prf(predicted: Sequence[str], gold: Sequence[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) over sequences: the longest common subsequence instead of the intersection."""
    if not predicted and not gold:
        return 1.0, 1.0, 1.0
    if not predicted or not gold:
        return 0.0, 0.0, 0.0
    common = lcs(predicted, gold)
    return _prf(common / len(predicted), common / len(gold))


def _prf(precision: float, recall: float) -> tuple[float, float, float]:
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def _mean(values: Sequence[float]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


def _chain_metrics(pairs: Sequence[tuple[list[str], list[str]]]) -> dict[str, object]:
    sets = [set_prf(p, g) for p, g in pairs]
    orders = [ordered_prf(p, g) for p, g in pairs]
    return {
        "n": len(pairs),
        "precision": _mean([s[0] for s in sets]),
        "recall": _mean([s[1] for s in sets]),
        "f1": _mean([s[2] for s in sets]),
        "exact": _mean([float(set(p) == set(g)) for p, g in pairs]),
        "order_precision": _mean([o[0] for o in orders]),
        "order_recall": _mean([o[1] for o in orders]),
        "order_f1": _mean([o[2] for o in orders]),
        "order_exact": _mean([float(list(p) == list(g)) for p, g in pairs]),
    }


def metrics(items: Sequence[tuple[LabelledFailure, Prediction | None]]) -> dict[str, object]:
    ranks = [rank_of(r, p) for r, p in items]
    n = len(items)
    out: dict[str, object] = {
        "n": n,
        "ranked": sum(1 for _, p in items if p is not None and p.ranking),
        "invalid_entries": sum(inv for _, inv in ranks),
        **{f"top{k}": _mean([float(r is not None and r <= k) for r, _ in ranks]) for k in TOP_K},
        "mrr": round(sum(1 / r for r, _ in ranks if r) / n, 4) if n else None,
    }
    for chain in CHAINS:
        pairs = []
        for record, prediction in items:
            gold = record.components
            assert gold is not None
            g = gold.attack_chain if chain == "attack" else gold.execution_chain
            p = (prediction.attack_chain if chain == "attack" else prediction.execution_chain) if prediction else None
            pairs.append((list(p or []), list(g)))
        out[f"{chain}_chain"] = {
            **_chain_metrics(pairs),
            "nonempty_gold": _chain_metrics([pg for pg in pairs if pg[1]]),
        }
    return out


def component_report(records: Sequence[LabelledFailure], predictions: Sequence[Prediction]) -> dict[str, object] | None:
    """Localisation and chain recovery over the records with component gold (None when there are none)."""
    by_id = {p.record_id: p for p in predictions}
    items = [(r, by_id.get(r.id)) for r in records if r.components is not None]
    if not items:
        return None
    report: dict[str, object] = {
        "definitions": "failforge's own (seed system 1 releases no scorer); see docs/COMPONENTS.md",
        "overall": metrics(items),
    }
    for axis, key in (("source", lambda r: r.source), ("target_type", lambda r: r.components.target_type)):
        groups: dict[str, list[tuple[LabelledFailure, Prediction | None]]] = {}
        for record, prediction in items:
            groups.setdefault(key(record), []).append((record, prediction))
        report[f"by_{axis}"] = {name: metrics(group) for name, group in sorted(groups.items())}
    per = report["by_source"]
    assert isinstance(per, dict)
    report["macro_source"] = _macro(per)
    return report


def _macro(groups: dict[str, dict[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key in (*(f"top{k}" for k in TOP_K), "mrr"):
        values = [float(g[key]) for g in groups.values() if g.get(key) is not None]  # type: ignore[arg-type]
        out[key] = round(sum(values) / len(values), 4 if key == "mrr" else 2) if values else None
    for chain in CHAINS:
        for key in ("f1", "exact", "order_f1"):
            values = [float(g[f"{chain}_chain"][key]) for g in groups.values() if g[f"{chain}_chain"][key] is not None]  # type: ignore[index]
            out[f"{chain}_{key}"] = round(sum(values) / len(values), 2) if values else None
    out["groups"] = len(groups)
    return out
