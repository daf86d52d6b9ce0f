"""``[plan.injections]``: validation with one-line errors naming the valid names, planning next to the mode
attempts (per suite, with the reasons steps are not planned). On the real AgentDojo (its attacks, vectors and
injection tasks name the valid values): an integration test. That every job kind survives an executor's JSON is
a unit test (tests/unit/test_original_arm.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _required import require
from failforge.campaign import CampaignConfig, load_campaign, plan_campaign
from failforge.environments.agentdojo.gold import ComplianceSpec, InjectionSpec, RefusalSpec
from failforge.errors import ConfigError
from failforge.injection import AttemptSpec

require("agentdojo")

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


def _file(tmp_path: Path, table: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f'seeds = ["{BUNDLED}"]\noutput = "out"\n[plan.injections]\n{table}\n')
    return path


@pytest.mark.parametrize(
    ("table", "field", "named"),
    [
        ('attacks = ["important_instruction"]', "plan.injections.attacks", "important_instructions"),
        ('vectors = ["injection_nowhere"]', "plan.injections.vectors", "injection_incoming_transaction"),
        (
            'injection_tasks = ["injection_task_99"]',
            "plan.injections.injection_tasks",
            "injection_task_0, injection_task_1, injection_task_2",
        ),
        ("steps_per_seed = 0", "plan.injections.steps_per_seed", "greater than or equal to 1"),
        ("modes = true", "plan.injections.modes", "Extra inputs"),
    ],
)
def test_bad_injection_table_is_one_line_naming_the_field_and_the_valid_names(tmp_path, table, field, named):
    with pytest.raises(ConfigError) as error:
        load_campaign(_file(tmp_path, table))
    message = str(error.value)
    assert "\n" not in message and f"field '{field}'" in message and named in message


def test_injections_change_the_hash_and_leave_campaigns_without_them_as_they_were(tmp_path):
    plain = CampaignConfig(seeds=[str(BUNDLED)], output=str(tmp_path / "o"))
    assert plain.plan.injections is None
    with_injections = CampaignConfig(seeds=[str(BUNDLED)], output=str(tmp_path / "o"), plan={"injections": {}})
    assert plain.config_hash() != with_injections.config_hash()
    # A campaign without the table hashes as before the table existed: the key is left out, not hashed as null.
    import failforge.gold as config_module
    from failforge.canonical import canonical_hash
    from failforge.secrets import redact

    data = plain.model_dump(mode="json", exclude={"output", "pools"})
    data.update(executor="local", ray_address=None, concurrency=1)
    data.pop("agent_cmd")
    data.pop("decision_judge")
    data["plan"].pop("injections")
    data["plan"].pop("step_policy")
    assert plain.config_hash() == canonical_hash(json.loads(redact(json.dumps(data))))[:16]
    assert config_module.InjectionsConfig().attacks == ["important_instructions"]


def test_plan_emits_injection_jobs_beside_mode_attempts_with_the_reasons(tmp_path):
    from failforge.trajectory import load_jsonl

    seeds, _ = load_jsonl(BUNDLED)
    both = CampaignConfig(
        seeds=[str(BUNDLED)],
        output=str(tmp_path / "o"),
        plan={"injections": {"refusals": True, "compliance": True, "vectors": ["injection_incoming_transaction"]}},
    )
    plan, why = plan_campaign(both, seeds)
    kinds = {type(spec) for _, spec in plan}
    assert kinds == {AttemptSpec, InjectionSpec, ComplianceSpec, RefusalSpec}
    injected = [spec for _, spec in plan if isinstance(spec, InjectionSpec)]
    assert {s.seed_id for s in injected} == {
        "agentdojo-banking-user_task_1-oracle",
        "agentdojo-banking-user_task_3-oracle",
    }  # the vector is banking's
    assert all(s.vector == "injection_incoming_transaction" and s.step == 2 for s in injected)
    assert len([s for _, s in plan if isinstance(s, ComplianceSpec)]) == len(injected)  # one flip per injected point
    assert len([s for _, s in plan if isinstance(s, RefusalSpec)]) == 2  # refusals only for the seeds that are planned
    assert any("suite slack has none of the requested vectors" in w for w in why)
    assert any(
        w.startswith("agentdojo-banking-user_task_3-oracle@4: send_money shows no injection vector") for w in why
    )
    only, _ = plan_campaign(
        CampaignConfig(seeds=[str(BUNDLED)], output=str(tmp_path / "o"), plan={"injections": {"only": True}}), seeds
    )
    assert only and not [s for _, s in only if isinstance(s, AttemptSpec)]
    assert plan_campaign(both, seeds) == (plan, why)  # seeded: the same plan every time (resume relies on it)
    ids = [spec.attempt_id for _, spec in plan]
    assert len(ids) == len(set(ids))
