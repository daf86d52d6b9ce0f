"""A DA-Bench campaign on a scripted-analyst seed with the scripted CodeAgent policy: gold whose decisive step is the
code rule's change (early rounding, answer format) at the analyst's answers step, confirmed by the closed-form
evaluator; with every stage-2 reply keeping a contradicting comment, the tell filter rejects the rounding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _required import require
from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.testing.code_agent_policy import code_agent_policy
from failforge.trajectory import load_jsonl, write_jsonl

pytestmark = pytest.mark.timeout(900)


@pytest.mark.parametrize("annotate_every", [0, 1])
def test_code_mode_gold_and_the_tell_filter(annotate_every: int, tmp_path: Path) -> None:
    require("dabench_local")
    require("smolagents")
    seed = oracle_seed("dabench", "dabench-18", {"backend": "local"})
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    with LoopbackModelServer(policy=code_agent_policy([seed], annotate_every=annotate_every)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            guide_kind="auto",
            plan={"steps_per_seed": 5, "modes_per_step": 2, "modes": ["R.3", "A.4"]},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl") if (tmp_path / "out" / "gold.jsonl").exists() else ([], [])
    rejected = [json.loads(line) for line in (tmp_path / "out" / "rejected.jsonl").read_text().splitlines()]
    assert {r["step"] for r in rejected} | {g.label.decisive_step for g in gold} == {3, 5}  # the paper's steps only
    if annotate_every == 0:
        assert sorted(g.label.mode_code for g in gold) == ["A.4", "R.3"]
        for record in gold:
            t = record.label.decisive_step
            assert t == 5 and record.steps[t].phase == "injected"
            assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
            assert record.outcome is not None and record.outcome.success is False
            assert all(v.passed for v in record.label.filter_verdicts)
    else:
        assert [g.label.mode_code for g in gold] == ["A.4"]  # the name change keeps the comment true
        told = [r for r in rejected if any(v["name"] == "tell" and not v["passed"] for v in r["verdicts"])]
        assert [r["mode"] for r in told] == ["R.3"]
        reason = next(v["reason"] for v in told[0]["verdicts"] if v["name"] == "tell")
        assert "'values to two decimal places'" in reason and "the code writes a number with 1" in reason
