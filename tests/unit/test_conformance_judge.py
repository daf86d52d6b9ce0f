"""The recorded judge for semantic modes, against a loopback OpenAI-compatible server.

The judge endpoint is whatever the campaign's guide is (often a paid API), so these tests serve it
from failforge's loopback server; the call goes through the real model boundary and HTTP client.
Recorded judgements replay without any model, and a changed judge prompt is a drift, not a re-judge.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.errors import PromptDrift
from failforge.judgement import assess, judge_request, parse_judgement, replay_judge, run_judge
from failforge.llm import HttpUpstream
from failforge.llm._structured import is_probe
from failforge.taxonomy import get_mode
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Step, ToolCall, Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


@pytest.fixture(scope="module")
def seed() -> Trajectory:
    return next(s for s in load_jsonl(BUNDLED)[0] if s.id == "agentdojo-workspace-user_task_0-oracle")


def _step(content: str | None, calls: list[tuple[str, dict]] = ()) -> Step:
    return Step(
        index=1,
        kind="agent",
        agent="agent",
        role="assistant",
        content=content,
        tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=json.dumps(a)) for i, (n, a) in enumerate(calls)],
        phase="injected",
    )


ON_TASK = [("search_calendar_events", {"query": "Networking event", "date": "2024-05-27"})]


def _judge_server(answer: str) -> LoopbackModelServer:
    seen: list[dict] = []

    def policy(body: dict) -> tuple[str, None]:
        seen.append(body)
        return answer, None

    server = LoopbackModelServer(policy=policy)
    server.seen = seen  # type: ignore[attr-defined]
    return server


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("EXHIBITED: yes\nRATIONALE: it ignores the date.", (True, "it ignores the date.")),
        ("exhibited = No\nrationale: the step is fine", (False, "the step is fine")),
        ("**EXHIBITED:** yes", (True, "**EXHIBITED:** yes")),
        ("Yes, clearly.", (True, "Yes, clearly.")),
        ("I cannot tell.", (None, "I cannot tell.")),
    ],
)
def test_parse_judgement(raw, expected):
    assert parse_judgement(raw) == expected


def test_judge_prompt_shows_step_and_mode_but_not_the_note(seed):
    body = judge_request(seed, _step(None, ON_TASK), 1, get_mode("R.4"), model="judge-m")
    text = json.dumps(body)
    assert "2024-05-27" in text and "Task misunderstanding" in text and get_mode("R.4").definition[:40] in text
    assert "Private guidance" not in text and body["temperature"] == 0.0 and body["model"] == "judge-m"


def test_semantic_mode_is_judged_through_the_boundary_and_replays(seed):
    with _judge_server("EXHIBITED: yes\nRATIONALE: it searches the wrong day.") as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        verdict = assess(
            seed, _step(None, ON_TASK), 1, get_mode("R.4"), judge=upstream, judge_model="judge-m", record_id="a1"
        )
        upstream.close()
        judged = [
            body for body in server.seen if not is_probe(body)
        ]  # the endpoint was probed once for structured output
        assert (
            len(judged) == 1 and "response_format" not in judged[0]
        )  # a server that ignores the field is asked in free text
    assert verdict.exhibited is True and verdict.method == "judge" and "wrong day" in verdict.reason
    record = verdict.judge
    assert record is not None and record.model == "judge-m" and record.call["request_hash"] and record.call["response"]
    again = replay_judge(record)  # no server, no upstream: served from the recording
    assert again.exhibited is True and again.rationale == record.rationale
    changed = dict(record.call["request"], max_tokens=5)
    with pytest.raises(PromptDrift):
        replay_judge(record, changed)


def test_structural_and_off_task_candidates_never_reach_the_judge(seed):
    with _judge_server("EXHIBITED: yes") as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        structural = assess(seed, _step(None, ON_TASK), 1, get_mode("A.2"), judge=upstream, judge_model="j")
        off_task = assess(
            seed, _step("I love poems about autumn leaves."), 1, get_mode("R.2"), judge=upstream, judge_model="j"
        )
        upstream.close()
        assert [body for body in server.seen if not is_probe(body)] == []
    assert structural.method == "deterministic" and structural.exhibited is True
    assert off_task.method == "deterministic" and off_task.exhibited is False


def test_an_unreadable_judgement_stays_unverified(seed):
    with _judge_server("Hard to say.") as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        verdict = assess(seed, _step(None, ON_TASK), 1, get_mode("V.2"), judge=upstream, judge_model="j")
        upstream.close()
    assert verdict.exhibited is None and verdict.method == "unverified" and "no yes/no" in verdict.reason
    assert verdict.judge is not None and verdict.judge.raw == "Hard to say."


def test_a_judge_says_no(seed):
    with _judge_server("EXHIBITED: no\nRATIONALE: a plain search.") as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        verdict = run_judge(
            upstream, judge_request(seed, _step(None, ON_TASK), 1, get_mode("R.1"), model="j"), record_id="x"
        )
        upstream.close()
    assert verdict.exhibited is False and verdict.rationale == "a plain search."
