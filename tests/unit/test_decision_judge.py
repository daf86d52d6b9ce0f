"""The recorded judge for control decisions the rules leave undecided, against a deterministic loopback judge.

The judge is served by failforge's loopback server (a pure function of the request) through the real model
boundary and HTTP client; recorded judgements replay with no model, and a changed step is a drift.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.errors import PromptDrift
from failforge.judgement import decide_with_judge, decisions, parse_decision, recordings
from failforge.llm import HttpUpstream
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Trajectory, load_jsonl

SEEDS = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_multiagent_demo.jsonl"


@pytest.fixture(scope="module")
def team() -> Trajectory:
    return next(s for s in load_jsonl(SEEDS)[0] if s.id == "agentdojo-banking-user_task_0-orchestrator-workers-oracle")


def _step_shown(body: dict) -> str:
    user = body["messages"][-1]["content"]
    return user.split("The step to label:\n", 1)[1].split("\n\nWhich control state", 1)[0]


def loopback_judge(body: dict) -> tuple[str, None]:
    """A plan is act (quoting its first line and item); a worker's 'X returned: ...' report is stop; anything
    else is no answer."""
    shown = _step_shown(body)
    if "Plan:" in shown:
        return 'STATE: act\nEVIDENCE: "Plan: 1. files_worker"', None
    if "returned:" in shown:
        return 'STATE: stop\nEVIDENCE: "returned:"', None
    return "I am not sure.", None


def _judged(team: Trajectory, policy=loopback_judge):  # type: ignore[no-untyped-def]
    seen: list[dict] = []

    def served(body: dict):  # type: ignore[no-untyped-def]
        seen.append(body)
        return policy(body)

    with LoopbackModelServer(policy=served) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None)
        try:
            return decide_with_judge(team, upstream, model="judge-m", record_id="t1"), seen
        finally:
            upstream.close()


def test_rules_first_the_judge_only_for_undecided_steps(team):
    by_rules = decisions(team)
    undecided = [d.step for d in by_rules if d.state == "undecided"]
    assert undecided == [1, 5, 9]  # the orchestrator's plan and the two workers' reports
    judged, seen = _judged(team)
    assert len(seen) == 3  # one call per undecided step, none for the steps the rules decide
    assert [d for d in judged if d.step not in undecided] == [d for d in by_rules if d.step not in undecided]
    got = {d.step: (d.state, d.method, d.evidence) for d in judged if d.step in undecided}
    assert got == {
        1: ("act", "judge", "Plan: 1. files_worker"),
        5: ("stop", "judge", "returned:"),
        9: ("stop", "judge", "returned:"),
    }
    plan = next(d for d in judged if d.step == 1)
    assert (
        plan.judge is not None
        and plan.judge.model == "judge-m"
        and plan.judge.call["request_hash"]
        and plan.rule == "judge judge-m: act"
    )


def test_recorded_judgements_replay_with_no_model_and_a_changed_step_is_drift(team):
    judged, _ = _judged(team)
    again = decide_with_judge(team, recorded=recordings(judged))  # no judge, no server: served from the recordings
    assert [d.model_dump() for d in again] == [d.model_dump() for d in judged]
    changed = team.model_copy(deep=True)
    changed.steps[1].content = (changed.steps[1].content or "") + "\n4. Double-check."
    with pytest.raises(PromptDrift):
        decide_with_judge(changed, recorded=recordings(judged))


def test_a_judgement_without_a_state_or_with_evidence_not_in_the_step_stays_undecided(team):
    judged, _ = _judged(
        team,
        lambda body: (
            ('STATE: act\nEVIDENCE: "I will send the money now"', None)
            if "Plan:" in _step_shown(body)
            else ("no idea", None)
        ),
    )
    plan, report = (next(d for d in judged if d.step == i) for i in (1, 5))
    assert (
        plan.state == "undecided"
        and plan.method == "rule"
        and "is not in the step" in plan.rule
        and plan.judge is not None
    )
    assert report.state == "undecided" and "named none of the six states" in report.rule


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('STATE: refuse\nEVIDENCE: "I will not do that"', ("refuse", "I will not do that")),
        ("state = Recover\nevidence: retrying with another id\n", ("recover", "retrying with another id")),
        ("**STATE:** confirm", ("confirm", "")),
        ("STATE: proceed\nEVIDENCE: x", (None, "x")),
    ],
)
def test_parse_decision(raw, expected):
    assert parse_decision(raw) == expected


def test_a_quote_too_short_to_be_evidence_leaves_the_step_undecided(team):
    """'Plan:' is in the step, but a five-character quote is in almost any plan: no evidence."""
    judged, seen = _judged(
        team,
        lambda body: ('STATE: act\nEVIDENCE: "Plan:"', None) if "Plan:" in _step_shown(body) else ("no idea", None),
    )
    plan = next(d for d in judged if d.step == 1)
    assert len(seen) == 3 and plan.state == "undecided" and "shorter than 8 characters" in plan.rule
