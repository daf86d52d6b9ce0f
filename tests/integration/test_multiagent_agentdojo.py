"""The two multi-agent harnesses on the real AgentDojo package: team oracle seeds on all four v1 suites,
replay identical, tampering caught at its step, bad rosters refused with seed, step and agent."""

from __future__ import annotations

import json

import pytest

from failforge.environments.agentdojo import SUITES, list_user_tasks, tool_domains
from failforge.errors import AgentDrift, ConfigError, PromptDrift, RosterError, SeedIntegrityError
from failforge.harnesses import harness_from_spec
from failforge.replay import replay
from failforge.seeds import oracle_seed
from failforge.trajectory import Trajectory

HARNESSES = ("orchestrator-workers", "plan-execute-verify")
ONE_TASK_PER_SUITE = {
    "workspace": "user_task_0",
    "travel": "user_task_0",
    "banking": "user_task_3",
    "slack": "user_task_2",
}
KNOWN_BAD_GROUND_TRUTH = {"workspace/user_task_7"}


def _copy(seed: Trajectory) -> Trajectory:
    return Trajectory.model_validate(json.loads(seed.model_dump_json()))


@pytest.fixture(scope="module")
def team_seeds() -> dict[tuple[str, str], Trajectory]:
    return {
        (h, suite): oracle_seed("agentdojo", f"{suite}/{task}", harness=h)
        for h in HARNESSES
        for suite, task in ONE_TASK_PER_SUITE.items()
    }


@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize("suite", SUITES)
def test_team_oracle_seed_succeeds_and_replays_identically(team_seeds, harness, suite):
    seed = team_seeds[(harness, suite)]
    assert seed.id == f"agentdojo-{suite}-{ONE_TASK_PER_SUITE[suite]}-{harness}-oracle"
    assert seed.oracle and seed.outcome.success and len(seed.agents) >= 3
    report = replay(seed, raise_on_drift=False)
    assert report.identical, report.drift or report.infrastructure
    assert report.outcome.success
    # every agent step is its agent's stream, in that agent's order; tool steps go back to their caller
    ordinals: dict[str, int] = {}
    for step in seed.steps[1:]:
        assert step.recipient and step.coordinate
        if step.kind == "agent":
            assert step.model_call.stream == step.agent and step.model_call.ordinal == ordinals.get(step.agent, 0)
            ordinals[step.agent] = step.model_call.ordinal + 1
            assert step.model_call.source == "oracle"
        else:
            caller = next(s for s in reversed(seed.steps[: step.index]) if s.kind == "agent")
            assert step.recipient == caller.agent and step.state_fingerprint


def test_harness_specs_record_agents_roles_prompts_tool_split_and_round_limits(team_seeds):
    workspace = team_seeds[("orchestrator-workers", "workspace")]
    config = workspace.harness.config
    assert [w["name"] for w in config["workers"]] == ["email_worker", "calendar_worker", "files_worker"]
    assert {w["name"]: w["tools"] for w in config["workers"]} == {
        f"{d}_worker": tools for d, tools in tool_domains("workspace").items()
    }
    assert config["orchestrator"]["role"] == "orchestrator" and all(w["role"] == "worker" for w in config["workers"])
    assert "email_worker" in config["orchestrator"]["system_prompt"] and all(
        w["system_prompt"] for w in config["workers"]
    )
    assert config["max_rounds"] >= 4 and config["worker_max_calls"] >= 2
    assert workspace.roster == harness_from_spec(workspace.harness).roster()
    assert [p.role for p in workspace.roster] == ["orchestrator", "worker", "worker", "worker"]
    pev = team_seeds[("plan-execute-verify", "travel")]
    cfg = pev.harness.config
    assert [cfg[k]["role"] for k in ("planner", "executor", "verifier")] == ["planner", "executor", "verifier"]
    assert sorted(cfg["executor"]["tools"]) == sorted(t for tools in tool_domains("travel").values() for t in tools)
    assert cfg["executor_max_calls"] >= 4 and cfg["max_send_backs"] == 1
    # a plan purpose-tagged, delegations addressed by their argument, reports to the orchestrator
    steps = workspace.steps
    assert steps[1].model_call.purpose == "plan" and steps[1].recipient == "orchestrator"
    delegations = [s for s in steps if s.agent == "orchestrator" and s.tool_calls]
    assert delegations and all(s.recipient == json.loads(s.tool_calls[0].arguments)["worker"] for s in delegations)
    reports = [s for s in steps if s.kind == "agent" and s.agent.endswith("_worker") and not s.tool_calls]
    assert reports and all(s.recipient == "orchestrator" for s in reports)
    assert (
        steps[-1].agent == "orchestrator"
        and steps[-1].recipient == "user"
        and workspace.final_output() == steps[-1].content
    )


@pytest.mark.slow
@pytest.mark.parametrize("harness", HARNESSES)
def test_all_96_usable_tasks_record_and_replay_identically(harness):
    tasks = [f"{s}/{t}" for s, t in list_user_tasks() if f"{s}/{t}" not in KNOWN_BAD_GROUND_TRUTH]
    assert len(tasks) == 96
    identical, problems = 0, []
    for task in tasks:
        seed = oracle_seed("agentdojo", task, harness=harness)
        if not seed.outcome.success:
            problems.append(f"{task}: the team oracle failed the evaluator")
            continue
        report = replay(seed, raise_on_drift=False)
        identical += report.identical
        if not report.identical:
            problems.append(f"{task}: {report.drift or report.infrastructure}")
    assert problems == [] and identical == 96


# --- tampering ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def banking_team(team_seeds) -> Trajectory:
    return team_seeds[("orchestrator-workers", "banking")]


def test_a_call_attributed_to_another_agent_is_agent_drift_at_that_step(banking_team):
    k = next(s.index for s in banking_team.steps if s.agent == "banking_worker")
    for also_stream in (True, False):
        bad = _copy(banking_team)
        bad.steps[k].agent = "files_worker"
        if also_stream:
            bad.steps[k].model_call.stream = "files_worker"
        with pytest.raises(AgentDrift) as info:
            replay(bad)
        assert info.value.step == k and (info.value.expected, info.value.actual) == ("files_worker", "banking_worker")
        assert "'files_worker'" in str(info.value) and "'banking_worker'" in str(info.value)


def test_a_reordered_pair_of_two_agents_calls_is_agent_drift_at_the_first(banking_team):
    i = next(s.index for s in banking_team.steps if s.agent == "orchestrator" and s.tool_calls)
    assert banking_team.steps[i + 1].agent == "banking_worker"
    bad = _copy(banking_team)
    first, second = bad.steps[i], bad.steps[i + 1]
    bad.steps[i], bad.steps[i + 1] = second.model_copy(update={"index": i}), first.model_copy(update={"index": i + 1})
    with pytest.raises(AgentDrift) as info:
        replay(bad)
    assert info.value.step == i and (info.value.expected, info.value.actual) == ("banking_worker", "orchestrator")
    assert f"next recorded call is step {i + 1}" in str(info.value)


def test_an_edited_worker_report_is_refused_at_that_step(banking_team):
    k = next(s.index for s in banking_team.steps if s.agent == "banking_worker" and not s.tool_calls)
    bad = _copy(banking_team)
    bad.steps[k].content = "get_most_recent_transactions returned: nothing"
    with pytest.raises(SeedIntegrityError) as info:
        replay(bad)
    assert info.value.step == k and "content" in str(info.value)
    # the response edited as well (consistently): the response hash refuses it at the same step
    bad.steps[k].model_call.response["choices"][0]["message"]["content"] = bad.steps[k].content
    with pytest.raises(SeedIntegrityError) as info:
        replay(bad)
    assert info.value.step == k and "'banking_worker'" in str(info.value)
    # and without the hash (an older record), the orchestrator's next request gives it away
    bad.steps[k].model_call.response_hash = None
    with pytest.raises(PromptDrift) as info:
        replay(bad)
    assert info.value.step == k + 1 and "returned: nothing" in info.value.diff


# --- bad rosters ----------------------------------------------------------------------------------


def test_a_seed_step_naming_an_agent_the_harness_does_not_have_names_seed_step_and_agent(banking_team):
    bad = _copy(banking_team)
    k = next(s.index for s in bad.steps if s.agent == "account_worker" or s.agent == "banking_worker")
    data = json.loads(bad.model_dump_json())
    data["steps"][k]["agent"] = data["steps"][k]["model_call"]["stream"] = "audit_worker"
    data["roster"].append({**data["roster"][1], "name": "audit_worker"})
    data["agents"].append("audit_worker")
    seed = Trajectory.model_validate(data)  # consistent in itself: only the harness lacks the agent
    with pytest.raises(RosterError) as info:
        replay(seed)
    assert info.value.trajectory_id == seed.id and info.value.step == k and info.value.actual == "audit_worker"
    assert "does not have" in str(info.value)


def test_an_unknown_role_in_the_harness_spec_names_seed_step_and_agent(banking_team):
    bad = _copy(banking_team)
    bad.harness.config["workers"][0]["role"] = "wizard"
    with pytest.raises(RosterError) as info:
        replay(bad)
    first = next(s.index for s in bad.steps if s.agent == bad.harness.config["workers"][0]["name"])
    assert info.value.step == first and "'wizard'" in str(info.value) and "'banking_worker'" in str(info.value)


def test_an_environment_without_a_tool_split_is_refused_for_a_team():
    with pytest.raises(ConfigError, match="tool_domains"):
        oracle_seed("miniwob", "click-button", {"cache_dir": "/tmp/unused-cache"}, harness="orchestrator-workers")
