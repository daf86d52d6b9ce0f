"""A browser run goes through exactly the same campaign pipeline: gold records from MiniWoB++ seeds.

The model is the loopback server's deterministic policy (so the test is fast and repeatable); the
browser, the pages, the cache, replay, the evaluator (MiniWoB's own reward) and the filters are real.
The local-model version of this is `failforge demo --browser`.
"""

from __future__ import annotations

import json

from _required import require

require("chromium")

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign  # noqa: E402
from failforge.exporters import to_whowhen_pro  # noqa: E402
from failforge.llm import ModelEndpoint  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.trajectory import load_jsonl, write_jsonl  # noqa: E402


def test_gold_records_from_miniwob_seeds(tmp_path):
    from failforge.seeds import oracle_seed

    seeds = [
        oracle_seed("miniwob", task, {"cache_dir": str(tmp_path / "cache")})
        for task in ("click-button", "enter-text", "login-user")
    ]
    assert all(s.outcome.success for s in seeds)
    write_jsonl(tmp_path / "seeds.jsonl", seeds)
    with LoopbackModelServer() as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None)
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            plan={"steps_per_seed": 2, "modes_per_step": 1, "modes": ["A.5"]},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0 and summary.kept >= 1
    gold, _ = load_jsonl(tmp_path / "out" / "gold.jsonl")
    by_id = {s.id: s for s in seeds}
    for record in gold:
        seed, t = by_id[record.label.seed_id], record.label.decisive_step
        assert record.environment.name == "miniwob"
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        assert record.outcome.evaluator.startswith("miniwob")
        trace = to_whowhen_pro(record)  # the eva convention: [0] system, [1] user, then assistant/tool turn pairs
        turn = [s.index for s in record.steps if s.kind == "agent"].index(t)
        assert (
            trace["framework"] == "eva"
            and (trace["ground_truth"]["step"] - 2) // 2 == turn
            and trace["benchmark"].startswith("miniwob")
        )
    rejected = (
        [json.loads(line) for line in (tmp_path / "out" / "rejected.jsonl").read_text().splitlines()]
        if (tmp_path / "out" / "rejected.jsonl").exists()
        else []
    )
    assert all(r["reasons"] for r in rejected)
