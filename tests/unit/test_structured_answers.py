"""Structured answers: the endpoint's mechanism probed once, the schema's request forms, the fallback to free
text, and free-text replies read by their last complete answer block (self-revising judges)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from failforge.attribution import summarise
from failforge.attribution._answers import StepCheckAnswer, all_at_once_answer
from failforge.attribution._auditor import reply_fields as auditor_fields
from failforge.attribution._judge import JudgeSession
from failforge.attribution._parse import parse_all_at_once, yes_no
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._rcta import FINAL_FIELDS
from failforge.attribution._rcta import reply_fields as rcta_fields
from failforge.attribution._record import LabelledFailure
from failforge.errors import ModelUnavailable
from failforge.llm._structured import (
    last_complete_block,
    mechanism_of_requests,
    probe_structured,
    read_structured,
    response_format,
)
from failforge.plugins import importers


class _Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: Literal["yes", "no"]
    why: str = Field(max_length=20)


def _response(text: str) -> dict[str, Any]:
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


class _Endpoint:
    """A loopback stand-in, a pure function of the request: honours ``honours`` (constraining the answer
    to the schema's first enum value), refuses ``refuses`` with HTTP 422, ignores anything else."""

    def __init__(self, base_url: str, honours: str | None, refuses: tuple[str, ...] = ()) -> None:
        self.base_url, self.name, self.model = base_url, f"loop:{base_url}", None
        self.honours, self.refuses = honours, refuses
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        kind = (body.get("response_format") or {}).get("type")
        if kind in self.refuses:
            raise ModelUnavailable(f"model endpoint refused the request with HTTP 422: response_format.type {kind!r}")
        if kind is not None and kind == self.honours:
            fmt = body["response_format"]
            schema = fmt["schema"] if kind == "json_object" else fmt["json_schema"]["schema"]
            return _response(
                json.dumps({k: v["enum"][0] if "enum" in v else "ok" for k, v in schema["properties"].items()})
            )
        return _response("Hello there! How can I help you today?")


@pytest.mark.parametrize(
    ("honours", "refuses", "expected"),
    [
        ("json_schema", (), "json_schema"),
        (
            "json_object",
            ("json_schema",),
            "json_object",
        ),  # llama-cpp-python: 422 on json_schema, a grammar for json_object
        (None, (), "none"),  # ignores the field: answers the sentence it was asked for
        (None, ("json_schema", "json_object"), "none"),
    ],
)
def test_the_probe_finds_the_mechanism_the_endpoint_honours(
    honours: str | None, refuses: tuple[str, ...], expected: str
) -> None:
    endpoint = _Endpoint(f"http://probe-{honours}-{len(refuses)}.test/v1", honours, refuses)
    support = probe_structured(endpoint, "m")
    assert support.mechanism == expected, support.detail
    asked = len(endpoint.bodies)
    assert probe_structured(endpoint, "m") is support and len(endpoint.bodies) == asked  # once per endpoint and model
    probe_structured(endpoint, "other-model")
    assert len(endpoint.bodies) > asked


def test_request_forms_keep_bounds_for_the_grammar_and_drop_them_for_strict_mode() -> None:
    grammar = response_format(_Pick, "json_object")
    assert (
        grammar is not None
        and grammar["type"] == "json_object"
        and grammar["schema"]["properties"]["why"]["maxLength"] == 20
    )
    strict = response_format(_Pick, "json_schema")
    assert strict is not None and strict["json_schema"]["strict"] is True
    schema = strict["json_schema"]["schema"]
    assert "maxLength" not in schema["properties"]["why"] and schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["answer", "why"]
    assert response_format(_Pick, "none") is None


def test_a_reply_is_read_as_the_schema_or_not_at_all() -> None:
    assert read_structured('{"answer": "no", "why": "x"}', _Pick) == _Pick(answer="no", why="x")
    assert read_structured('text\n```json\n{"answer": "yes", "why": "y"}\n```', _Pick) == _Pick(answer="yes", why="y")
    assert read_structured('{"answer": "maybe", "why": "x"}', _Pick) is None
    assert read_structured("Agent Name: a", _Pick) is None


SELF_REVISING = """Agent Name: WebSurfer
Step Number: 3
Error Mode: R.1
Reason for Mistake: it invented a number.

Wait, let me reconsider. Step 3 only relays what Assistant said at step 2.

Agent Name: Assistant
Step Number: 2
Error Mode: R.3
Reason for Mistake: the sum is wrong.
"""


def test_a_self_revising_all_at_once_reply_is_read_by_its_last_complete_answer() -> None:
    parsed = parse_all_at_once(SELF_REVISING, menu=True)
    assert (parsed.agent, parsed.step, parsed.mode) == ("Assistant", 2, "R.3") and not parsed.problems
    # a trailing partial block is no answer: the last complete one stands
    partial = SELF_REVISING + "\nWait, again.\nAgent Name: Orchestrator\n"
    assert (parse_all_at_once(partial, menu=True).agent, parse_all_at_once(partial, menu=True).step) == ("Assistant", 2)
    # one answer reads as before
    single = parse_all_at_once(SELF_REVISING.split("Wait")[0], menu=True)
    assert (single.agent, single.step, single.mode) == ("WebSurfer", 3, "R.1")


def test_rcta_and_the_auditor_read_a_revised_answer_too() -> None:
    rcta = (
        "Role: A\nStep: 4\nHandoff: none\nMode: R.1\nReason: r\nHmm, no.\nRole: B\nStep: 6\nHandoff: none\nMode:"
        " C.2\nReason: s"
    )
    assert rcta_fields(rcta, FINAL_FIELDS)["Role"] == "B" and rcta_fields(rcta, FINAL_FIELDS)["Step"] == "6"
    audit = 'Decision: 1 | act | "x" | 0.5\nAgent: A\nStep: 1\nMode: R.1\nActually:\nAgent: B\nStep: 2\nMode: R.2'
    found, lines = auditor_fields(audit)
    assert (found["Agent"], found["Step"], found["Mode"]) == ("B", "2", "R.2") and lines == ['1 | act | "x" | 0.5']


def test_last_complete_block_without_a_complete_block_keeps_first_values() -> None:
    pairs = [("A", "1"), ("B", "2"), ("A", "3")]
    assert last_complete_block(pairs, ("A", "B")) == {"A": "1", "B": "2"}
    assert last_complete_block(pairs, ("A", "C")) == {"A": "1", "B": "2"}
    assert last_complete_block(pairs, ()) == {"A": "1", "B": "2"}


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution" / "who_and_when" / "Algorithm-Generated"


@functools.cache
def _record() -> LabelledFailure:
    records, _ = summarise(importers.get("whowhen")(FIXTURES))
    return records[0]


def test_the_all_at_once_schema_admits_the_steps_and_agents_shown_and_the_18_codes() -> None:
    record = _record()
    schema = all_at_once_answer(record, PromptConfig()).model_json_schema()
    props = schema["properties"]
    assert props["Step Number"]["enum"] == record.candidate_steps()
    assert set(props["Agent Name"]["enum"]) == {record.steps[i].agent for i in record.candidate_steps()}
    assert len(props["Error Mode"]["enum"]) == 18 and props["Reason for Mistake"]["maxLength"] == 200
    free = all_at_once_answer(_record(), PromptConfig(menu=False)).model_json_schema()["properties"]
    assert "Error Description" in free and "Error Mode" not in free


def test_a_judge_session_asks_with_the_mechanism_renders_the_answer_and_replays_it_at_zero_tokens() -> None:
    endpoint = _Endpoint("http://judge.test/v1", "json_object")
    live = JudgeSession("s1", "m", upstream=endpoint, structured="json_object")
    reply = live.ask([{"role": "user", "content": "Is step 2 wrong?"}], schema=StepCheckAnswer)
    assert reply.startswith("Answer: Yes") and yes_no(reply) is True and live.valid_structured == 1
    sent = endpoint.bodies[-1]["response_format"]
    assert sent["type"] == "json_object" and sent["schema"]["properties"]["Answer"]["enum"] == ["Yes", "No"]
    assert mechanism_of_requests([s.model_call.request for s in live.log.steps if s.model_call]) == "json_object"
    replay = JudgeSession("s1", "m", upstream=None, recorded=live.log.steps, structured="json_object")
    assert (
        replay.ask([{"role": "user", "content": "Is step 2 wrong?"}], schema=StepCheckAnswer) == reply
        and replay.live_calls == 0
    )
    # without a mechanism the same call asks free text, and a reply that is no JSON is handed over as written
    plain = JudgeSession("s2", "m", upstream=endpoint)
    assert plain.ask([{"role": "user", "content": "Is step 2 wrong?"}], schema=StepCheckAnswer).startswith("Hello")
    assert "response_format" not in endpoint.bodies[-1]


def test_a_likelihood_prediction_never_names_a_tool_output() -> None:
    from failforge.attribution._likelihood import _outcome

    record = next(r for r in _all_records() if any(s.kind == "tool" for s in r.steps[:-1]))
    candidates = [i for i in record.candidate_steps() if i != len(record.steps) - 1]
    tool = next(i for i in candidates if record.steps[i].kind == "tool")
    scores = [10.0 if i == tool else float(k) / 100 for k, i in enumerate(candidates)]  # the tool output scores highest
    outcome = _outcome(record, candidates, scores)
    assert outcome.step != tool and record.steps[outcome.step].kind != "tool" and outcome.agent != "Computer_terminal"
    assert outcome.step_scores is not None and outcome.step_scores[tool] == 10.0  # still scored, only not nameable


@functools.cache
def _all_records() -> list[LabelledFailure]:
    records, _ = summarise(importers.get("whowhen")(FIXTURES))
    return records
