"""A seed id names its harness whenever the harness is not the environment's default: two single-agent
harnesses recording the same task never give the same id."""

from __future__ import annotations

from _required import require

require("agentdojo")

from failforge.seeds import oracle_seed  # noqa: E402

TASK = "banking/user_task_3"


def test_oracle_seeds_of_two_single_agent_harnesses_have_different_ids_naming_the_harness():
    default = oracle_seed("agentdojo", TASK)
    pipeline = oracle_seed("agentdojo", TASK, harness="agentdojo.pipeline")
    builtin = oracle_seed("agentdojo", TASK, harness="builtin")  # an alias of the default harness
    assert default.id == "agentdojo-banking-user_task_3-oracle" == builtin.id
    assert pipeline.id == "agentdojo-banking-user_task_3-agentdojo.pipeline-oracle"
    assert default.outcome.success and pipeline.outcome.success
