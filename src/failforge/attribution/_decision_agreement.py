"""How far the trajectory auditor's control-decision map agrees with failforge's rule-based states.

Both label every agent step with one of the AgentAtlas states (act, ask, refuse, stop, confirm, recover):
the auditor by a judge's reading (:class:`failforge.attribution._audit.AuditDecision`), failforge by rules
on the step's form (:func:`failforge.judgement.decisions`), which leave a step ``undecided`` where its
form does not decide. Neither is gold: this is agreement between two labellers, not a score, so it is
kept out of ``failforge score`` (which scores predictions against gold).

Counted over the agent steps the rules saw, per step:

- the rules decided and the auditor gave a valid decision: the step enters the confusion table
  (rows: the rules' state, columns: the auditor's), the overall agreement and Cohen's kappa;
- the rules left it undecided: counted apart, with the auditor's states on those steps (what a judge
  would add where the rules are silent);
- the auditor gave no (valid) decision for it: counted apart.

Cohen's kappa is ``(p_o - p_e) / (1 - p_e)``, with ``p_o`` the share of steps on the diagonal and
``p_e = sum_s (rules_s / n) * (auditor_s / n)``; None when ``p_e`` is 1 (both labellers used one state
only, where kappa is undefined). Per state: the specific agreement ``2 n_ss / (rules_s + auditor_s)``
(positive agreement, symmetric in the two labellers) and the auditor's share of the rules' steps of
that state ``n_ss / rules_s``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from failforge.attribution._audit import AuditDecision
from failforge.judgement import Decision

__all__ = ["STATES", "DecisionAgreement", "StateAgreement", "agreement", "compare_decisions", "kappa"]

STATES: tuple[str, ...] = ("act", "ask", "refuse", "stop", "confirm", "recover")


class StateAgreement(BaseModel):
    rules: int = Field(description="steps the rules gave this state (among steps both decided)")
    auditor: int = Field(description="steps the auditor gave this state (among steps both decided)")
    both: int = Field(description="steps both gave this state")
    specific_agreement: float | None = Field(
        description="2 * both / (rules + auditor); None when neither used the state"
    )
    auditor_given_rules: float | None = Field(description="both / rules; None when the rules never used the state")


class DecisionAgreement(BaseModel):
    records: int = 0
    steps: int = Field(default=0, description="agent steps the rules labelled (decided or not)")
    both_decided: int = 0
    agreed: int = 0
    agreement: float | None = Field(default=None, description="agreed / both_decided")
    kappa: float | None = None
    per_state: dict[str, StateAgreement] = Field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="rules' state -> auditor's state -> steps (both decided)"
    )
    rules_undecided: int = 0
    auditor_on_undecided: dict[str, int] = Field(
        default_factory=dict, description="the auditor's states on the steps the rules left undecided"
    )
    auditor_missing: int = Field(
        default=0, description="steps the rules decided and the auditor gave no valid decision for"
    )
    auditor_extra: int = Field(
        default=0, description="auditor decisions on steps the rules do not label (not agent steps)"
    )


def kappa(confusion: dict[str, dict[str, int]]) -> float | None:
    """Cohen's kappa of a square table of counts (rows one labeller, columns the other); None if undefined."""
    labels = sorted({*confusion, *(c for row in confusion.values() for c in row)})
    n = sum(v for row in confusion.values() for v in row.values())
    if n == 0:
        return None
    observed = sum(confusion.get(s, {}).get(s, 0) for s in labels) / n
    rows = {s: sum(confusion.get(s, {}).values()) for s in labels}
    cols = {s: sum(row.get(s, 0) for row in confusion.values()) for s in labels}
    expected = sum(rows[s] * cols[s] for s in labels) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def agreement(
    pairs: Iterable[tuple[str, str | None]], *, records: int = 0, auditor_extra: int = 0
) -> DecisionAgreement:
    """The report over ``(rules' state, auditor's state or None)`` pairs, one per rule-labelled agent step."""
    confusion: dict[str, Counter[str]] = {}
    undecided: Counter[str] = Counter()
    out = DecisionAgreement(records=records, auditor_extra=auditor_extra)
    for rule, audited in pairs:
        out.steps += 1  # each step in exactly one bucket: rules undecided, auditor missing, or both decided
        if rule == "undecided":
            out.rules_undecided += 1
            if audited is not None:
                undecided[audited] += 1
        elif audited is None:
            out.auditor_missing += 1
        else:
            confusion.setdefault(rule, Counter())[audited] += 1
    table = {r: dict(sorted(c.items())) for r, c in sorted(confusion.items())}
    out.confusion = table
    out.auditor_on_undecided = dict(sorted(undecided.items()))
    out.both_decided = sum(sum(c.values()) for c in confusion.values())
    out.agreed = sum(c.get(r, 0) for r, c in confusion.items())
    out.agreement = round(out.agreed / out.both_decided, 4) if out.both_decided else None
    k = kappa(table)
    out.kappa = round(k, 4) if k is not None else None
    for state in STATES:
        rules = sum(table.get(state, {}).values())
        auditor = sum(row.get(state, 0) for row in table.values())
        both = table.get(state, {}).get(state, 0)
        out.per_state[state] = StateAgreement(
            rules=rules,
            auditor=auditor,
            both=both,
            specific_agreement=round(2 * both / (rules + auditor), 4) if rules + auditor else None,
            auditor_given_rules=round(both / rules, 4) if rules else None,
        )
    return out


def compare_decisions(items: Iterable[tuple[Sequence[Decision], Sequence[AuditDecision] | None]]) -> DecisionAgreement:
    """Agreement over records, each given as (the rules' decisions, the auditor's decisions or None when the
    record has no audit: all its steps count as missing)."""
    pairs: list[tuple[str, str | None]] = []
    extra = 0
    n = 0
    for rules, audited in items:
        n += 1
        by_step: dict[int, Any] = {d.step: d.state for d in audited or ()}
        ruled = {d.step for d in rules}
        extra += sum(1 for step in by_step if step not in ruled)
        pairs.extend((d.state, by_step.get(d.step)) for d in rules)
    return agreement(pairs, records=n, auditor_extra=extra)
