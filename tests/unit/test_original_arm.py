"""The decisiveness check's original arm as data: its job spec travels to any executor, its verdict and config; and
every job kind's spec survives the executors' JSON."""

from __future__ import annotations

import pytest

from failforge.campaign import CampaignConfig
from failforge.environments.agentdojo.gold import ComplianceSpec, InjectionSpec, RefusalSpec
from failforge.gold import ARM_MODE, ArmRun, ArmSpec, OriginalArm, arm_key, parse_job
from failforge.injection import AttemptSpec


def test_a_job_is_parsed_back_as_what_it_was():
    arm = ArmSpec(seed_id="s", step=3, key="k1")
    attempt = AttemptSpec(seed_id="s", step=3, mode="A.5", sample=1, original_arm={"key": "k1"})
    assert parse_job(arm.model_dump_json()) == arm and arm.attempt_id == f"s@3:{ARM_MODE}"
    back = parse_job(attempt.model_dump_json())
    assert (
        isinstance(back, AttemptSpec) and back == attempt and back.attempt_id == "s@3:A.5#1"
    )  # the arm is not part of the id


def _arm(*successes: bool | None, status: str = "measured") -> OriginalArm:
    runs = [ArmRun(success=s, evaluator="agentdojo.utility", live_calls=2, seconds=0.5) for s in successes]
    return OriginalArm(key="k", seed_id="s", step=4, status=status, k=len(runs), temperature=None, runs=runs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "successes, minimum, passes",
    [
        ((True,), 0.5, True),
        ((False,), 0.5, False),
        ((True, False), 0.5, True),
        ((True, False, False), 0.5, False),
        ((None,), 0.5, False),  # no verdict is no success
        ((True, False), 0.6, False),
    ],
)
def test_the_arm_passes_at_its_bound(successes, minimum, passes):
    cfg = CampaignConfig(
        seeds=["x"], output="/tmp/x", filters={"decisiveness": {"original_min_success": minimum}}
    ).filters.decisiveness
    arm = _arm(*successes)
    assert arm.passes(cfg) is passes
    assert arm.verdict()["successes"] == sum(1 for s in successes if s) and arm.live_calls == 2 * len(successes)
    if not passes:
        assert "does not decide the outcome" in arm.why_not_decisive(cfg)


def test_a_drifting_arm_never_passes_and_says_why():
    cfg = CampaignConfig(seeds=["x"], output="/tmp/x").filters.decisiveness
    arm = _arm(status="drift").model_copy(
        update={"error": {"message": "step 2: tool returned a different observation"}}
    )
    assert not arm.passes(cfg) and "does not replay up to step 4" in arm.why_not_decisive(cfg)


def test_the_key_changes_with_the_config_the_seed_and_the_step():
    keys = {arm_key("c1", "s1", 1), arm_key("c2", "s1", 1), arm_key("c1", "s2", 1), arm_key("c1", "s1", 2)}
    assert len(keys) == 4 and arm_key("c1", "s1", 1) == arm_key("c1", "s1", 1)


def test_decisiveness_is_on_by_default_and_k_sets_both_arms():
    d = CampaignConfig(seeds=["x"], output="/tmp/x").filters.decisiveness
    assert d.enabled and d.original_k == 1 and d.injected_k == 1 and d.temperature is None
    both = CampaignConfig(seeds=["x"], output="/tmp/x", filters={"decisiveness": {"k": 3}}).filters.decisiveness
    assert both.original_k == both.injected_k == 3
    with pytest.raises(ValueError, match="not both"):
        CampaignConfig(seeds=["x"], output="/tmp/x", filters={"decisiveness": {"k": 3, "original_k": 2}})


def test_every_job_kind_survives_the_executors_json():
    jobs = [
        InjectionSpec(
            seed_id="s", step=2, vector="v", attack="important_instructions", injection_task="injection_task_1"
        ),
        ComplianceSpec(
            seed_id="s", step=2, vector="v", attack="important_instructions", injection_task="injection_task_1"
        ),
        RefusalSpec(seed_id="s", step=1),
        AttemptSpec(seed_id="s", step=1, mode="A.1"),
    ]
    for job in jobs:
        back = parse_job(job.model_dump_json())
        assert type(back) is type(job) and back == job and back.attempt_id == job.attempt_id
    assert len({j.attempt_id for j in jobs}) == len(jobs)
    assert [j.mode for j in jobs] == [
        "injection:important_instructions",
        "compliance:important_instructions",
        "refusal:injected",
        "A.1",
    ]
