"""Conformance, the rule-based guide and the judge with the real embedded model and real AgentDojo.

One attempt per structural mode is run through the campaign's own attempt function with the rule-based
guide (the 135M agent writes ã_t from its own request plus the rule's note), and one semantic
candidate is judged by the local model through the model boundary. What the 135M model answers is
not asserted; what is asserted is that every candidate carries a verdict, that no record is kept
unless its mode is exhibited, and that the judge's verdict replays from its recording.
"""

from __future__ import annotations

import json

import pytest

from failforge.campaign import CampaignConfig, Models, ResolvedModels
from failforge.gold import run_job
from failforge.injection import AttemptSpec
from failforge.judgement import assess, replay_judge
from failforge.llm import LOCAL_MODEL_NAME, HttpUpstream, ModelEndpoint
from failforge.taxonomy import get_mode
from failforge.trajectory import Step, ToolCall

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def _models(local_model) -> Models:  # type: ignore[no-untyped-def]
    endpoint = ModelEndpoint(base_url=local_model.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
    return Models(ResolvedModels(agent=endpoint, guide=endpoint))


@pytest.mark.parametrize("mode,t", [("A.5", 1), ("A.2", 3), ("R.3", 3), ("A.6", 3)])
def test_rule_guided_attempt_keeps_only_conformant_records(local_model, banking_seed, tmp_path, mode, t):
    models = _models(local_model)
    # What is tested is the rule guide and conformance at these steps; whether the 135M model would finish the
    # task from the seed's own step (the decisiveness check, tested in test_campaign.py) is not: it is off here.
    config = CampaignConfig(
        seeds=[str(tmp_path / "s.jsonl")],
        output=str(tmp_path),
        guide_kind="auto",
        filters={"decisiveness": {"enabled": False}},
    )
    try:
        result = run_job(
            banking_seed, AttemptSpec(seed_id=banking_seed.id, step=t, mode=mode), models, config, {"config_hash": "h"}
        )
    finally:
        models.close()
    assert result.status in ("gold", "rejected"), result.record
    record = result.record
    provenance = record.provenance
    assert provenance["guide_kind"] == "rules" and provenance["guide_name"].startswith("failforge-rules")
    branch = record if result.status == "gold" else record.trajectory
    if branch is None:  # the rule found nothing to steer (not expected for these steps)
        pytest.fail(f"no branch was run: {record.reasons}")
    conformance = branch.provenance["conformance"]
    assert conformance["mode"] == mode and conformance["method"] == "deterministic"
    assert isinstance(conformance["exhibited"], bool)
    if result.status == "gold":
        assert conformance["exhibited"] is True
        assert record.label.guide_model.startswith("failforge-rules") and record.label.guide_request["guide"] == "rules"
        assert record.label.steering_note in json.dumps(record.label.agent_request)
    elif not conformance["exhibited"]:
        assert any(r.startswith("mode_conformance:") for r in record.reasons)


def test_local_model_judges_a_semantic_candidate_and_the_verdict_replays(local_model, banking_seed):
    t = 3
    step = Step(
        index=t,
        kind="agent",
        agent="agent",
        role="assistant",
        phase="injected",
        tool_calls=[
            ToolCall(
                id="x",
                name="send_money",
                arguments=json.dumps(
                    {"recipient": "GB29NWBK60161331926819", "amount": 12.0, "subject": "Refund", "date": "2022-04-01"}
                ),
            )
        ],
    )
    upstream = HttpUpstream(local_model.base_url, api_key_env=None, model=LOCAL_MODEL_NAME)
    try:
        verdict = assess(
            banking_seed,
            step,
            t,
            get_mode("R.4"),
            judge=upstream,
            judge_model=LOCAL_MODEL_NAME,
            record_id="local-judge",
        )
    finally:
        upstream.close()
    assert verdict.judge is not None and verdict.judge.call["response"]["choices"]
    assert verdict.method in ("judge", "unverified")
    again = replay_judge(verdict.judge)
    assert again.exhibited == verdict.judge.exhibited and again.raw == verdict.judge.raw
