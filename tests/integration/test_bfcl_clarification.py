"""Missed clarification on BFCL, through the whole failforge path: at the turn BFCL's ground truth is empty
(miss_param: the user left out a detail; miss_func: the function is held out) the oracle seed asks or says
it cannot; the rule guide's note makes the agent act instead, and BFCL's own multi_turn_checker decides.

The agent is the deterministic loopback policy ``failforge.testing.bfcl_policy`` (BFCL's ground truth; under
a note, the note's call). Simulators, checker, replay, rule guide, filters and the decisiveness arms are
real. Three tasks: miss_param_2 (R.1: ``touch`` with a file name the user never gave; the extra file stays
and the checker finds a state mismatch), miss_func_5 (A.3: ``post_tweet`` before it is offered; the next turn
posts again, two tweets) and miss_func_0 (A.3: ``sort`` early; it only reads, the checker passes the run, so
it must be rejected, not kept).
"""

from __future__ import annotations

import json

from tests._required import require

require("bfcl")

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign  # noqa: E402
from failforge.clarification import said, user_turns, withheld_at  # noqa: E402
from failforge.judgement.text import offered_tools  # noqa: E402
from failforge.llm import ModelEndpoint  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.testing.bfcl_policy import BfclPolicies  # noqa: E402
from failforge.trajectory import load_jsonl, write_jsonl  # noqa: E402

TASKS = ("multi_turn_miss_param_2", "multi_turn_miss_func_5", "multi_turn_miss_func_0")


def test_acting_instead_of_asking_is_gold_only_where_the_checker_fails_the_run(tmp_path):
    seeds = {task: oracle_seed("bfcl", task) for task in TASKS}
    for seed in seeds.values():
        assert seed.outcome is not None and seed.outcome.success, seed.outcome
    write_jsonl(tmp_path / "seeds.jsonl", list(seeds.values()))
    with LoopbackModelServer(policy=BfclPolicies(list(TASKS))) as server:
        endpoint = ModelEndpoint(
            base_url=server.base_url, model="loopback", api_key_env=None, timeout=60.0, max_attempts=1
        )
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            concurrency=1,
            guide_kind="rules",
            plan={"modes": ["R.1", "A.3"], "steps_per_seed": 1, "modes_per_step": 2},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0, summary
    gold, bad = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert not bad
    kept = {(g.task.task_id, g.label.mode_code) for g in gold}
    assert kept == {("multi_turn_miss_param_2", "R.1"), ("multi_turn_miss_func_5", "A.3")}, kept
    for record in gold:
        seed = seeds[record.task.task_id]
        t = record.label.decisive_step
        assert withheld_at(seed, t) == ("parameter" if "miss_param" in seed.task.task_id else "function")
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        injected = record.steps[t]
        assert injected.phase == "injected" and injected.tool_calls
        call = injected.tool_calls[0]
        if record.label.mode_code == "R.1":  # a value the user gave in no turn so far
            assert call.name == "touch" and call.name in offered_tools(seed, t)
            assert not said(call.parsed_arguments()["file_name"], user_turns(seed, t))
            assert record.label.expected_decision == "ask"
        else:  # the held-out function, before it is offered
            assert call.name == "post_tweet" and call.name not in offered_tools(seed, t)
            assert record.label.expected_decision == "refuse"
        assert record.label.found_decision == "act"
        assert (
            record.outcome is not None
            and record.outcome.success is False
            and record.outcome.evaluator == "bfcl.multi_turn_checker"
        )
        assert record.outcome.details["error_type"] == "multi_turn:instance_state_mismatch"
        arms = record.provenance["decisiveness"]  # the seed's own step, continued live, still passes the checker
        assert arms["checked"] and arms["original_success_rate"] == 1.0 and arms["injected_success_rate"] == 0.0
    rejected = [json.loads(line) for line in (tmp_path / "out" / "rejected.jsonl").read_text().splitlines()]
    sort_early = [r for r in rejected if r["seed_id"] == seeds["multi_turn_miss_func_0"].id and r["mode"] == "A.3"]
    assert sort_early and any("judged the branch successful" in reason for reason in sort_early[0]["reasons"]), (
        sort_early
    )
