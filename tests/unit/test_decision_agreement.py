"""Agreement of the auditor's control decisions with failforge's rule-based states, checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution._audit import AuditDecision
from failforge.attribution._decision_agreement import agreement, compare_decisions, kappa
from failforge.judgement import Decision, decisions
from failforge.trajectory import load_jsonl

GOLD = Path(__file__).resolve().parents[1] / "fixtures" / "attribution" / "failforge_gold.jsonl"


def _pairs() -> list[tuple[str, str | None]]:
    # rules -> auditor, both decided (n = 10):
    #   act->act 4, act->ask 1, ask->ask 2, stop->stop 2, stop->act 1
    # plus 2 steps the rules left undecided (auditor: act, stop) and 1 the auditor gave nothing for (rules: act)
    return (
        [("act", "act")] * 4
        + [("act", "ask")]
        + [("ask", "ask")] * 2
        + [("stop", "stop")] * 2
        + [("stop", "act")]
        + [("undecided", "act"), ("undecided", "stop"), ("act", None)]
    )


def test_kappa_agreement_and_per_state_on_a_table_computed_by_hand() -> None:
    report = agreement(_pairs(), records=3)
    # p_o = (4 + 2 + 2) / 10 = 0.8
    # rows (rules): act 5, ask 2, stop 3; columns (auditor): act 5, ask 3, stop 2
    # p_e = (5*5 + 2*3 + 3*2) / 100 = 37 / 100 = 0.37
    # kappa = (0.8 - 0.37) / (1 - 0.37) = 0.43 / 0.63 = 0.68254 -> 0.6825
    assert (report.steps, report.both_decided, report.agreed, report.agreement, report.kappa) == (
        13,
        10,
        8,
        0.8,
        0.6825,
    )
    assert report.confusion == {"act": {"act": 4, "ask": 1}, "ask": {"ask": 2}, "stop": {"act": 1, "stop": 2}}
    assert (report.rules_undecided, report.auditor_on_undecided, report.auditor_missing) == (
        2,
        {"act": 1, "stop": 1},
        1,
    )
    # ask: specific 2*2 / (2 + 3) = 0.8, auditor given rules 2/2 = 1.0; stop: 2*2 / (3 + 2) = 0.8, 2/3 = 0.6667
    per = report.per_state
    assert (per["ask"].specific_agreement, per["ask"].auditor_given_rules) == (0.8, 1.0)
    assert (
        per["stop"].rules,
        per["stop"].auditor,
        per["stop"].specific_agreement,
        per["stop"].auditor_given_rules,
    ) == (3, 2, 0.8, 0.6667)
    assert (per["act"].specific_agreement, per["refuse"].specific_agreement, per["refuse"].auditor_given_rules) == (
        0.8,
        None,
        None,
    )


def test_kappa_is_undefined_with_one_state_and_zero_at_chance() -> None:
    assert kappa({"act": {"act": 3}}) is None  # p_e = 1
    assert kappa({}) is None
    # rows act 2, ask 2; columns act 2, ask 2; p_o = 2/4 = 0.5, p_e = (4 + 4) / 16 = 0.5 -> kappa 0
    assert kappa({"act": {"act": 1, "ask": 1}, "ask": {"act": 1, "ask": 1}}) == 0.0
    # total disagreement: p_o = 0, p_e = (1*1 + 1*1) / 4 = 0.5 -> kappa -1
    assert kappa({"act": {"ask": 1}, "ask": {"act": 1}}) == -1.0


def _rule(step: int, state: str) -> Decision:
    return Decision(step=step, component=f"c{step}", agent="a", state=state, rule="test")  # type: ignore[arg-type]


def _audit(step: int, state: str) -> AuditDecision:
    return AuditDecision(step=step, state=state, evidence="x", confidence=0.9)  # type: ignore[arg-type]


def test_compare_decisions_pairs_by_step_and_counts_missing_and_extra() -> None:
    records = [
        (
            [_rule(1, "act"), _rule(3, "stop")],
            [_audit(1, "act"), _audit(3, "ask"), _audit(2, "act")],
        ),  # step 2 is no agent step: extra
        (
            [_rule(1, "undecided"), _rule(2, "stop")],
            [_audit(2, "stop")],
        ),  # step 1 undecided by the rules, and no audit for it: missing
        ([_rule(1, "act")], None),  # no audit at all
    ]
    report = compare_decisions(records)
    assert (
        report.records,
        report.steps,
        report.both_decided,
        report.agreed,
        report.auditor_missing,
        report.auditor_extra,
    ) == (3, 5, 3, 2, 1, 1)
    assert report.rules_undecided == 1 and report.auditor_on_undecided == {}
    assert report.steps == report.both_decided + report.rules_undecided + report.auditor_missing  # one bucket per step
    assert report.confusion == {"act": {"act": 1}, "stop": {"ask": 1, "stop": 1}}


def test_the_rules_side_is_failforge_decisions_on_the_gold_trajectory() -> None:
    trajectories, _ = load_jsonl(GOLD)
    two = next(t for t in trajectories if len(decisions(t)) == 2)  # a tool call, then the final answer
    rules = decisions(two)
    assert [d.state for d in rules] == ["act", "stop"]
    # an auditor that calls the final answer a question: one of two agrees; rows act 1, stop 1; columns act 1, ask 1
    # p_o = 0.5, p_e = (1*1 + 1*0 + 0*1) / 4 = 0.25 -> kappa (0.5 - 0.25) / 0.75 = 0.3333
    report = compare_decisions([(rules, [_audit(rules[0].step, "act"), _audit(rules[1].step, "ask")])])
    assert (report.agreement, report.kappa) == (0.5, 0.3333)


@pytest.mark.parametrize("state", ["refuse", "confirm", "recover"])
def test_a_state_only_the_rules_use_has_zero_specific_agreement(state: str) -> None:
    report = agreement([(state, "act"), ("act", "act")])
    assert report.per_state[state].specific_agreement == 0.0 and report.per_state[state].auditor == 0
