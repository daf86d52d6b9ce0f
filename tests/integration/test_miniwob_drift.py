"""DOM fidelity: a changed page stops replay at the first affected step with a DomDrift that shows the change."""

from __future__ import annotations

import pytest

from _required import require

require("chromium")

from failforge.errors import DomDrift  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.trajectory import Trajectory  # noqa: E402


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("miniwob-drift-cache"))


@pytest.fixture(scope="module")
def password_seed(cache_dir: str) -> Trajectory:
    return oracle_seed("miniwob", "enter-password", {"cache_dir": cache_dir})


@pytest.fixture(scope="module")
def button_seed(cache_dir: str) -> Trajectory:
    return oracle_seed("miniwob", "click-button", {"cache_dir": cache_dir})


def _with_config(trajectory: Trajectory, /, **changes: object) -> Trajectory:
    config = {**trajectory.environment.config, **changes}
    return trajectory.model_copy(update={"environment": trajectory.environment.model_copy(update={"config": config})})


def _tool_step_of_action(seed: Trajectory, k: int) -> int:
    return [s.index for s in seed.steps if s.kind == "tool"][k]


def test_another_episode_seed_drifts_at_step_zero_and_shows_the_new_page(button_seed: Trajectory) -> None:
    other = _with_config(button_seed, seed=button_seed.environment.config["seed"] + 1)
    with pytest.raises(DomDrift) as info:
        replay(other)
    drift = info.value
    assert drift.step == 0 and drift.trajectory_id == button_seed.id
    assert "instruction differs" in drift.message
    # the diff shows recorded and replayed lines of the page (bids, tags, text)
    removed = [line for line in drift.diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in drift.diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert removed and added
    assert any('button "' in line for line in removed + added) or any(
        "Click on the" in line for line in removed + added
    )


def test_mutated_visible_node_stops_replay_at_the_first_affected_step(password_seed: Trajectory) -> None:
    fault = {"after_action": 1, "script": "document.querySelector('#subbtn').textContent = 'Sabotaged'"}
    mutated = _with_config(password_seed, dom_faults=[fault])
    expected_step = _tool_step_of_action(password_seed, 1)
    report = replay(mutated, raise_on_drift=False)
    drift = report.drift
    assert isinstance(drift, DomDrift)
    assert drift.step == expected_step and report.steps_replayed == expected_step
    assert "different observation" in drift.message
    assert any(line.startswith("-") and '"Submit"' in line for line in drift.diff.splitlines())
    assert any(line.startswith("+") and '"Sabotaged"' in line for line in drift.diff.splitlines())
    assert "button#subbtn" in drift.diff


def test_mutated_node_the_agent_cannot_see_is_caught_by_the_fingerprint(password_seed: Trajectory) -> None:
    """An attribute outside the observation text changes only the fingerprint; the error names the node."""
    fault = {"after_action": 0, "script": "document.querySelector('#verify').setAttribute('data-evil', '1')"}
    mutated = _with_config(password_seed, dom_faults=[fault])
    with pytest.raises(DomDrift) as info:
        replay(mutated)
    drift = info.value
    assert drift.step == _tool_step_of_action(password_seed, 0)
    assert "state fingerprint" in drift.message and "input#verify" in drift.message
    assert 'data-evil="1"' in drift.diff  # the replayed node line, next to the recorded one
    assert "input#verify" in drift.diff


def test_mutation_before_the_first_observation_drifts_at_step_zero(button_seed: Trajectory) -> None:
    fault = {
        "after_action": -1,
        "script": "document.querySelector('#area').insertAdjacentHTML('beforeend', '<b>intruder</b>')",
    }
    with pytest.raises(DomDrift) as info:
        replay(_with_config(button_seed, dom_faults=[fault]))
    assert info.value.step == 0
    assert "intruder" in info.value.diff


def test_changed_settle_time_is_drift_not_silence(password_seed: Trajectory) -> None:
    """Virtual time is part of the recorded world: MiniWoB's time-scaled reward and timer depend on it."""
    report = replay(
        _with_config(password_seed, settle_ms=password_seed.environment.config["settle_ms"] + 250), raise_on_drift=False
    )
    assert isinstance(report.drift, DomDrift)
    assert report.drift.step is not None and report.drift.step > 0
    assert "~episode" in report.drift.message or "different observation" in report.drift.message
