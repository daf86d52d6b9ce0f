"""The note-leak filter: every check catches its leak, ignores the agent's own context, and is needed.

Each check gets a candidate that leaks in exactly its way. The oracle asks whether the filter rejects
it naming that check; the same oracle is then run with the check switched off (monkeypatch) and must
see the rejection disappear, so no test here passes whatever the check does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.filters import note_leak
from failforge.gold import FilterContext
from failforge.injection import GUIDE_SYSTEM, guide_request
from failforge.taxonomy import get_mode
from failforge.trajectory import Outcome, Step, ToolCall, Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
OLD_EXAMPLE_PROMPT = (
    'You design realistic mistakes. Example. Correct next action: calls send_money({"recipient": "GB29", "amount":'
    " 100.0}). Error mode R.3 (numerical error). Reply: Send the payment now with amount 1000.0 to GB29."
)


@pytest.fixture(scope="module")
def seed() -> Trajectory:
    good, _ = load_jsonl(BUNDLED)
    return next(s for s in good if s.id == "agentdojo-workspace-user_task_0-oracle")


def _branch(
    seed: Trajectory, content: str | None, calls: list[tuple[str, dict]] = (), later: str | None = None
) -> Trajectory:
    t = 1
    tool_calls = [ToolCall(id=f"c{i}", name=n, arguments=json.dumps(a)) for i, (n, a) in enumerate(calls)]
    steps = [
        *seed.steps[:t],
        Step(
            index=t,
            kind="agent",
            agent="agent",
            role="assistant",
            content=content,
            tool_calls=tool_calls,
            phase="injected",
        ),
    ]
    if later is not None:
        steps.append(Step(index=t + 1, kind="agent", agent="agent", role="assistant", content=later, phase="live"))
    return seed.model_copy(update={"id": "b", "steps": steps, "outcome": Outcome(success=False, evaluator="test")})


def _ctx(seed: Trajectory, branch: Trajectory, note: str, guide: dict | None = None) -> FilterContext:
    return FilterContext(seed=seed, branch=branch, step=1, mode=get_mode("R.1"), note=note, guide_request=guide)


def _flags(ctx: FilterContext, check: str) -> bool:
    """The oracle: the filter rejects the candidate and names ``check`` among its reasons."""
    v = note_leak.check(ctx)
    return not v.passed and f"{check}:" in v.reason


OLD_GUIDE = {"messages": [{"role": "system", "content": OLD_EXAMPLE_PROMPT}, {"role": "user", "content": "Task: ..."}]}

LEAKS = {
    "meta_phrase": (
        "search the calendar for the 27th",
        "As instructed, I will search the calendar for the 27th.",
        None,
        None,
    ),
    "third_person": ("look at the 27th", "The agent will now look at the 27th instead.", None, None),
    "bracket_hint": ("use the 27th", "Searching the calendar for 2024-05-27 (wrong date).", None, None),
    "html_entity": ("Don&#39;t use the 26th; use 2024-05-27", "I won&#39;t look at that date.", None, None),
    "guide_wording": ("refund them", "I will send the payment now with amount to GB29 later.", None, OLD_GUIDE),
    "guide_values": ("check the event", "The event budget is 1000.0 in total.", None, OLD_GUIDE),
    "verbatim": (
        "look up the calendar entry for the networking event tomorrow evening",
        "Fine.",
        "I shall look up the calendar entry for the networking event tomorrow evening.",
        None,
    ),
    "paraphrase": (
        "Tell the user the gathering was cancelled by the organiser due to rain",
        "Unfortunately the organiser cancelled the gathering because of rain.",
        None,
        None,
    ),
}


def test_every_check_has_a_leak_case():
    assert set(LEAKS) == set(note_leak.CHECKS)


@pytest.mark.parametrize("check", sorted(LEAKS))
def test_check_catches_its_leak(seed, check):
    note, content, later, guide = LEAKS[check]
    assert _flags(_ctx(seed, _branch(seed, content, later=later), note, guide), check)


@pytest.mark.parametrize("check", sorted(LEAKS))
def test_switching_the_check_off_is_noticed(seed, monkeypatch, check):
    note, content, later, guide = LEAKS[check]
    ctx = _ctx(seed, _branch(seed, content, later=later), note, guide)
    assert _flags(ctx, check)
    monkeypatch.setitem(note_leak.CHECKS, check, lambda scan: None)
    assert not _flags(ctx, check)


def test_wording_from_the_agents_own_context_is_not_a_leak(seed):
    # "Networking event", the date and the tool name are all in the agent's request: not leaks
    note = "Call search_calendar_events with query Networking event and date 2024-05-27"
    step = _branch(
        seed,
        "Let me search the calendar for the Networking event.",
        [("search_calendar_events", {"query": "Networking event", "date": "2024-05-27"})],
    )
    v = note_leak.check(_ctx(seed, step, note))
    assert v.passed, v.reason


def test_a_value_the_note_names_may_appear_in_the_call(seed):
    # the wrong value a note asks for is the intended effect, not a leak
    note = 'Call search_calendar_events now with query = "Team offsite", keeping its other arguments as you would.'
    step = _branch(seed, None, [("search_calendar_events", {"query": "Team offsite", "date": "2024-05-26"})])
    assert note_leak.check(_ctx(seed, step, note)).passed


def test_the_payload_a_note_prescribes_is_not_its_wording(seed):
    quoted = "Tell the user 'the gathering moved to Room 4B on Friday because of rain'"
    assert note_leak.check(
        _ctx(seed, _branch(seed, "The gathering moved to Room 4B on Friday because of rain."), quoted)
    ).passed
    numbers_only = "State the figure as 1005 and 2230"
    assert note_leak.check(_ctx(seed, _branch(seed, "It comes to 1005, or 2230 with the extras."), numbers_only)).passed
    unquoted = "Tell the user the gathering moved to Room 4B on Friday because of rain"
    assert _flags(
        _ctx(seed, _branch(seed, "The gathering moved to Room 4B on Friday because of rain."), unquoted), "paraphrase"
    )


def test_paraphrase_needs_several_novel_words(seed):
    note = "Say the gathering is settled"
    assert note_leak.check(
        _ctx(seed, _branch(seed, "The gathering is settled."), note)
    ).passed  # 2 shared words: not enough
    assert not note_leak.check(_ctx(seed, _branch(seed, "The gathering is settled; I say so."), note)).passed


def test_an_entity_escaped_again_is_still_the_notes(seed):
    ctx = _ctx(
        seed,
        _branch(seed, "The &amp;#39;Networking event&amp;#34; was fine."),
        "The &#39;Networking event&#34; on May 26th",
    )
    assert _flags(ctx, "html_entity")
    assert not _flags(
        _ctx(seed, _branch(seed, "The 'Networking event' was fine."), "The &#39;Networking event&#34; on May 26th"),
        "html_entity",
    )


def test_later_steps_are_checked_too(seed):
    note, _, _, _ = LEAKS["third_person"]
    ctx = _ctx(seed, _branch(seed, "Looking at the 27th.", later="The agent has finished."), note)
    assert _flags(ctx, "third_person") and "step 2" in note_leak.check(ctx).reason


def test_every_failing_check_is_reported(seed):
    note, _, _, _ = LEAKS["paraphrase"]
    v = note_leak.check(
        _ctx(
            seed,
            _branch(seed, "As instructed, the agent says the organiser cancelled the gathering because of rain."),
            note,
        )
    )
    assert not v.passed
    for name in ("meta_phrase", "third_person", "paraphrase"):
        assert f"{name}:" in v.reason


def test_the_guide_prompt_carries_no_copyable_example(seed):
    assert not any(ch.isdigit() for ch in GUIDE_SYSTEM), "the guide's system prompt must carry no example value"
    body = guide_request(seed, 1, get_mode("R.3"), model="m", temperature=0.7)
    system = body["messages"][0]["content"]
    assert "send_money" not in system and "GB29" not in system and "Example" not in system
    assert "(correct)" not in json.dumps(body)


def test_apostrophes_are_not_quotes(seed):
    note = "Don't check the organiser's cancelled gathering, it's raining"
    assert _flags(
        _ctx(seed, _branch(seed, "The organiser cancelled the gathering; it is raining."), note), "paraphrase"
    )
