"""A campaign with ``decision_judge``: every gold record written gets its control-decision judgements attached
and is adjudicated again at settle, recorded in provenance; a judge that fails costs the judgements, not the gold.

Real AgentDojo, replay, filters and ledger; the agent and the decision judge are loopback servers (the judge
counts its calls), as in tests/integration/test_campaign.py.
"""

from __future__ import annotations

from _required import require
from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.judgement import PROVENANCE_KEY, recorded_decisions
from failforge.llm import ModelEndpoint
from failforge.testing import LoopbackModelServer
from failforge.testing.oracle_policy import oracle_replay_policy
from failforge.trajectory import load_jsonl, write_jsonl

require("agentdojo")


def _judge(body):  # type: ignore[no-untyped-def]
    shown = body["messages"][-1]["content"].split("The step to label:\n", 1)[1]
    if "Nothing needs to be done" in shown:
        return 'STATE: stop\nEVIDENCE: "Nothing needs to be done"', None
    return "I am not sure.", None


def _run(tmp_path, banking_seed, judge_url: str):  # type: ignore[no-untyped-def]
    seeds = tmp_path / "one.jsonl"
    write_jsonl(seeds, [banking_seed])
    with LoopbackModelServer(policy=oracle_replay_policy(banking_seed)) as agent:
        endpoint = ModelEndpoint(
            base_url=agent.base_url, model="loopback", api_key_env=None, timeout=30.0, max_attempts=6
        )
        config = CampaignConfig(
            seeds=[str(seeds)],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 1, "modes_per_step": 1, "modes": ["A.5"]},
            filters={"decisiveness": {"k": 1}},
            decision_judge={
                "base_url": judge_url,
                "model": "judge-m",
                "api_key_env": None,
                "timeout": 5.0,
                "max_attempts": 1,
            },
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, errors = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert not errors
    return summary, gold


def test_settle_attaches_judgements_to_gold_and_records_them_in_provenance(tmp_path, banking_seed):
    seen: list[dict] = []

    def judge(body):  # type: ignore[no-untyped-def]
        seen.append(body)
        return _judge(body)

    with LoopbackModelServer(policy=judge) as server:
        summary, gold = _run(tmp_path, banking_seed, server.base_url)
    assert summary.kept == 1 and len(gold) == 1
    record = gold[0]
    judged = record.provenance["decision_judge"]
    assert judged["model"] == "judge-m" and judged["judged_steps"] and len(seen) == len(judged["judged_steps"])
    assert sorted(int(k) for k in record.provenance[PROVENANCE_KEY]) == judged["judged_steps"]
    last = recorded_decisions(record)[-1]
    assert (last.state, last.method, last.evidence) == ("stop", "judge", "Nothing needs to be done")
    assert record.adjudication is not None


def test_a_judge_that_is_down_costs_the_judgements_not_the_gold(tmp_path, banking_seed):
    summary, gold = _run(tmp_path, banking_seed, "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    assert summary.kept == 1 and len(gold) == 1
    assert "error" in gold[0].provenance["decision_judge"] and PROVENANCE_KEY not in gold[0].provenance
