"""Chains from the component-level likelihood baselines: the threshold rule, the position split, the chain
checker, and chain recovery in ``failforge score``, on hand-built records with a stub scorer (the llama.cpp
scorer itself is tested in tests/integration/test_components_likelihood.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from failforge.attribution import _run
from failforge.attribution._component_metrics import component_report
from failforge.attribution._components import ComponentLabel, check_label
from failforge.attribution._likelihood import CHAIN_TAU, derive_chains, target_and_candidates
from failforge.attribution._methods import MethodContext, methods
from failforge.attribution._predictions import load_predictions
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import FailureStep, Gold, LabelledFailure, Origin, TaskInfo, ToolCallRecord
from failforge.attribution._run import AttributeConfig, run_attribution

KINDS = ("system", "user", "tool", "agent", "agent", "agent")  # the last one is the target (an unsafe call)


def _record(
    rid: str = "r",
    *,
    ids: Sequence[str] = ("C0", "C1", "C2", "C3", "C4", "C5"),
    primary: str = "C2",
    attack: Sequence[str] = (),
    execution: Sequence[str] = (),
    with_components: bool = True,
) -> LabelledFailure:
    steps = []
    for i, (kind, cid) in enumerate(zip(KINDS, ids, strict=True)):
        agent = {"system": "system", "user": "user", "tool": "read_inbox"}.get(kind, "assistant")
        calls = [ToolCallRecord(name="send_money", arguments='{"to": "attacker"}')] if i == len(KINDS) - 1 else []
        steps.append(
            FailureStep(
                index=i,
                kind=kind,
                agent=agent,
                content=f"step {i}",
                tool_calls=calls,  # type: ignore[arg-type]
                component=cid if with_components else None,
            )
        )
    label = ComponentLabel(
        target_type="unsafe_action",
        target=ids[-1],
        primary=primary,
        attack_chain=list(attack),
        execution_chain=list(execution),
    )
    at = list(ids).index(primary)
    return LabelledFailure(
        id=rid,
        source="hand",
        framework="hand",
        topology="single",
        agents=["assistant"],
        task=TaskInfo(question="Pay my bill."),
        steps=steps,
        gold=Gold(agent=steps[at].agent, step=at, step_label=str(at)),
        origin=Origin(format="hand", path="hand", step_convention="hand"),
        components=label if with_components else None,
    )


class StubScorer:
    """Fixed contributions per record id: ``incremental`` returns ``inc``, ``leave_one_out`` returns ``loo``."""

    def __init__(self, inc: dict[str, list[float]], loo: dict[str, list[float]] | None = None) -> None:
        self.inc, self.loo = inc, loo or {}
        self.closed = False

    def incremental(self, record: LabelledFailure) -> tuple[list[int], list[float]]:
        return target_and_candidates(record)[0], self.inc[record.id]

    def leave_one_out(self, record: LabelledFailure) -> tuple[list[int], list[float]]:
        return target_and_candidates(record)[0], self.loo[record.id]

    def close(self) -> None:
        self.closed = True


def _predict(method: str, record: LabelledFailure, scorer: StubScorer):  # type: ignore[no-untyped-def]
    return methods.get(method)().predict(MethodContext(record=record, prompt=PromptConfig(), seed=0, scorer=scorer))


def _chains_obey_the_rules(record: LabelledFailure, out) -> None:  # type: ignore[no-untyped-def]
    assert record.components is not None
    check_label(
        record.component_order(),
        ComponentLabel(
            target_type="unsafe_action",
            target=record.components.target,
            primary=out.ranking[0],
            attack_chain=out.attack_chain,
            execution_chain=out.execution_chain,
        ),
    )


def test_threshold_and_position_split_by_hand() -> None:
    """Candidates C0..C4 (target C5), c = [1.5, -0.5, 2.0, 1.0, 0.75]. Primary C2 (2.0); tau = 0.5 keeps
    c > 0 and c >= 1.0: C0 (1.5) and C3 (1.0, on the boundary); C4 (0.75) and C1 (negative) are out. C0 lies
    before the primary -> attack [C0]; C3 after it -> execution [C3]. Ranking C2 C0 C3 C4 C1."""
    record = _record()
    out = _predict("incremental", record, StubScorer({"r": [1.5, -0.5, 2.0, 1.0, 0.75]}))
    assert out.ranking == ["C2", "C0", "C3", "C4", "C1"] and out.step == 2 and out.agent == "read_inbox"
    assert (out.attack_chain, out.execution_chain, out.chain_threshold) == (
        ["C0"],
        ["C3"],
        CHAIN_TAU,
    ) and CHAIN_TAU == 0.5
    _chains_obey_the_rules(record, out)
    # tau = 0: every positive contribution joins (C4 too); tau = 1: only ties with the primary, none here.
    assert derive_chains(["C0", "C1", "C2", "C3", "C4"], [1.5, -0.5, 2.0, 1.0, 0.75], 0.0)[1:] == (["C0"], ["C3", "C4"])
    assert derive_chains(["C0", "C1", "C2", "C3", "C4"], [1.5, -0.5, 2.0, 1.0, 0.75], 1.0)[1:] == ([], [])


def test_leave_one_out_reads_its_own_scores_and_the_rule_is_scale_free() -> None:
    """The same contributions divided by 8 (a per-token mean) give the same chains: the rule is a ratio."""
    record = _record()
    out = _predict(
        "leave-one-out", record, StubScorer({"r": [0.0] * 5}, {"r": [1.5 / 8, -0.5 / 8, 2.0 / 8, 1.0 / 8, 0.75 / 8]})
    )
    assert (out.ranking[0], out.attack_chain, out.execution_chain) == ("C2", ["C0"], ["C3"])  # type: ignore[index]


def test_ties_the_earliest_is_primary_and_an_equal_later_one_joins_the_execution_chain() -> None:
    """c = [1.0, 2.0, 2.0, 0.0, 1.0]: C1 and C2 tie at 2.0, the earlier C1 is primary; C2 (2.0 >= 1.0) is kept
    after it; C0 (1.0, boundary) before it; C3 (0: not > 0) is out; C4 (1.0) is kept. Attack [C0], execution
    [C2, C4] in position order; ranking C1 C2 C0 C4 C3 (ties earliest first)."""
    record = _record()
    out = _predict("incremental", record, StubScorer({"r": [1.0, 2.0, 2.0, 0.0, 1.0]}))
    assert out.ranking == ["C1", "C2", "C0", "C4", "C3"] and out.step == 1
    assert (out.attack_chain, out.execution_chain) == (["C0"], ["C2", "C4"])
    _chains_obey_the_rules(record, out)


@pytest.mark.parametrize("scores", [[-0.2, -0.4, -0.1, -0.3, -0.5], [0.0] * 5])
def test_no_positive_contribution_gives_empty_chains_but_still_a_ranking(scores: list[float]) -> None:
    out = _predict("incremental", _record(), StubScorer({"r": scores}))
    assert out.ranking is not None and len(out.ranking) == 5 and out.ranking[0] == ("C2" if scores[0] else "C0")
    assert (out.attack_chain, out.execution_chain, out.chain_threshold) == ([], [], 0.5)


def test_a_primary_right_before_the_target_has_no_execution_chain() -> None:
    """c = [0.0, 0.25, 0.5, 0.5, 1.0]: primary C4, the last candidate; nothing lies between it and the target
    C5, so the execution chain is empty; kept C2 and C3 (0.5 >= 0.5) form the attack chain."""
    record = _record()
    out = _predict("incremental", record, StubScorer({"r": [0.0, 0.25, 0.5, 0.5, 1.0]}))
    assert (out.ranking[0], out.attack_chain, out.execution_chain) == ("C4", ["C2", "C3"], [])  # type: ignore[index]
    _chains_obey_the_rules(record, out)


def test_chains_follow_list_position_not_the_id_number() -> None:
    """Ids C9 C10 C2 C4 C3 | C1 (target), c = [2.0, 0.0, 3.0, 2.0, 1.5]: primary C2 at position 2; kept
    (c >= 1.5) C9 before it and C4, C3 after it. By id number C9 would fall after C2 and C3 before C4: the
    chains are [C9] and [C4, C3], in list position order."""
    ids = ("C9", "C10", "C2", "C4", "C3", "C1")
    record = _record(ids=ids, primary="C2")
    out = _predict("incremental", record, StubScorer({"r": [2.0, 0.0, 3.0, 2.0, 1.5]}))
    assert (out.attack_chain, out.execution_chain) == (["C9"], ["C4", "C3"])
    _chains_obey_the_rules(record, out)


def test_derive_chains_refuses_mismatched_input_and_a_threshold_outside_0_1() -> None:
    with pytest.raises(ValueError, match="2 candidates but 1 scores"):
        derive_chains(["C0", "C1"], [1.0])
    with pytest.raises(ValueError, match=r"tau must be in \[0, 1\]"):
        derive_chains(["C0"], [1.0], 1.5)
    assert derive_chains([], []) == ([], [], [])


def test_step_level_records_are_unchanged() -> None:
    """No component gold: the target is the last step, candidates the non-system steps before it; argmax step,
    and no ranking, no chains, no threshold."""
    record = _record(with_components=False)
    out = _predict("incremental", record, StubScorer({"r": [5.0, 1.0, 3.0, 2.0]}))
    assert (out.step, out.ranking, out.attack_chain, out.execution_chain, out.chain_threshold) == (
        1,
        None,
        None,
        None,
        None,
    )


def test_score_reports_chain_recovery_for_the_likelihood_methods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three records (candidates C0..C4, target C5, gold primary C2), run end to end (run_attribution with the
    stub in place of the llama.cpp scorer) and scored.

    ====  ==============================  ====================  ================================  ====
    rec   c                               gold attack / exec    predicted primary, attack / exec  rank
    ====  ==============================  ====================  ================================  ====
    a     1.5 -1 2 1 0.75                 [C1] / [C3 C4]        C2, [C0] / [C3]                   1
    b     -0.2 -0.4 -0.1 -0.3 -0.5        []  / [C3]            C2, [] / []                       1
    c     0 0.25 0.5 0.5 1                [] / []               C4, [C2 C3] / []                  2
    ====  ==============================  ====================  ================================  ====

    Record a's gold attack chain is [C0] (so: hit). Per record, attack (P, R, F1): a (1, 1, 1); b both empty
    (1, 1, 1); c [C2 C3] vs [] (0, 0, 0) -> P = R = F1 = exact = 2/3 = 66.67; non-empty gold: a only, 100.
    Execution: a [C3] vs [C3 C4] (1, 1/2, 2/3); b [] vs [C3] (0, 0, 0); c both empty (1, 1, 1) -> P = 2/3 =
    66.67, R = 1.5/3 = 50, F1 = (2/3 + 1)/3 = 55.56, exact = 1/3 = 33.33; non-empty gold (a, b): P 50, R 25,
    F1 33.33. Localisation: top-1 = 2/3 = 66.67, MRR = (1 + 1 + 1/2)/3 = 0.8333.
    """
    records = [_record("a", attack=["C0"], execution=["C3", "C4"]), _record("b", execution=["C3"]), _record("c")]
    stub = StubScorer(
        {"a": [1.5, -1.0, 2.0, 1.0, 0.75], "b": [-0.2, -0.4, -0.1, -0.3, -0.5], "c": [0.0, 0.25, 0.5, 0.5, 1.0]}
    )
    monkeypatch.setattr(_run, "_scorer", lambda config: stub)
    summary = run_attribution(records, AttributeConfig(method="incremental"), tmp_path / "run")
    assert (summary.predicted, summary.failed, stub.closed) == (3, 0, True)
    predictions, bad = load_predictions(tmp_path / "run" / "predictions.jsonl")
    assert not bad
    got = {p.record_id: (p.attack_chain, p.execution_chain, p.chain_threshold) for p in predictions}
    assert got == {"a": (["C0"], ["C3"], 0.5), "b": ([], [], 0.5), "c": (["C2", "C3"], [], 0.5)}
    report = component_report(records, predictions)
    assert report is not None
    overall = report["overall"]
    assert (overall["top1"], overall["mrr"]) == (66.67, 0.8333)
    at, ex = overall["attack_chain"], overall["execution_chain"]
    assert (at["precision"], at["recall"], at["f1"], at["exact"]) == (66.67, 66.67, 66.67, 66.67)
    assert (at["nonempty_gold"]["n"], at["nonempty_gold"]["f1"]) == (1, 100.0)
    assert (ex["precision"], ex["recall"], ex["f1"], ex["exact"]) == (66.67, 50.0, 55.56, 33.33)
    ne = ex["nonempty_gold"]
    assert (ne["n"], ne["precision"], ne["recall"], ne["f1"]) == (2, 50.0, 25.0, 33.33)
