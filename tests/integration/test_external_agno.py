"""agno, a framework failforge has no adapter for, as an external agent in its own process and venv.

The team (``examples/external/agno_team.py``): an agno ``Team`` whose leader delegates with agno's own
``delegate_task_to_member(member_id, task)`` to one member ``Agent`` per tool domain, every agent on
its own per-agent route, the members' tools from failforge's MCP server through agno's ``MCPTools``.
Seeds are recorded from the loopback team model (:class:`external_agno_policy.AgnoTeamPolicy`) on five
AgentDojo tasks; they are ordinary seeds: they replay identically, a campaign keeps gold at a member's
step and at the leader's step, a changed system prompt is a PromptDrift naming the seed, the step, the
agent and the nearest recorded requests, and a changed tool result is AgentDojo's state drift at that step.
"""
# ruff: noqa: E402  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import json

import pytest

from _required import require

require("agentdojo")
require("venv_agno")

from external_agno_policy import DELEGATE, AgnoTeamPolicy, agno_roster  # noqa: E402
from external_teams import (
    TASKS,
    LoopbackTeams,
    external_team,
    record_seed,
    venv_python,
    with_command_env,
    with_tool_result,
)  # noqa: E402
from framework_adapters import campaign  # noqa: E402

from failforge.errors import EnvStateDrift, PromptDrift  # noqa: E402
from failforge.fidelity import audit  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

pytestmark = pytest.mark.timeout(900)
FRAMEWORK = "agno"
SCRIPT = "examples/external/agno_team.py"
ROSTERS = {task: agno_roster(task.split("/")[0]) for task in TASKS}


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=LoopbackTeams(AgnoTeamPolicy, ROSTERS)) as running:
        yield running


@pytest.fixture(scope="module")
def seeds(server):
    return [
        record_seed(external_team(venv_python("agno"), SCRIPT, FRAMEWORK, ROSTERS[task]), task, server.base_url)
        for task in TASKS
    ]


def test_seeds_on_five_tasks_are_ordinary_seeds_that_audit_identical(seeds):
    for seed, task in zip(seeds, TASKS, strict=True):
        assert seed.outcome.success, (task, seed.outcome)
        assert (
            seed.harness.name == "external"
            and seed.harness.config["framework"] == FRAMEWORK
            and seed.harness.config["framework_version"]
        )
        assert seed.id.startswith("seed-external.agno-")
        agents = {s.agent for s in seed.agent_steps()}
        assert "manager" in agents and any(a.endswith("_worker") for a in agents), agents
        tools = [s for s in seed.steps if s.kind == "tool"]
        assert tools and all(s.state_fingerprint and s.tool_call_id for s in tools), (
            "tool steps come through the tool boundary, matched to the model's call"
        )
        delegations = [(s, c) for s in seed.agent_steps() if s.agent == "manager" for c in s.tool_calls]
        assert delegations and all(
            c.name == DELEGATE and s.recipient == json.loads(c.arguments)["member_id"] for s, c in delegations
        ), (
            "the leader delegates with agno's own tool, one member per call, and failforge reads the member from its"
            " argument"
        )
        assert all(len(s.tool_calls) <= 1 for s in seed.agent_steps()), "one delegation, one tool call at a time"
        for step in seed.agent_steps():  # every agent sends its own model calls, seeing only its own tools
            offered = {t["function"]["name"] for t in step.model_call.request.get("tools") or []}
            assert offered == (
                {DELEGATE}
                if step.agent == "manager"
                else set(next(p.tools for p in ROSTERS[task] if p.name == step.agent))
            ), (step.agent, offered)
    report = audit(seeds)
    (env,) = report.environments
    assert env.environment == "agentdojo" and env.identical == env.seeds == len(TASKS), report.seeds


def test_a_campaign_keeps_gold_at_a_members_step_and_at_the_leaders_step(tmp_path, seeds, server):
    summary, gold = campaign(tmp_path, seeds[:2], server, steps=12)
    assert summary.failed == 0, summary.failed_by
    deciders = {g.label.decisive_agent for g in gold}
    assert "manager" in deciders and any(a.endswith("_worker") for a in deciders), (deciders, dict(summary.rejected_by))
    by_id = {s.id: s for s in seeds}
    for record in gold:
        seed, t = by_id[record.label.seed_id], record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.steps[t].agent == record.label.decisive_agent
        assert record.outcome is not None and record.outcome.success is False and record.harness == seed.harness


def test_a_changed_system_prompt_is_prompt_drift_naming_seed_step_agent_and_the_nearest_requests(seeds):
    seed = seeds[1]
    with pytest.raises(PromptDrift) as info:
        replay(with_command_env(seed, TEAM_PROMPT_SUFFIX=" Be brief."))
    drift = info.value
    first = seed.agent_steps()[0]
    assert (drift.trajectory_id, drift.step, drift.agent) == (seed.id, first.index, first.agent)
    assert drift.nearest and drift.nearest[0]["step"] == first.index and drift.nearest[0]["agent"] == first.agent
    assert "Be brief." in drift.diff and f"trajectory {seed.id} step {first.index} (agent 'manager')" in str(drift)


def test_a_changed_tool_result_is_the_environments_drift_at_that_step(seeds):
    seed = seeds[1]
    tool = next(s for s in seed.steps if s.kind == "tool")
    with pytest.raises(EnvStateDrift) as info:
        replay(with_tool_result(seed, tool.index, "nothing here"))
    assert (info.value.trajectory_id, info.value.step) == (seed.id, tool.index)
