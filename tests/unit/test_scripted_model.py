"""The public scripted-model base: failforge's own calls told apart by their system prompts (the protocol of
docs/SCRIPTED_MODELS.md), the agent's turn left to the subclass."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from failforge.injection import GUIDE_SYSTEM, NOTE_PREFIX
from failforge.judgement import parse_decision, parse_judgement
from failforge.testing import LoopbackModelServer, NoScriptedAnswer
from failforge.testing.scripted import NOTES, ScriptedModel, slipped


class Transfer(ScriptedModel):
    """One's own policy: always sends 10 to the same account."""

    def act(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        args = json.dumps({"recipient": "GB29", "amount": 10})
        return None, [{"id": "call_0", "type": "function", "function": {"name": "send_money", "arguments": args}}]


def _body(*messages: tuple[str, str]) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": r, "content": c} for r, c in messages]}


def test_the_agents_turn_is_the_subclass_and_a_note_slips_its_first_figure() -> None:
    model = Transfer()
    content, calls = model("agent", _body(("user", "pay the bill")))
    assert content is None and calls is not None and json.loads(calls[0]["function"]["arguments"])["amount"] == 10
    _, steered = model("agent", _body(("user", "pay the bill"), ("system", NOTE_PREFIX + NOTES["R.3"])))
    assert steered is not None and json.loads(steered[0]["function"]["arguments"])["amount"] == 11
    assert model("agent", _body(("user", "pay"), ("system", NOTE_PREFIX + NOTES["A.5"]))) == (model.stop_text, None)
    assert slipped(("figure 3 and 4", None)) == ("figure 3 and 4", None)  # plain text has no instruction to slip


def test_guide_and_judges_answer_in_the_formats_failforge_reads() -> None:
    model = Transfer()
    note, _ = model(
        None,
        _body(
            ("system", GUIDE_SYSTEM), ("user", "Acting at step 3: banker\nError mode A.5 (Premature termination): ...")
        ),
    )
    assert note == f"{NOTES['A.5']} Do it as banker."
    other, _ = model(None, _body(("system", GUIDE_SYSTEM), ("user", "Error mode V.9 (unknown): ...")))
    assert other == NOTES["R.3"]
    prompt = (
        'What a correct run did next:\n[3] a calls send_money({"amount": 10})\n\n'
        'What the agent actually did next:\n[3] a calls send_money({"amount": 11})\n\nError mode R.3 ...'
    )
    verdict, _ = model(None, _body(("system", "You check the labels of a dataset"), ("user", prompt)))
    assert parse_judgement(verdict or "")[0] is True
    decision, _ = model(
        None,
        _body(
            ("system", "You label the control decision an AI agent made"),
            (
                "user",
                (
                    "Task: t\n\nThe step to label:\n[5] planner says: Plan: pay the bill first\n\nWhich control state"
                    " is this step?"
                ),
            ),
        ),
    )
    assert parse_decision(decision or "") == ("act", "Plan: pay the bill first")


def test_a_model_without_an_agent_turn_says_what_to_write() -> None:
    with pytest.raises(NotImplementedError, match="act"):
        ScriptedModel()("agent", _body(("user", "hi")))


class OneAccount(Transfer):
    """One's own policy that knows one request only: anything else is a request it has no answer for."""

    def act(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        said = str(body["messages"][-1]["content"])
        if said == "pay the bill":
            return super().act(agent, body)
        if said == "crash":
            raise KeyError("amount")
        raise NoScriptedAnswer(f"it scripts 'pay the bill' only, not {said!r}")


def test_a_request_the_policy_cannot_answer_gets_a_json_http_error_naming_policy_and_request() -> None:
    with LoopbackModelServer(agent_policy=OneAccount(), name="one-account") as server, httpx.Client() as client:
        url = f"{server.base_url}/chat/completions"
        unknown = client.post(url, json=_body(("user", "buy a boat")), headers={"X-Failforge-Agent": "banker"})
        assert unknown.status_code == 422
        error = unknown.json()["error"]
        assert error["type"] == "no_scripted_answer" and error["policy"] == "one-account"
        assert error["message"] == (
            "scripted model 'one-account' has no answer for agent 'banker''s request with 1 message, the last (user)"
            " 'buy a boat': it scripts 'pay the bill' only, not 'buy a boat'"
        )
        broken = client.post(url, json=_body(("system", "s"), ("user", "crash")))
        assert broken.status_code == 500 and broken.json()["error"]["type"] == "scripted_policy_error"
        assert "'one-account' failed on a caller that named no agent's request with 2 messages" in broken.text
        assert "KeyError" in broken.text and "\n" not in broken.json()["error"]["message"]
        not_json = client.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
        assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
        # the same keep-alive connection still answers what the policy knows
        paid = client.post(url, json=_body(("user", "pay the bill")))
        assert paid.status_code == 200 and paid.json()["choices"][0]["message"]["tool_calls"]
