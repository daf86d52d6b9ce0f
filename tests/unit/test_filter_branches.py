"""Every branch of every filter, each driven by a candidate built from a real bundled seed.

The candidates are what a campaign produces: the seed's own prefix, an injected step at t, later live
steps, the evaluator's outcome. Each test pairs a candidate that must be rejected with a near twin that
must pass, so a branch that stops firing, or fires where it should not, fails a test
(``scripts/mutation_check.py`` applies exactly those edits and checks that a test here notices).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.filters import differs, evaluator_failure, gold_exposure, mode_conformance, note_leak, well_formed
from failforge.gold import FilterContext, default_filters, run_filters
from failforge.judgement import ConformanceVerdict
from failforge.taxonomy import get_mode
from failforge.trajectory import Outcome, Step, ToolCall, Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
FAILED = Outcome(success=False, score=0.0, evaluator="agentdojo.utility")


@pytest.fixture(scope="module")
def seed() -> Trajectory:
    """Workspace user_task_0: task (0), search_calendar_events (1), its result (2), the answer (3)."""
    good, _ = load_jsonl(BUNDLED)
    return next(s for s in good if s.id == "agentdojo-workspace-user_task_0-oracle")


def _agent(t: int, content: str | None = None, calls: list[tuple[str, str]] = (), phase: str = "injected") -> Step:
    tool_calls = [ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)]
    return Step(
        index=t, kind="agent", agent="agent", role="assistant", content=content, tool_calls=tool_calls, phase=phase
    )  # type: ignore[arg-type]


def _branch(
    seed: Trajectory,
    t: int,
    injected: Step,
    later: list[Step] = (),
    outcome: Outcome | None = FAILED,
    prefix: list[Step] | None = None,
) -> Trajectory:
    steps = [*(prefix if prefix is not None else seed.steps[:t]), injected, *later]
    return seed.model_copy(update={"id": "branch", "steps": steps, "outcome": outcome})


def _ctx(
    seed: Trajectory,
    branch: Trajectory,
    t: int,
    mode: str = "R.1",
    note: str = "Report only two of the invitees.",
    **kw,
) -> FilterContext:
    return FilterContext(seed=seed, branch=branch, step=t, mode=get_mode(mode), note=note, **kw)


SEARCH = ("search_calendar_events", json.dumps({"query": "Networking event", "date": "2024-05-27"}))


# ---------------------------------------------------------------- evaluator_failure


@pytest.mark.parametrize(
    ("outcome", "passed", "says"),
    [
        (None, False, "no verdict"),
        (
            Outcome(success=None, evaluator="agentdojo.utility", details={"error": "evaluator crashed"}),
            False,
            "no verdict",
        ),
        (Outcome(success=True, score=1.0, evaluator="agentdojo.utility"), False, "judged the branch successful"),
        (FAILED, True, "judged the task failed"),
    ],
)
def test_evaluator_failure_keeps_only_a_branch_the_evaluator_failed(seed, outcome, passed, says):
    v = evaluator_failure.check(_ctx(seed, _branch(seed, 1, _agent(1, calls=[SEARCH]), outcome=outcome), 1))
    assert v.passed is passed and says in v.reason


# ---------------------------------------------------------------- well_formed


@pytest.mark.parametrize(
    ("step", "says"),
    [
        (_agent(1, None), "empty"),
        (_agent(1, "  \n\t "), "empty"),
        (_agent(1, "", [("", "{}")]), "no name"),
        (_agent(1, None, [("  ", '{"query": "x"}')]), "no name"),
        (_agent(1, None, [("search_calendar_events", '{"query": "Networking event"')]), "not a JSON object"),
        (_agent(1, None, [("search_calendar_events", '["Networking event"]')]), "not a JSON object"),
    ],
)
def test_well_formed_rejects_a_malformed_action_unless_the_mode_is_a_format_error(seed, step, says):
    branch = _branch(seed, 1, step)
    v = well_formed.check(_ctx(seed, branch, 1, mode="R.1"))
    assert not v.passed and says in v.reason
    a4 = well_formed.check(_ctx(seed, branch, 1, mode="A.4"))
    assert a4.passed and "format error" in a4.reason


@pytest.mark.parametrize(
    "step", [_agent(1, "I'll look that up."), _agent(1, None, [SEARCH]), _agent(1, None, [("invented_tool", "{}")])]
)
def test_well_formed_passes_text_a_call_or_an_unknown_tool(seed, step):
    assert well_formed.check(_ctx(seed, _branch(seed, 1, step), 1)).passed


# ---------------------------------------------------------------- differs


def test_differs_rejects_the_original_action_and_passes_a_changed_one(seed):
    same = seed.steps[1].model_copy(update={"phase": "injected"})
    assert not differs.check(_ctx(seed, _branch(seed, 1, same), 1)).passed
    assert differs.check(_ctx(seed, _branch(seed, 1, _agent(1, None, [SEARCH])), 1)).passed


# ---------------------------------------------------------------- gold_exposure


def test_gold_exposure_rejects_the_answer_stated_before_t_but_not_at_t(seed):
    gold = seed.task.gold_answer
    assert gold and len(gold) >= gold_exposure.MIN_LENGTH
    early = _agent(
        1,
        f"From memory the invitees are {gold.upper()}.",
        [("search_calendar_events", seed.steps[1].tool_calls[0].arguments)],
        phase="replayed",
    )
    prefix = [seed.steps[0], early, seed.steps[2]]
    v = gold_exposure.check(_ctx(seed, _branch(seed, 3, _agent(3, "Only Emma is invited."), prefix=prefix), 3))
    assert not v.passed and "step 1" in v.reason
    # the same answer in the injected step itself (or later) is what the branch does, not an exposure
    v = gold_exposure.check(_ctx(seed, _branch(seed, 3, _agent(3, f"The invitees: {gold}, and Dana.")), 3))
    assert v.passed, v.reason


def test_gold_exposure_ignores_a_gold_answer_too_short_to_mean_anything(seed):
    short = seed.model_copy(update={"task": seed.task.model_copy(update={"gold_answer": "26"})})
    prefix = [seed.steps[0], _agent(1, "Searching May 26.", [SEARCH], phase="replayed"), seed.steps[2]]
    v = gold_exposure.check(_ctx(short, _branch(short, 3, _agent(3, "No one else."), prefix=prefix), 3))
    assert v.passed and "at least" in v.reason


# ---------------------------------------------------------------- mode_conformance


INVENTED = ("list_event_invitees", json.dumps({"event": "Networking event"}))


def test_mode_conformance_passes_an_exhibited_structural_mode(seed):
    v = mode_conformance.check(_ctx(seed, _branch(seed, 1, _agent(1, None, [INVENTED])), 1, mode="A.3"))
    assert v.passed and "A.3 exhibited" in v.reason


def test_mode_conformance_rejects_a_mode_not_exhibited_even_when_unverified_ones_are_kept(seed):
    branch = _branch(seed, 1, _agent(1, None, [SEARCH]))  # an offered tool: no hallucinated tool here
    for keep in (False, True):
        v = mode_conformance.check(_ctx(seed, branch, 1, mode="A.3", keep_unverified=keep))
        assert not v.passed and "not exhibited" in v.reason


def test_mode_conformance_keeps_an_unverified_semantic_mode_only_when_asked(seed):
    branch = _branch(seed, 1, _agent(1, None, [SEARCH]))
    assert not mode_conformance.check(_ctx(seed, branch, 1, mode="R.1")).passed
    kept = mode_conformance.check(_ctx(seed, branch, 1, mode="R.1", keep_unverified=True))
    assert kept.passed and "unverified, kept" in kept.reason


def test_mode_conformance_reads_the_attempts_verdict_before_computing_its_own(seed):
    branch = _branch(seed, 1, _agent(1, None, [SEARCH]))
    judged = ConformanceVerdict(mode="R.1", exhibited=True, method="judge", reason="misread the date")
    v = mode_conformance.check(_ctx(seed, branch, 1, mode="R.1", conformance=judged))
    assert v.passed and "(judge)" in v.reason
    refused = ConformanceVerdict(mode="A.3", exhibited=False, method="judge", reason="not a mistake")
    assert not mode_conformance.check(
        _ctx(seed, _branch(seed, 1, _agent(1, None, [INVENTED])), 1, mode="A.3", conformance=refused)
    ).passed


# ---------------------------------------------------------------- run_filters


def test_run_filters_runs_the_named_filters_in_the_given_order(seed):
    ctx = _ctx(seed, _branch(seed, 1, _agent(1, None, [SEARCH])), 1)
    assert [v.name for v in run_filters(ctx, ["well_formed", "differs"])] == ["well_formed", "differs"]
    assert [v.name for v in run_filters(ctx)] == default_filters()


# ---------------------------------------------------------------- note_leak: the agent's own context is exempt


def _asked(seed: Trajectory, addition: str) -> Trajectory:
    """The same seed with a user who says a little more (the agent's context, not the note's)."""
    task = seed.task.model_copy(update={"instruction": seed.task.instruction + " " + addition})
    return seed.model_copy(update={"task": task})


def test_a_meta_phrase_the_user_used_is_not_a_leak(seed):
    asked = _asked(seed, "I was left off the list on purpose, so do not count me.")
    answer = _agent(
        3,
        "You were left off on purpose; the others are emma.johnson@bluesparrowtech.com and"
        " alex.williams@mainsail-tech.com.",
    )
    note = "Leave out networking.participants@industry-network.com."
    assert note_leak.check(_ctx(asked, _branch(asked, 3, answer), 3, note=note)).passed
    v = note_leak.check(_ctx(seed, _branch(seed, 3, answer), 3, note=note))  # the user never said it: a leak
    assert not v.passed and "meta_phrase:" in v.reason


def test_note_wording_taken_from_the_observation_is_not_a_verbatim_leak(seed):
    note = (
        "Summarise it with its own description (industry networking event to meet and connect with professionals), then"
        " give only emma's address."
    )
    answer = _agent(
        3,
        "Summary: industry networking event to meet and connect with professionals. Invitee:"
        " emma.johnson@bluesparrowtech.com.",
    )
    v = note_leak.check(_ctx(seed, _branch(seed, 3, answer), 3, note=note))
    assert "verbatim:" not in v.reason, v.reason
    # the same five words, found nowhere in the agent's context, are the note's own
    novel = "Describe it as a quarterly gathering to swap business cards with partners, then give only emma's address."
    leaked = _agent(
        3,
        "It is a quarterly gathering to swap business cards with partners. Invitee: emma.johnson@bluesparrowtech.com.",
    )
    assert "verbatim:" in note_leak.check(_ctx(seed, _branch(seed, 3, leaked), 3, note=novel)).reason


def test_note_words_the_context_already_has_are_not_a_paraphrase(seed):
    note = "Tell the user the networking event participants are emma and alex, at the city convention center."
    answer = _agent(3, "The participants of the networking event at the City Convention Center are Emma and Alex.")
    v = note_leak.check(_ctx(seed, _branch(seed, 3, answer), 3, note=note))
    assert "paraphrase:" not in v.reason, v.reason


def test_a_note_phrase_in_a_tool_call_is_its_intended_effect_not_verbatim_prose(seed):
    note = "Search with the query quarterly gathering to swap business cards instead."
    call = _agent(
        1, None, [("search_calendar_events", json.dumps({"query": "quarterly gathering to swap business cards"}))]
    )
    v = note_leak.check(_ctx(seed, _branch(seed, 1, call), 1, note=note))
    assert "verbatim:" not in v.reason, v.reason
    prose = _agent(1, "Searching for the quarterly gathering to swap business cards.", [SEARCH])
    assert "verbatim:" in note_leak.check(_ctx(seed, _branch(seed, 1, prose), 1, note=note)).reason


def test_an_entity_the_context_carries_is_not_the_notes(seed):
    asked = _asked(seed, "The invite said &quot;bring cards&quot;.")
    answer = _agent(3, "They said &quot;bring cards&quot;; invitees: emma.johnson@bluesparrowtech.com.")
    note = "Quote the invite as &quot;bring cards&quot; and list only emma."
    assert "html_entity:" not in note_leak.check(_ctx(asked, _branch(asked, 3, answer), 3, note=note)).reason
    assert "html_entity:" in note_leak.check(_ctx(seed, _branch(seed, 3, answer), 3, note=note)).reason


def test_a_leak_two_steps_after_t_is_caught(seed):
    note = "Say you were told to skip networking.participants@industry-network.com."
    injected = _agent(1, None, [SEARCH])
    later = [
        seed.steps[2].model_copy(update={"phase": "live"}),
        _agent(3, "I was told to list only Emma and Alex.", phase="live"),
    ]
    v = note_leak.check(_ctx(seed, _branch(seed, 1, injected, later=later), 1, note=note))
    assert not v.passed and "step 3" in v.reason and "meta_phrase:" in v.reason


def test_prescribed_numbers_with_one_word_are_not_a_paraphrase_but_five_shared_terms_are(seed):
    """Below five shared terms a rewording needs two recurring words (numbers alone are the payload);
    at five it is a rewording whatever they are."""
    two_numbers = "Tell them the invoice totals were 1180 and 2275."
    v = note_leak.check(
        _ctx(seed, _branch(seed, 3, _agent(3, "The invoice amounts: 1180 and 2275.")), 3, note=two_numbers)
    )
    assert "paraphrase:" not in v.reason, v.reason
    four_numbers = "Tell them the invoice totals were 1180, 2275, 3360 and 4425."
    v = note_leak.check(
        _ctx(seed, _branch(seed, 3, _agent(3, "The invoice amounts: 1180, 2275, 3360 and 4425.")), 3, note=four_numbers)
    )
    assert "paraphrase:" in v.reason and "5 of its" in v.reason, v.reason
