"""The auditor's grammar-constrained replies as the embedded model wrote them (SmolLM2-135M, llama-cpp-python's
``json_object`` grammar; recorded by scripts/bench_valid_outputs.py's auditor rows on Who&When
Algorithm-Generated 53 and 45), read back through a real :class:`JudgeSession`.

The grammar fixes the JSON's form but enforces no ``minimum``/``maximum``: one decision's ``"Confidence": 2``
made the whole reply fail the schema, and the reply was then parsed as free text, where JSON has no
``Key: value`` line, so every field was lost (agent, step and mode included) and the record counted invalid.
A reply cut by ``max_tokens`` mid-JSON lost everything the same way."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from failforge.attribution import summarise
from failforge.attribution._answers import auditor_answer
from failforge.attribution._auditor import IMPACTS, SOURCES, STATES, Auditor, decision_steps
from failforge.attribution._judge import JudgeSession
from failforge.attribution._methods import MethodContext
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure
from failforge.llm import answer_tokens
from failforge.plugins import importers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution" / "who_and_when" / "Algorithm-Generated"

#: Record 53's first and retry replies, verbatim: well-formed agent, step and mode, one confidence out of 0..1.
OUT_OF_BOUNDS = (
    '{ "Decision": [{"Step":1,"State":"act", "Quote":"&#34;(quote)&#34;","Confidence":0.5}, {"Step":1,"State":'
    '"confirm", "Quote":"&#34;(quote)","Confidence":2}], "Outcome":1, "Control":1, "Trajectory":1, "Source": '
    '"planning", "Impact": "safety-relevant", "Agent": "Data_Extraction_Expert", "Step":2,"Mode":"A.3","Reason":'
    ' "}\n{  " }',
    '{ "Decision": [{"Step":1,"State":"act","Quote":"&#34;(quote)&amp;#34;", "Confidence":0.5}, {"Step":1,"State":'
    '"confirm","Quote":"&#34;(quote)&amp;#34;" ,"Confidence":2}], "Outcome": 1, "Control": 1, "Trajectory": 1, '
    '"Source": "planning", "Impact": "retry-recoverable", "Agent": "Data_Extraction_Expert", "Step":1, "Mode":"A.3",'
    '"Reason":"&#34;(quote)&amp;#34;,"}',
)
#: Record 45's first reply, verbatim: cut by max_tokens=256 in the fourth decision (finish_reason "length").
CUT_OFF = (
    '{ "Decision": [{"Step":1,"State":"act", "Quote":"A2023-08-24T09:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPED",'
    '"Confidence":0.9},{"Step": 3,"State":"act", "Quote":"A2023-10-24T08:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPED"'
    ',"Confidence":0.9},{"Step": 4,"State":"act", "Quote":"A2023-10-25T08:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPE'
    'D","Confidence":0.9},{"Step": 4,"'
)


@functools.cache
def _records() -> dict[str, LabelledFailure]:
    records, _ = summarise(importers.get("whowhen")(FIXTURES))
    return {r.id.rsplit("/", 1)[-1]: r for r in records}


class _Recorded:
    """The embedded server's recorded replies as a pure function of the request: the n-th reply to a conversation
    holding n-1 assistant turns (the first ask, then the retry). Keeps the bodies it was sent."""

    def __init__(self, *replies: str) -> None:
        self.base_url, self.name, self.model = "http://recorded.test/v1", "recorded", None
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        content = self.replies[turn]
        return {
            "id": f"r{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": "smollm2-135m-instruct",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def _audit(record: LabelledFailure, endpoint: _Recorded) -> Any:
    judge = JudgeSession(f"auditor::{record.id}", "smollm2", upstream=endpoint, structured="json_object")
    return Auditor().predict(MethodContext(record=record, prompt=PromptConfig(), seed=0, judge=judge))


def test_a_confidence_out_of_bounds_costs_that_decision_line_not_the_audit() -> None:
    record = _records()["53"]
    out = _audit(record, _Recorded(*OUT_OF_BOUNDS))
    assert (out.agent, out.step, out.mode) == ("Data_Extraction_Expert", 1, "A.3")  # the retry's, field by field
    assert out.audit is not None and (out.audit.outcome, out.audit.error_source) == (1, "planning")
    # each decision line reached the auditor's own checks as written (which drop it, naming why)
    assert 'Decision: 1 | confirm | "&#34;(quote)&amp;#34;" | 2' in out.reply.splitlines()
    assert "decision at step 1: the quote is not in the step's text" in out.problems


def test_a_reply_cut_mid_json_keeps_its_complete_decisions_and_the_retry_completes_the_rest() -> None:
    record = _records()["45"]
    retry = OUT_OF_BOUNDS[1].replace("Data_Extraction_Expert", "DataAnalysis_Expert")
    endpoint = _Recorded(CUT_OFF, retry)
    out = _audit(record, endpoint)
    first_read = endpoint.bodies[1]["messages"][-2]["content"]  # the first reply as the auditor read it
    # three complete decisions and what was written of the fourth (its step; the auditor's check drops it)
    assert first_read.splitlines() == [
        'Decision: 1 | act | "A2023-08-24T09:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPED" | 0.9',
        'Decision: 3 | act | "A2023-10-24T08:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPED" | 0.9',
        'Decision: 4 | act | "A2023-10-25T08:57:56.13.22.CALP_SG_LNMR_DKM_RX_FB_VAR_JUMPED" | 0.9',
        'Decision: 4 |  | "" | ',
    ]
    assert (out.agent, out.step, out.mode) == ("DataAnalysis_Expert", 1, "A.3")


def test_a_constrained_audit_asks_for_the_tokens_its_schema_admits() -> None:
    record = _records()["53"]
    endpoint = _Recorded(*OUT_OF_BOUNDS)
    _audit(record, endpoint)
    schema = auditor_answer(record, PromptConfig(), decision_steps(record), STATES, SOURCES, IMPACTS)
    bound = answer_tokens(schema)
    assert bound is not None and bound > 256  # four audited steps: more than the run's default budget
    assert [b["max_tokens"] for b in endpoint.bodies] == [bound, bound]
    # and the bound covers the longest reply the schema admits, at two characters a token
    longest = json.dumps(schema.model_json_schema())  # (a proxy that grows with every bound the schema states)
    assert bound < len(longest)


#: Record 45's first reply under the schema before its agents matched the check, verbatim but for its decision map
#: (cut here): a well-formed audit naming the tool-output step's author, which the grammar admitted and the
#: auditor's agent check refused, so the record had no agent after the retry either.
TOOL_AUTHOR = (
    '{ "Decision": [{"Step": 4,"State":"act", "Quote":"A2023-10-26T08:57:56.13.22","Confidence":0.9} ],"Outcome":4, '
    '"Control":1, "Trajectory":1, "Source":"control", "Impact":"fully irreversible", "Agent":"Computer_terminal", '
    '"Step":2, "Mode":"A.3","Reason":"The agent failed to meet the goal of a task."} '
)


def test_the_schema_admits_exactly_the_agents_the_field_check_accepts() -> None:
    from failforge.attribution._answers import rcta_final_answer
    from failforge.attribution._auditor import validate
    from failforge.attribution._fields import recorded_agents
    from failforge.llm import reply_fields

    with_tool_steps = [r for r in _records().values() if any(s.kind == "tool" for s in r.steps)]
    for record in [_records()["45"], *with_tool_steps[:12]]:  # records whose tool outputs have an author
        accepted = set(recorded_agents(record).values())
        audit = auditor_answer(record, PromptConfig(), decision_steps(record), STATES, SOURCES, IMPACTS)
        rcta = rcta_final_answer(record, PromptConfig(), [])
        for field, key in (
            (audit.model_json_schema()["properties"]["Agent"], "Agent"),
            (rcta.model_json_schema()["properties"]["Role"], "Role"),
        ):
            admitted = set(field["enum"]) if "enum" in field else {field["const"]}  # one agent: a const
            assert admitted == accepted, (record.id, key)
    record = _records()["45"]
    schema = auditor_answer(record, PromptConfig(), decision_steps(record), STATES, SOURCES, IMPACTS)
    text, validated = reply_fields(TOOL_AUTHOR, schema)
    _, problems, _ = validate(record, text, PromptConfig())
    assert not validated and "Computer_terminal" in problems["agent"]  # now outside the schema: a reply it refuses
