"""Mode conformance: every deterministic check and every branch of the mode_conformance filter.

Candidates are built from the bundled AgentDojo seeds (real recorded requests, real tool schemas) by
replacing step t with the step under test. Each check has a case it must accept and a case it must
reject; and each rejection test is shown able to fail: with the check replaced by a permissive one
(monkeypatch), the same oracle no longer sees the rejection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.filters import mode_conformance
from failforge.gold import FilterContext, default_filters
from failforge.judgement import STRUCTURAL_CHECKS, STRUCTURAL_MODES, _checks, deterministic_verdict, on_task
from failforge.taxonomy import get_mode
from failforge.trajectory import Outcome, Step, ToolCall, Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="module")
def seeds() -> dict[str, Trajectory]:
    good, bad = load_jsonl(BUNDLED)
    assert not bad
    return {s.id: s for s in good}


def _candidate(
    seed: Trajectory, t: int, content: str | None = None, calls: list[tuple[str, object]] = ()
) -> Trajectory:
    """The seed replayed to t, then the given step (arguments: a dict is JSON-encoded, a str is kept raw)."""
    tool_calls = [
        ToolCall(id=f"c{i}", name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(calls)
    ]
    step = Step(
        index=t,
        kind="agent",
        agent=seed.steps[t].agent,
        role="assistant",
        content=content,
        tool_calls=tool_calls,
        phase="injected",
    )
    return seed.model_copy(
        update={
            "id": "branch",
            "steps": [*seed.steps[:t], step],
            "outcome": Outcome(success=False, evaluator="test"),
            "parent_id": seed.id,
        }
    )


def _verdict(seed: Trajectory, branch: Trajectory, t: int, mode: str):  # type: ignore[no-untyped-def]
    return deterministic_verdict(seed, branch.steps[t], t, mode)


def _rejected(seed: Trajectory, branch: Trajectory, t: int, mode: str) -> bool:
    """The oracle: the mode_conformance filter rejects this candidate as not exhibiting its mode."""
    v = mode_conformance.check(FilterContext(seed=seed, branch=branch, step=t, mode=get_mode(mode), note="n"))
    return not v.passed and "not exhibited" in v.reason


BANKING3 = "agentdojo-banking-user_task_3-oracle"  # 1 get_most_recent_transactions(n=100); 3 send_money(...); 5 "Done."
WORKSPACE0 = "agentdojo-workspace-user_task_0-oracle"  # 1 search_calendar_events(query, date); 3 answer with e-mails
BANKING1 = "agentdojo-banking-user_task_1-oracle"  # 3 "Your total spending in March 2022 was £1,050."
SEND = {"recipient": "GB29NWBK60161331926819", "amount": 4.0, "subject": "Refund", "date": "2022-04-01"}

# (mode, seed, t, conformant step, non-conformant step); a step is (content, calls)
CASES = [
    (
        "A.2",
        BANKING3,
        3,
        (None, [("send_money", {**SEND, "recipient": "US122000000121212121212"})]),
        (None, [("send_money", dict(SEND))]),
    ),
    ("A.3", BANKING3, 3, (None, [("send_refund", dict(SEND))]), (None, [("send_money", {**SEND, "amount": 40.0})])),
    (
        "A.4",
        BANKING3,
        3,
        (None, [("send_money", '{"recipient": "GB29NWBK60161331926819", "amount": 4.0,')]),
        (None, [("send_money", dict(SEND))]),
    ),
    ("A.5", BANKING3, 3, ("I have sent your friend the difference back.", []), (None, [("send_money", dict(SEND))])),
    (
        "A.6",
        BANKING3,
        3,
        (None, [("get_most_recent_transactions", {"n": 100})]),
        (None, [("get_most_recent_transactions", {"n": 50})]),
    ),
    (
        "R.3",
        BANKING3,
        3,
        (None, [("send_money", {**SEND, "amount": 3.0})]),
        (None, [("send_money", {**SEND, "recipient": "US122000000121212121212"})]),
    ),
]


def test_every_structural_mode_has_a_check():
    assert set(STRUCTURAL_MODES) == set(STRUCTURAL_CHECKS) == {"A.2", "A.3", "A.4", "A.5", "A.6", "R.3"}


def test_mode_conformance_is_a_default_filter_run_last():
    assert default_filters()[-1] == "mode_conformance"


@pytest.mark.parametrize("mode,seed_id,t,good,bad", CASES, ids=[c[0] for c in CASES])
def test_structural_check_accepts_the_mode_and_rejects_its_absence(seeds, mode, seed_id, t, good, bad):
    seed = seeds[seed_id]
    yes = _verdict(seed, _candidate(seed, t, *good), t, mode)
    assert yes.exhibited is True and yes.method == "deterministic", yes.reason
    no = _verdict(seed, _candidate(seed, t, *bad), t, mode)
    assert no.exhibited is False and no.method == "deterministic", no.reason
    assert _rejected(seed, _candidate(seed, t, *bad), t, mode)
    assert not _rejected(seed, _candidate(seed, t, *good), t, mode)


@pytest.mark.parametrize("mode,seed_id,t,good,bad", CASES, ids=[c[0] for c in CASES])
def test_disabling_a_structural_check_is_noticed(seeds, monkeypatch, mode, seed_id, t, good, bad):
    seed = seeds[seed_id]
    branch = _candidate(seed, t, *bad)
    assert _rejected(seed, branch, t, mode)
    monkeypatch.setitem(STRUCTURAL_CHECKS, mode, lambda *_: (True, "check disabled"))
    assert not _rejected(seed, branch, t, mode)


def test_a2_reasons_name_the_changed_argument(seeds):
    seed = seeds[BANKING3]
    v = _verdict(
        seed, _candidate(seed, 3, None, [("send_money", {**SEND, "recipient": "US122000000121212121212"})]), 3, "A.2"
    )
    assert "recipient" in v.reason and "US122000000121212121212" in v.reason
    # case and spacing only, or 4 vs 4.0, is not a changed value
    same = _candidate(seed, 3, None, [("send_money", {**SEND, "subject": " refund ", "amount": 4})])
    assert _verdict(seed, same, 3, "A.2").exhibited is False
    # another tool altogether is not A.2 either
    assert _verdict(seed, _candidate(seed, 3, None, [("get_balance", {})]), 3, "A.2").exhibited is False
    assert _verdict(seed, _candidate(seed, 3, "Sure.", []), 3, "A.2").exhibited is False


def test_a4_covers_schema_violations_and_calls_written_as_text(seeds):
    seed = seeds[BANKING3]
    missing = _candidate(seed, 3, None, [("send_money", {"recipient": "GB29NWBK60161331926819"})])
    assert "missing" in _verdict(seed, missing, 3, "A.4").reason
    wrong_type = _candidate(seed, 3, None, [("send_money", {**SEND, "amount": "four"})])
    assert "wrong type" in _verdict(seed, wrong_type, 3, "A.4").reason
    as_text = _candidate(seed, 3, 'send_money(recipient="GB29NWBK60161331926819", amount=4.0)', [])
    v = _verdict(seed, as_text, 3, "A.4")
    assert v.exhibited and "as text" in v.reason
    assert _verdict(seed, _candidate(seed, 3, "I sent the money back.", []), 3, "A.4").exhibited is False


def test_a5_needs_work_left_in_the_seed(seeds):
    seed = seeds[BANKING3]
    assert "empty" in _verdict(seed, _candidate(seed, 3, "   ", []), 3, "A.5").reason
    # at the final step nothing is left: an answer there is not premature
    final = _verdict(seed, _candidate(seed, 5, "All done.", []), 5, "A.5")
    assert final.exhibited is False and "no tool call from step t" in final.reason


def test_an_answer_must_be_made_of_the_tasks_words(seeds, monkeypatch):
    seed = seeds[BANKING3]
    cake = _candidate(
        seed, 3, "This is a special kind of cake. You can't eat it without singing, and the cake has 42 pies.", []
    )
    v = _verdict(seed, cake, 3, "A.5")
    assert v.exhibited is False and "not an answer to this task" in v.reason
    assert _verdict(seed, _candidate(seed, 3, "Done.", []), 3, "A.5").exhibited is True
    assert (
        _verdict(
            seed, _candidate(seed, 3, "Your friend sent 16.0, so nothing needs to be sent back.", []), 3, "A.5"
        ).exhibited
        is True
    )
    assert (
        _verdict(
            seed, _candidate(seed, 3, "Nothing needs to be done; the task is already complete.", []), 3, "A.5"
        ).exhibited
        is True
    )
    assert (
        _verdict(
            seed, _candidate(seed, 3, "I have finished the task and everything is in order.", []), 3, "A.5"
        ).exhibited
        is True
    )
    travel = seeds["agentdojo-travel-user_task_0-oracle"]  # a_t at 5 is the bare answer "4.2"
    cake_r3 = _verdict(
        travel, _candidate(travel, 5, "This is a special kind of cake. The cake has 42 pies.", []), 5, "R.3"
    )
    assert cake_r3.exhibited is False and "not an answer to this task" in cake_r3.reason
    assert _verdict(travel, _candidate(travel, 5, "The rating is 42.", []), 5, "R.3").exhibited is True
    assert _rejected(seed, cake, 3, "A.5")
    monkeypatch.setattr(_checks, "GROUNDED_MIN", 0.0)  # the oracle notices when grounding is switched off
    assert not _rejected(seed, cake, 3, "A.5")


def test_a6_needs_an_earlier_call_and_accepts_a_repeated_answer(seeds):
    seed = seeds[BANKING3]
    first = _verdict(seed, _candidate(seed, 1, None, [("get_most_recent_transactions", {"n": 100})]), 1, "A.6")
    assert first.exhibited is False and "no tool call before" in first.reason
    spaced = _candidate(seed, 3, None, [("get_most_recent_transactions", {"n": 100.0})])
    assert _verdict(seed, spaced, 3, "A.6").exhibited is True


def test_r3_needs_a_number_in_a_t_and_a_changed_one_in_the_same_place(seeds):
    travel = seeds["agentdojo-travel-user_task_0-oracle"]
    none = _verdict(travel, _candidate(travel, 1, "It costs 12 euros.", []), 1, "R.3")
    assert none.exhibited is False and "uses no number" in none.reason
    seed = seeds[BANKING1]
    answer = _verdict(seed, _candidate(seed, 3, "Your total spending in March 2022 was £1,150.", []), 3, "R.3")
    assert answer.exhibited is True and "1150" in answer.reason
    unrelated = _verdict(seed, _candidate(seed, 3, "I'm sorry for the 24 hour delay, please ask again.", []), 3, "R.3")
    assert unrelated.exhibited is False and "not within a factor of ten" in unrelated.reason
    bare = _verdict(seed, _candidate(seed, 3, "1005.", []), 3, "R.3")  # the demo's answer to "total spending?"
    assert bare.exhibited is True and "1005 where a_t gave 1050" in bare.reason
    dated = seed.model_copy(deep=True)  # an answer that is a date and time, as in workspace/user_task_14
    dated.steps[3].content = "2024-06-10 13:00"
    assert _verdict(dated, _candidate(dated, 3, "2024-06-11 13:00", []), 3, "R.3").exhibited is True
    lost = _verdict(dated, _candidate(dated, 3, "The figure is 2023.", []), 3, "R.3")
    assert lost.exhibited is False and "loses most of a_t's numbers" in lost.reason
    date_slip = _candidate(seeds[BANKING3], 3, None, [("send_money", {**SEND, "date": "2022-04-02"})])
    assert _verdict(seeds[BANKING3], date_slip, 3, "R.3").exhibited is True


def test_semantic_modes_off_task_rejected_on_task_unverified(seeds, monkeypatch):
    seed = seeds[WORKSPACE0]
    off = _candidate(seed, 1, "As a language model I enjoy poems about autumn leaves.", [])
    v = _verdict(seed, off, 1, "R.2")
    assert v.exhibited is False and "not a mistake at this task" in v.reason
    assert _rejected(seed, off, 1, "R.2")
    monkeypatch.setattr(_checks, "on_task", lambda *_: (True, "precondition disabled"))
    assert not _rejected(seed, off, 1, "R.2")  # the oracle notices the precondition is gone
    monkeypatch.undo()
    on = _candidate(seed, 1, None, [("search_calendar_events", {"query": "Networking event", "date": "2024-05-27"})])
    u = _verdict(seed, on, 1, "R.4")
    assert u.exhibited is None and u.method == "unverified"
    assert on_task(seed, on.steps[1], 1)[0]


def test_filter_branches_exhibited_not_exhibited_unverified(seeds):
    seed = seeds[WORKSPACE0]
    on = _candidate(seed, 1, None, [("search_calendar_events", {"query": "Networking event", "date": "2024-05-27"})])
    ctx = FilterContext(seed=seed, branch=on, step=1, mode=get_mode("R.4"), note="n")
    unverified = mode_conformance.check(ctx)
    assert not unverified.passed and "unverified" in unverified.reason and "judge = true" in unverified.reason
    kept = mode_conformance.check(
        FilterContext(seed=seed, branch=on, step=1, mode=get_mode("R.4"), note="n", keep_unverified=True)
    )
    assert kept.passed and "keep_unverified" in kept.reason
    a2 = mode_conformance.check(FilterContext(seed=seed, branch=on, step=1, mode=get_mode("A.2"), note="n"))
    assert a2.passed and "A.2 exhibited (deterministic)" in a2.reason


def test_filter_uses_the_attempts_verdict_when_given(seeds):
    from failforge.judgement import ConformanceVerdict

    seed = seeds[WORKSPACE0]
    on = _candidate(seed, 1, None, [("search_calendar_events", {"query": "Networking event", "date": "2024-05-27"})])
    judged = ConformanceVerdict(mode="R.4", exhibited=False, method="judge", reason="judge m: it does not")
    v = mode_conformance.check(
        FilterContext(seed=seed, branch=on, step=1, mode=get_mode("R.4"), note="n", conformance=judged)
    )
    assert not v.passed and "(judge)" in v.reason
