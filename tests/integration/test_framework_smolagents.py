"""smolagents (ToolCallingAgent manager + managed agents) through failforge: seeds from a loopback team
model and from the team oracle, replay identical (streaming included), branches at a worker step and
at the manager's step, gold exported under the framework's name."""
# ruff: noqa: E402  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import pytest

from _required import require

require("smolagents")
require("agentdojo")

from framework_adapters import (
    TASK,
    LoopbackTeam,
    campaign,
    is_worker,
    model_seed,
    replayed_identically,
    requests_of,
)  # noqa: E402

from failforge.attribution.importers.failforge_gold import from_trajectory  # noqa: E402
from failforge.seeds import env_spec, harness_for, oracle_seed  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

NAME = "smolagents"


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=LoopbackTeam(harness_for(NAME, env_spec("agentdojo", TASK)))) as running:
        yield running


@pytest.fixture(scope="module")
def seed(server):
    return model_seed(NAME, server)


def test_model_seed_succeeds_with_every_agent_and_replays_identically(seed):
    assert seed.outcome.success and not seed.oracle and seed.harness.name == NAME
    agents = {s.agent for s in seed.agent_steps()}
    assert "manager" in agents and {"banking_worker"} <= agents
    assert [s.tool_name for s in seed.steps if s.kind == "tool"] == ["get_most_recent_transactions", "send_money"]
    assert all(s.state_fingerprint for s in seed.steps if s.kind == "tool")
    assert all(r.get("tool_choice") == "required" for r in requests_of(seed))  # the framework's own requests
    identical, why = replayed_identically(seed)
    assert identical, why


def test_streaming_seed_is_streamed_and_replays_identically(server):
    streamed = model_seed(NAME, server, streaming=True)
    assert streamed.outcome.success and all(r.get("stream") is True for r in requests_of(streamed))
    identical, why = replayed_identically(streamed)
    assert identical, why


def test_oracle_seed_replays_identically():
    seed = oracle_seed("agentdojo", TASK, harness=NAME)
    assert seed.id.endswith(f"-{NAME}-oracle") and seed.outcome.success
    identical, why = replayed_identically(seed)
    assert identical, why


def test_branches_at_a_worker_and_at_the_manager_keep_gold_named_after_the_framework(tmp_path, seed, server):
    summary, gold = campaign(tmp_path, [seed], server)
    assert summary.failed == 0, summary.failed_by
    deciders = {g.label.decisive_agent for g in gold}
    assert "manager" in deciders and any(is_worker(a) for a in deciders), (deciders, dict(summary.rejected_by))
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        assert record.harness.name == NAME and from_trajectory(record).framework == NAME
