"""The OpenAI Agents SDK (a manager with worker agents as tools) through failforge: seeds from a loopback
team model and from the team oracle, replay identical (streaming included), branches at a worker step
and at the manager's step, gold under the framework's name, and the SDK's default Responses API refused."""
# ruff: noqa: E402  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import asyncio
import threading

import pytest

from _required import require

require("openai_agents")
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
from failforge.llm import ModelBoundary, UnsupportedAPI, boundary_client  # noqa: E402
from failforge.runlog import RunLog  # noqa: E402
from failforge.seeds import env_spec, harness_for, oracle_seed  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

NAME = "openai-agents"


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
    assert "manager" in agents and "banking_worker" in agents
    assert [s.tool_name for s in seed.steps if s.kind == "tool"] == ["get_most_recent_transactions", "send_money"]
    assert all(r.get("parallel_tool_calls") is False for r in requests_of(seed) if r.get("tools"))
    ids = [c.id for s in seed.agent_steps() for c in s.tool_calls]
    assert len(ids) == len(set(ids)), "tool-call ids must be unique across the run"
    identical, why = replayed_identically(seed)
    assert identical, why


def test_streaming_seed_is_streamed_and_replays_identically(server):
    streamed = model_seed(NAME, server, streaming=True)
    manager = [r for s, r in zip(streamed.agent_steps(), requests_of(streamed), strict=True) if s.agent == "manager"]
    assert (
        streamed.outcome.success
        and manager
        and all(r.get("stream") is True and r["stream_options"]["include_usage"] for r in manager)
    )
    identical, why = replayed_identically(streamed)
    assert identical, why


def test_oracle_seed_replays_identically():
    seed = oracle_seed("agentdojo", TASK, harness=NAME)
    assert seed.id.endswith(f"-{NAME}-oracle") and seed.outcome.success
    identical, why = replayed_identically(seed)
    assert identical, why


def test_the_sdks_default_responses_api_is_refused_with_a_typed_error():
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    boundary = ModelBoundary(RunLog(trajectory_id="responses"), upstream=None)
    agent = Agent(
        name="agent",
        instructions="x",
        model=OpenAIResponsesModel(model="m", openai_client=boundary_client(boundary).async_client("agent")),
    )
    # On a thread of its own: a MiniWoB++ test earlier in the process leaves Playwright's loop on the main thread,
    # where asyncio.run would refuse to start before the SDK ever called the boundary.
    raised: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(Runner.run(agent, "hello", run_config=RunConfig(tracing_disabled=True)))
        except Exception as exc:  # the SDK's own error type; the typed one is on the boundary
            raised.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=60)
    assert raised, "the Responses API call was not refused"
    assert isinstance(boundary.failure, UnsupportedAPI) and "chat_completions" in str(boundary.failure)
    assert boundary.log.steps == []


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


def test_handoffs_record_replay_and_branch_at_the_manager_and_a_worker(tmp_path):
    harness = harness_for(NAME, env_spec("agentdojo", TASK), delegation="handoffs")
    with LoopbackModelServer(agent_policy=LoopbackTeam(harness)) as handoff_server:
        seed = model_seed(NAME, handoff_server, delegation="handoffs")
        assert seed.outcome.success and seed.harness.config["delegation"] == "handoffs"
        transfers = [c.name for s in seed.agent_steps() for c in s.tool_calls if c.name.startswith("transfer_to_")]
        assert "transfer_to_banking_worker" in transfers and "transfer_to_manager" in transfers
        assert all(s.recipient == "banking_worker" for s in seed.agent_steps() if s.agent == "manager" and s.tool_calls)
        identical, why = replayed_identically(seed)
        assert identical, why
        summary, gold = campaign(tmp_path, [seed], handoff_server, modes=("R.3", "C.2"))
    deciders = {(g.label.decisive_agent, g.label.mode_code) for g in gold}
    assert ("manager", "C.2") in deciders and any(is_worker(a) for a, _ in deciders), (
        deciders,
        dict(summary.rejected_by),
    )
    assert all(g.harness.name == NAME for g in gold)
