"""The scripted DA-Bench analyst is a pure function of the request: its question by the first user message's text,
its reply by the turn the request is at, and an error naming the request when the question is not one it plays."""

from __future__ import annotations

import pytest

from failforge.environments.dabench import analyst_responses, instruction_for, question, resolve_dir
from failforge.testing import NoScriptedAnswer
from failforge.testing.analyst_policy import AnalystPolicy


def _request(task: str, turns: int) -> dict[str, object]:
    messages: list[dict[str, str]] = [{"role": "system", "content": "You are an expert assistant ..."}]
    messages.append({"role": "user", "content": "New task:\n" + instruction_for(question(resolve_dir(None), task))})
    for n in range(turns):
        messages += [{"role": "assistant", "content": f"step {n}"}, {"role": "user", "content": "Observation: ..."}]
    return {"model": "any", "messages": messages}


def test_the_reply_follows_the_turn_and_the_last_one_repeats() -> None:
    policy = AnalystPolicy(["dabench-18"])
    want = analyst_responses(question(resolve_dir(None), "dabench-18"))
    assert [policy(_request("dabench-18", n))[0] for n in range(6)] == [*want, want[-1], want[-1]]
    assert policy(_request("dabench-18", 2)) == policy(_request("dabench-18", 2))


def test_a_question_it_does_not_play_is_an_error_naming_the_request() -> None:
    with pytest.raises(NoScriptedAnswer, match="names none of them"):
        AnalystPolicy(["dabench-18"])(_request("dabench-19", 0))  # the next question of the shipped subset
