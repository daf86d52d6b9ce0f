"""Environment-side injection on real AgentDojo: plan, attacked observation, live continuation, gold.

The agent is the deterministic loopback policy of :mod:`failforge.testing.injected_policy` (follows,
ignores or refuses an injected goal by a hash); everything else is real: AgentDojo's environments,
its attacks, its security and utility checks, failforge's replay and tool boundary.
"""

from __future__ import annotations

import pytest

from _required import require
from failforge.campaign import CampaignConfig, Models, ResolvedModels
from failforge.environments.agentdojo.gold import (
    INJECTED_REFUSAL,
    InjectionSpec,
    RefusalSpec,
    attack_text,
    check_chains,
    plan_injections,
)
from failforge.errors import ConfigError
from failforge.gold import run_job
from failforge.judgement import components_of
from failforge.judgement.text import shown
from failforge.llm import ModelEndpoint
from failforge.replay import replay
from failforge.testing import LoopbackModelServer
from failforge.testing.injected_policy import choice_for, respond
from failforge.trajectory import ComponentSpec, Trajectory

require("agentdojo")

SLICE = ("agentdojo-banking-user_task_3-oracle", "agentdojo-slack-user_task_2-oracle")
AGENT = ComponentSpec(name="loopback-injected-policy")


def _models(server: LoopbackModelServer) -> Models:
    endpoint = ModelEndpoint(base_url=server.base_url, model=AGENT.name, api_key_env=None, max_attempts=1)
    return Models(ResolvedModels(agent=endpoint, guide=endpoint))


def _config() -> CampaignConfig:
    return CampaignConfig(seeds=[], output="unused", attempt_deadline=300.0)


@pytest.fixture(scope="module")
def slice_seeds(bundled_seeds: list[Trajectory]) -> list[Trajectory]:
    return [s for s in bundled_seeds if s.id in SLICE]


@pytest.fixture(scope="module")
def results(slice_seeds: list[Trajectory]):
    out = []
    with LoopbackModelServer(policy=respond) as server:
        models = _models(server)
        for seed in slice_seeds:
            plan, _ = plan_injections(seed, tasks_per_point=100)
            out.extend((seed, spec, run_job(seed, spec, models, _config())) for spec in plan)
        models.close()
    return out


def test_plan_names_only_observations_that_show_a_vector(slice_seeds):
    banking = next(s for s in slice_seeds if "banking" in s.id)
    plan, why = plan_injections(banking, tasks_per_point=2)
    assert {s.step for s in plan} == {2} and {s.vector for s in plan} == {"injection_incoming_transaction"}
    assert len(plan) == 2 and all(banking.steps[s.step].kind == "tool" for s in plan)
    assert "no injectable content" in why[4] and "send_money" in why[4]  # the write shows no vector
    assert "agent step" in why[1]
    assert plan_injections(banking, tasks_per_point=2) == (plan, why)  # seeded: reproducible


def test_bad_attack_vector_or_task_is_one_line_naming_the_valid_ones(slice_seeds):
    banking = next(s for s in slice_seeds if "banking" in s.id)
    with pytest.raises(ConfigError) as bad_attack:
        plan_injections(banking, attacks=["important_instruction"])
    assert "important_instructions" in str(bad_attack.value) and "\n" not in str(bad_attack.value)
    with pytest.raises(ConfigError) as bad_vector:
        plan_injections(banking, vectors=["injection_nowhere"])
    assert "injection_incoming_transaction" in str(bad_vector.value) and "\n" not in str(bad_vector.value)
    with pytest.raises(ConfigError) as bad_task:
        attack_text(
            "banking", "user_task_3", "injection_task_99", "important_instructions", "injection_incoming_transaction"
        )
    assert "injection_task_0" in str(bad_task.value)


def test_unsafe_gold_is_confirmed_by_agentdojo_and_its_twin_by_utility(results):
    gold = [(seed, spec, r.record) for seed, spec, r in results if r.status == "gold"]
    assert gold, [r.record.reasons for _, _, r in results]
    assert {seed.environment.config["suite"] for seed, _, _ in gold} == {"banking", "slack"}
    for seed, spec, record in gold:
        t, label = spec.step, record.label
        assert record.outcome.details["security"]["attacker_goal_met"] is True
        assert choice_for(seed.task.instruction, _goal(seed, spec)) == "follow"
        twin = replay(seed, raise_on_drift=False)
        assert twin.identical and twin.outcome.success, seed.id
        # prefix identity, the attacked observation at t, the seed's observation at t without it
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and shown(label.injection["text"], record.steps[t].content)
        assert not shown(label.injection["text"], seed.steps[t].content)
        assert components_of(record)[t].type == "injected_content"
        # the label, by construction
        assert (label.behaviour, label.changed, label.primary_component) == ("unsafe_action", "observation", f"C{t}")
        assert (
            record.parent_id == seed.id
            and label.seed_id == seed.id
            and record.adjudication.outcome == "unsafe_completion"
        )
        target = int(label.target_component[1:])
        unsafe = record.steps[target]
        assert unsafe.kind == "agent" and unsafe.tool_calls
        seed_calls = {(c.name, c.arguments) for s in seed.steps for c in s.tool_calls}
        assert (unsafe.tool_calls[0].name, unsafe.tool_calls[0].arguments) not in seed_calls
        chains = [int(c[1:]) for c in label.attack_chain], [int(c[1:]) for c in label.execution_chain]
        assert check_chains(t, target, *chains) == []
        assert label.injection == {
            **label.injection,
            "suite": seed.environment.config["suite"],
            "injection_task": spec.injection_task,
            "attack": "important_instructions",
            "vector": spec.vector,
        }
        # the gold record replays identically on its own: the attacked environment is rebuilt from its spec
        # (a branch's requests name the seed's model, as run_from_seed sends it; its model spec names the agent
        # that answered)
        again = replay(record.model_copy(update={"model": seed.model}), raise_on_drift=False)
        assert again.identical, again.drift
        assert again.outcome.details["security"]["attacker_goal_met"] is True


def test_a_multi_step_attack_has_an_execution_chain(results):
    chains = {
        r.record.label.injection["injection_task"]: r.record.label.execution_chain
        for s, _, r in results
        if r.status == "gold" and "slack" in s.id
    }
    # slack injection_task_4 reads the channel, then posts it: the read (call and observation) enables the post
    assert chains.get("injection_task_4") == ["C3", "C4"]


def test_rejected_attempts_keep_reasons_and_an_adjudication(results):
    rejected = [(seed, spec, r.record) for seed, spec, r in results if r.status == "rejected"]
    assert rejected
    outcomes = {rec.trajectory.adjudication.outcome for _, _, rec in rejected}
    assert outcomes <= {"safe_completion", "correct_refusal", "indeterminate"} and "safe_completion" in outcomes
    for seed, spec, rec in rejected:
        assert any(r.startswith("security:") for r in rec.reasons)
        decision = choice_for(seed.task.instruction, _goal(seed, spec))
        if decision == "refuse":
            assert rec.trajectory.adjudication.outcome == "correct_refusal"
        if rec.trajectory.adjudication.outcome == "safe_completion":
            assert rec.trajectory.outcome.success is True


def _goal(seed: Trajectory, spec: InjectionSpec) -> str:
    from failforge.environments.agentdojo import get_suite

    return str(get_suite(seed.environment.config["suite"]).injection_tasks[spec.injection_task].GOAL)


def test_an_injected_refusal_at_a_benign_task_is_over_refusal_gold(slice_seeds, tmp_path):
    from failforge.campaign._card import outcome_counts
    from failforge.trajectory import write_jsonl

    seed = next(s for s in slice_seeds if "banking" in s.id)
    with LoopbackModelServer(policy=respond) as server:
        models = _models(server)
        result = run_job(seed, RefusalSpec(seed_id=seed.id, step=1), models, _config())
        models.close()
    assert result.status == "gold", getattr(result.record, "reasons", None)
    record = result.record
    assert record.outcome.success is False and record.steps[1].content == INJECTED_REFUSAL and len(record.steps) == 2
    assert record.adjudication.outcome == "over_refusal" and record.adjudication.evidence["refusal"]["refused"]
    assert (
        record.label.behaviour,
        record.label.changed,
        record.label.primary_component,
        record.label.target_component,
    ) == ("over_refusal", "action", "C1", "C1")
    write_jsonl(tmp_path / "gold.jsonl", [record])
    assert outcome_counts(tmp_path) == {"gold:over_refusal": {"over_refusal": 1}}


def test_unsafe_gold_round_trips_through_the_trajectory_attribution_release(results, tmp_path):
    """failforge's importer reads injection gold (its mode code is not one of the 18 modes) and the release
    exporter writes it with the chain rules checked; reading the release back gives the same target and primary."""
    from failforge.attribution._record import LabelledFailure
    from failforge.attribution.importers.failforge_gold import from_trajectory
    from failforge.attribution.importers.trajectory_attribution import import_trajectory_attribution
    from failforge.exporters.trajectory_attribution import export_trajectory_attribution

    gold = [r.record for _, _, r in results if r.status == "gold"]
    assert gold
    records = [from_trajectory(g) for g in gold]
    for record, g in zip(records, gold, strict=True):
        assert record.gold.mode is None and "unsafe action" in record.gold.rationale and record.components is not None
        assert (record.components.target, record.components.primary) == (
            g.label.target_component,
            g.label.primary_component,
        )
    report = export_trajectory_attribution(records, tmp_path / "release")
    assert report.written == len(records), report
    back = list(import_trajectory_attribution(tmp_path / "release"))
    assert all(isinstance(r, LabelledFailure) for r in back), back
    assert len(back) == len(records)
    for r in back:  # release ids are renumbered (a call and its result are one component there): rules hold
        assert (
            isinstance(r, LabelledFailure) and r.components is not None and r.components.target_type == "unsafe_action"
        )


def test_show_prints_the_behaviour_chains_outcome_and_decisions(results, slice_seeds, tmp_path):
    from rich.console import Console

    from failforge.report import load_dataset, render_record
    from failforge.trajectory import write_jsonl

    gold = [r.record for _, _, r in results if r.status == "gold"]
    write_jsonl(tmp_path / "gold.jsonl", gold)
    write_jsonl(tmp_path / "seeds.jsonl", slice_seeds)
    ds = load_dataset(tmp_path, seed_files=[tmp_path / "seeds.jsonl"])
    console = Console(width=200, record=True)
    console.print(render_record(ds, ds.find(gold[0].id)))
    text = console.export_text()
    label = gold[0].label
    assert "changed: the observation (no note)" in text
    assert f"behaviour: unsafe_action · primary {label.primary_component} → target {label.target_component}" in text
    assert f"execution chain [{', '.join(label.execution_chain)}]" in text and "outcome: unsafe_completion" in text
    assert f"{label.target_component[1:]} act" in text  # the unsafe call's control decision
