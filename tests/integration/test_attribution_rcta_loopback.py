"""RCTA-like against loopback judges that follow its protocol, and re-scoring it from the recording.

The judges know each record's gold (a stand-in for a strong remote judge) and follow the stages: a
segment call proposes the gold step as "root" when it lies in the segment (and the segment's last step
as "terminal", a distractor), the outline call writes an outline, and the final call answers the gold
agent and step only if the gold step's original text was retrieved among the candidates. So a correct
implementation scores 100 on Step exact and Agent; by hand, each record costs ceil(candidates / 40)
segment calls + 1 outline + 1 final (+ 1 retry when the final answer has an invalid field).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from failforge.attribution import summarise
from failforge.attribution._metrics import score
from failforge.attribution._predictions import load_predictions
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.llm import HttpUpstream
from failforge.plugins import importers
from failforge.testing.model_servers import LoopbackModelServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    ww, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when"))
    pro, _ = summarise(importers.get("whowhen-pro")(FIXTURES / "whowhen_pro"))
    chosen = [r for r in ww[:6] + pro if r.gold.mode]
    return [*chosen, _long(chosen[0])]


def _long(record):  # type: ignore[no-untyped-def]
    """A 95-step variant of a real record (three segments), its gold moved into the second segment."""
    from failforge.attribution import FailureStep

    agents = [a for a in record.agents if a != "user"] or ["agent"]
    steps = [*record.steps[:2]]
    while len(steps) < 95:
        i = len(steps)
        steps.append(
            FailureStep(
                index=i,
                kind="agent",
                agent=agents[i % len(agents)],
                content=f"work item {i}",
                recipient=agents[(i + 1) % len(agents)] if i % 7 == 0 and len(agents) > 1 else None,
            )
        )
    gold = record.gold.model_copy(
        update={"step": 61, "agent": steps[61].agent, "step_label": "61", "accepted_steps": [], "accepted_agents": []}
    )
    return record.model_copy(
        update={
            "id": record.id + "/long",
            "steps": steps,
            "gold": gold,
            "task": record.task.model_copy(update={"question": "LONG VARIANT. " + record.task.question}),
        }
    )


def judge(records, final_role=None):  # type: ignore[no-untyped-def]
    """``final_role(record, is_retry)`` -> the Role the final call writes (default: the gold agent)."""
    # the long variant's question contains its original's: look it up first
    by_question = {
        r.task.question.split("\n")[0][:80]: r for r in sorted(records, key=lambda r: not r.id.endswith("/long"))
    }

    def record_of(text: str):  # type: ignore[no-untyped-def]
        return next(r for key, r in by_question.items() if key in text)

    def answer(body: dict[str, Any]) -> tuple[str | None, None]:
        messages = body["messages"]
        text = messages[-1]["content"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        record = record_of(first)
        gold = record.gold
        if m := re.search(r"segment of its trajectory \(steps (\d+) to (\d+)\)", text):
            lo, hi = int(m.group(1)), int(m.group(2))
            proposals = ([f"{gold.step} root"] if lo <= gold.step <= hi else []) + (
                [f"{hi} terminal"] if hi != gold.step else []
            )
            return f"Summary: steps {lo}-{hi}.\nCandidates: {'; '.join(proposals) or 'none'}", None
        if "Write an outline of the trajectory" in text:
            return "Outline: the agents split the task, one step goes wrong, the run ends.", None
        retry = "could not be used" in text
        if "Reason backward from the failure" in first:
            retrieved = f"[candidate] Step {gold.step} - {record.steps[gold.step].agent}:" in first
            step = gold.step if retrieved else record.candidate_steps()[0]
            role = final_role(record, retry) if final_role else gold.agent
            return f"Role: {role}\nStep: {step}\nHandoff: none\nMode: {gold.mode}\nReason: the root.", None
        raise AssertionError(f"unexpected prompt: {text[:200]}")

    return answer


def _run(records, tmp_path: Path, policy, name: str):  # type: ignore[no-untyped-def]
    with LoopbackModelServer(policy=policy) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, model="rcta-judge")
        summary = run_attribution(
            records, AttributeConfig(method="rcta", judge_model="rcta-judge"), tmp_path / name, upstream=upstream
        )
        upstream.close()
    predictions, _ = load_predictions(tmp_path / name / "predictions.jsonl")
    return summary, predictions


def _segments(record) -> int:  # type: ignore[no-untyped-def]
    return math.ceil(len(record.candidate_steps()) / 40)


def test_rcta_recovers_the_gold_and_rescores_at_zero_tokens(records, tmp_path):
    summary, predictions = _run(records, tmp_path, judge(records), "run")
    assert summary.failed == 0 and summary.predicted == len(records)
    report = score(records, predictions)["overall"]
    assert (
        report["step_exact"]["value"] == 100.0
        and report["agent"]["value"] == 100.0
        and report["joint"]["value"] == 100.0
    ), [p.problems for p in predictions]
    calls = {p.record_id: p.calls for p in predictions}
    assert calls == {r.id: _segments(r) + 2 for r in records}
    assert any(_segments(r) > 1 for r in records), "the fixture should have a record longer than one segment"

    again = run_attribution(
        records,
        AttributeConfig(method="rcta", judge_model="rcta-judge"),
        tmp_path / "rescored",
        upstream=None,
        recording=tmp_path / "run",
    )
    assert again.live_calls == 0 and again.prompt_tokens == 0 and again.replayed_calls == sum(calls.values())
    rescored, _ = load_predictions(tmp_path / "rescored" / "predictions.jsonl")
    assert [(p.record_id, p.agent, p.step, p.mode) for p in rescored] == [
        (p.record_id, p.agent, p.step, p.mode) for p in predictions
    ]


def test_an_invalid_role_gets_one_retry_and_stays_invalid_if_it_is_invalid_again(records, tmp_path):
    _, fixed = _run(records, tmp_path, judge(records, lambda r, retry: r.gold.agent if retry else "Nobody"), "fixed")
    assert all(p.agent is not None for p in fixed) and {p.record_id: p.calls for p in fixed} == {
        r.id: _segments(r) + 3 for r in records
    }
    assert score(records, fixed)["overall"]["agent"]["value"] == 100.0

    _, stubborn = _run(records, tmp_path, judge(records, lambda r, retry: "Nobody"), "stubborn")
    report = score(records, stubborn)["overall"]
    multi = [r for r in records if r.topology == "multi"]
    assert all(p.agent is None and any("after one retry: Role 'Nobody'" in x for x in p.problems) for p in stubborn)
    assert report["agent"]["hits"] == 0 and report["agent"]["n"] == len(multi)  # never read off the step's author
    assert report["step_exact"]["value"] == 100.0  # the step field stays valid on its own
