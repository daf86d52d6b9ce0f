"""The realism probe: can a cheap detector tell injected steps from the seeds' own steps?

For every candidate the probe takes the injected step ã_t and the seed's natural step a_t at the same
position, describes each by surface features (length, tool calls, digits, pronouns, apologies, ...),
and fits an L2-regularised logistic regression. Its cross-validated ROC AUC says how easy the
injection is to spot from the surface alone: 0.5 means indistinguishable (good), 1.0 means a
detector that never misses (the dataset teaches "find the odd-looking step", not "find the error").
Folds are grouped by seed so a seed's natural step never sits in both the training and the test
fold. With few examples the AUC is noise; the result always says how many examples it saw.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from failforge.trajectory import Step, Trajectory

FEATURES: tuple[str, ...] = (
    "log_chars",
    "has_text",
    "n_tool_calls",
    "log_arg_chars",
    "n_arg_keys",
    "digit_ratio",
    "upper_ratio",
    "mean_word_len",
    "type_token_ratio",
    "log_sentences",
    "newlines",
    "first_person",
    "second_person",
    "apology_or_hedge",
    "questions",
    "third_person_agent",
)

_WORD = re.compile(r"[A-Za-z']+")
_HEDGE = {
    "sorry",
    "apologize",
    "apologise",
    "unfortunately",
    "however",
    "cannot",
    "can't",
    "unable",
    "perhaps",
    "maybe",
}
MIN_PER_CLASS = 5


def step_features(step: Step) -> list[float]:
    text = step.content or ""
    tokens = _WORD.findall(text.lower())
    n = max(len(tokens), 1)
    args = "".join(c.arguments for c in step.tool_calls)
    keys = sum(len(c.parsed_arguments() or {}) for c in step.tool_calls)
    letters = [ch for ch in text if ch.isalpha()]
    return [
        math.log1p(len(text)),
        float(bool(text.strip())),
        float(len(step.tool_calls)),
        math.log1p(len(args)),
        float(keys),
        sum(ch.isdigit() for ch in text) / max(len(text), 1),
        sum(ch.isupper() for ch in letters) / max(len(letters), 1),
        sum(len(w) for w in tokens) / n,
        len(set(tokens)) / n,
        math.log1p(len(re.findall(r"[.!?](\s|$)", text))),
        float(text.count("\n")),
        sum(w in {"i", "i'm", "me", "my", "i'll", "i've"} for w in tokens) / n,
        sum(w in {"you", "your", "you're", "yours"} for w in tokens) / n,
        sum(w in _HEDGE for w in tokens) / n,
        float(text.count("?")),
        float(bool(re.search(r"\bthe (ai )?(agent|assistant)\b", text.lower()))),
    ]


@dataclass
class RealismResult:
    auc: float | None
    n_injected: int
    n_natural: int
    n_groups: int
    folds: int
    note: str
    weights: dict[str, float] = field(default_factory=dict)

    @property
    def n_examples(self) -> int:
        return self.n_injected + self.n_natural

    def describe(self) -> str:
        seen = f"{self.n_examples} steps ({self.n_injected} injected, {self.n_natural} natural, {self.n_groups} seeds)"
        if self.auc is None:
            return f"not computed: {self.note} [{seen}]"
        return f"AUC {self.auc:.2f} over {seen}, {self.folds}-fold cross-validation grouped by seed"

    def to_dict(self) -> dict[str, object]:
        return {
            "auc": self.auc,
            "n_injected": self.n_injected,
            "n_natural": self.n_natural,
            "n_groups": self.n_groups,
            "folds": self.folds,
            "note": self.note,
            "weights": self.weights,
        }


def realism_examples(pairs: Iterable[tuple[str, int, Step, Step]]) -> tuple[list[list[float]], list[int], list[str]]:
    """Features, labels (1 = injected) and groups (seed id) from ``(seed_id, t, a_t, ã_t)`` tuples.

    A seed's natural step at t is counted once however many candidates branched there, so the
    natural class is not inflated by repeats of the same step.
    """
    xs: list[list[float]] = []
    ys: list[int] = []
    groups: list[str] = []
    natural_seen: set[tuple[str, int]] = set()
    for seed_id, t, natural, injected in pairs:
        if injected.kind != "agent" or natural.kind != "agent":
            continue
        xs.append(step_features(injected))
        ys.append(1)
        groups.append(seed_id)
        if (seed_id, t) not in natural_seen:
            natural_seen.add((seed_id, t))
            xs.append(step_features(natural))
            ys.append(0)
            groups.append(seed_id)
    return xs, ys, groups


def auc_score(labels: Sequence[int], scores: Sequence[float]) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) statistic; ties count one half."""
    pos = [s for s, y in zip(scores, labels, strict=False) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=False) if y == 0]
    if not pos or not neg:
        raise ValueError("AUC needs both classes")
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def _fit(x, y, l2: float):  # type: ignore[no-untyped-def]
    """Logistic regression by Newton's method with an L2 penalty (intercept unpenalised)."""
    import numpy as np

    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        grad = xb.T @ (p - y) + penalty * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def _standardise(train, test):  # type: ignore[no-untyped-def]
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std[std == 0] = 1.0
    return (train - mean) / std, (test - mean) / std


def fold_assignment(groups: Sequence[str], k: int) -> list[int]:
    """Fold of each example: whole groups (seeds) go round-robin into k folds, in sorted order."""
    fold_of = {g: i % k for i, g in enumerate(sorted(set(groups)))}
    return [fold_of[g] for g in groups]


def realism_probe(
    xs: list[list[float]], ys: list[int], groups: list[str], *, folds: int = 5, l2: float = 1.0
) -> RealismResult:
    """Cross-validated AUC of a logistic regression telling injected (1) from natural (0) steps."""
    n_inj, n_nat = sum(ys), len(ys) - sum(ys)
    distinct = sorted(set(groups))
    k = min(folds, len(distinct))
    if n_inj < MIN_PER_CLASS or n_nat < MIN_PER_CLASS:
        return RealismResult(None, n_inj, n_nat, len(distinct), 0, f"fewer than {MIN_PER_CLASS} examples in a class")
    if k < 2:
        return RealismResult(
            None,
            n_inj,
            n_nat,
            len(distinct),
            0,
            "all examples come from one seed; no grouped cross-validation possible",
        )
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy comes with the local model and AgentDojo extras
        return RealismResult(None, n_inj, n_nat, len(distinct), 0, "numpy is not installed")
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    assignment = np.asarray(fold_assignment(groups, k))
    scores = np.zeros(len(ys))
    for fold in range(k):
        test = assignment == fold
        train = ~test
        if len(set(y[train].tolist())) < 2:
            return RealismResult(
                None, n_inj, n_nat, len(distinct), k, f"a training fold has only one class (fold {fold})"
            )
        xtr, xte = _standardise(x[train], x[test])
        w = _fit(xtr, y[train], l2)
        scores[test] = np.hstack([xte, np.ones((xte.shape[0], 1))]) @ w
    xall, _ = _standardise(x, x)
    w_all = _fit(xall, y, l2)
    weights = {name: round(float(v), 3) for name, v in zip(FEATURES, w_all[:-1], strict=False)}
    return RealismResult(auc_score(ys, scores.tolist()), n_inj, n_nat, len(distinct), k, "ok", weights)


def realism_of(pairs: Iterable[tuple[str, int, Step, Step]], *, folds: int = 5) -> RealismResult:
    xs, ys, groups = realism_examples(pairs)
    return realism_probe(xs, ys, groups, folds=folds)


def branch_pairs(seed: Trajectory, branch: Trajectory, t: int) -> tuple[str, int, Step, Step] | None:
    """The probe's view of one candidate, or None when either step at t is missing."""
    if not (0 < t < len(seed.steps)) or t >= len(branch.steps):
        return None
    return seed.id, t, seed.steps[t], branch.steps[t]
