"""MiniWoB++ demonstration seeds: recorded through the real harness, replayed with zero drift.

Real headless Chromium (Debian's), the real ``miniwob`` package, no network. Every demonstration seed
is recorded once and replayed once here (``FAILFORGE_MINIWOB_REPLAYS=10`` replays each ten times);
three of them are always replayed ten times in a row.
"""

from __future__ import annotations

import json
import os

import pytest

from _required import require

require("chromium")

from failforge.environments import open_environment  # noqa: E402
from failforge.environments.miniwob import DEMO_TASKS, MiniWoBEpisode  # noqa: E402
from failforge.injection import branch  # noqa: E402
from failforge.llm import OracleResponder  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.trajectory import ComponentSpec, Trajectory, load_jsonl, write_jsonl  # noqa: E402

TEN_TIMES = ("click-checkboxes", "email-inbox-forward", "use-spinner")
REPLAYS = int(os.environ.get("FAILFORGE_MINIWOB_REPLAYS", "1"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("miniwob-cache"))


@pytest.fixture(scope="module")
def seeds(cache_dir: str) -> dict[str, Trajectory]:
    return {task: oracle_seed("miniwob", task, {"cache_dir": cache_dir}) for task in DEMO_TASKS}


def _signature(outcome) -> tuple:
    return (outcome.success, outcome.score, outcome.details["reward"], outcome.details["reason"])


def test_at_least_fifteen_varied_demonstrations_succeed(seeds: dict[str, Trajectory]) -> None:
    assert len(seeds) >= 15
    kinds = {
        "click-button",
        "click-link",
        "click-dialog",
        "click-checkboxes",
        "click-option",
        "enter-text",
        "enter-password",
        "login-user",
        "focus-text",
        "click-tab",
        "choose-list",
        "navigate-tree",
        "click-collapsible",
        "enter-date",
        "use-spinner",
    }
    assert kinds <= set(seeds)
    assert any(t.startswith("email-inbox") for t in seeds)
    for task, seed in seeds.items():
        assert seed.outcome is not None and seed.outcome.success, (task, seed.outcome)
        assert seed.outcome.details["done"] and seed.outcome.score == 1.0
        assert seed.oracle and seed.environment.name == "miniwob"
        assert seed.environment.config["cache_mode"] == "replay"
        agent_steps = seed.agent_steps()
        assert agent_steps and all(s.model_call is not None and s.model_call.source == "oracle" for s in agent_steps)
        # the last model call reads the page the previous tool returned, with bids
        last_request = agent_steps[-1].model_call.request
        assert "[" in last_request["messages"][-1]["content"]
        tool_steps = [s for s in seed.steps if s.kind == "tool"]
        assert tool_steps and all(s.state_fingerprint and s.state_parts for s in tool_steps)


@pytest.mark.parametrize("task", DEMO_TASKS)
def test_every_demonstration_replays_without_drift(seeds: dict[str, Trajectory], task: str) -> None:
    seed = seeds[task]
    for _ in range(REPLAYS):
        report = replay(seed, raise_on_drift=False)
        assert report.drift is None, str(report.drift)
        assert report.infrastructure is None
        assert report.identical and report.steps_replayed == len(seed.steps)
        assert _signature(report.outcome) == _signature(seed.outcome)


@pytest.mark.slow
@pytest.mark.parametrize("task", TEN_TIMES)
def test_ten_replays_in_a_row_same_reward(seeds: dict[str, Trajectory], task: str) -> None:
    seed = seeds[task]
    signatures = set()
    for _ in range(10):
        report = replay(seed, raise_on_drift=False)
        assert report.drift is None, str(report.drift)
        assert report.infrastructure is None
        signatures.add(_signature(report.outcome))
    assert signatures == {_signature(seed.outcome)}


def test_seed_survives_jsonl_and_replays_from_the_file(seeds: dict[str, Trajectory], tmp_path) -> None:
    path = tmp_path / "miniwob.jsonl"
    write_jsonl(path, [seeds["login-user"], seeds["email-inbox-reply"]])
    loaded, errors = load_jsonl(path)
    assert not errors and [s.id for s in loaded] == [seeds["login-user"].id, seeds["email-inbox-reply"].id]
    for seed in loaded:
        assert replay(seed).identical


def test_prefix_replay_stops_at_the_branch_point(seeds: dict[str, Trajectory]) -> None:
    seed = seeds["enter-password"]
    t = [s.index for s in seed.steps if s.kind == "agent"][2]
    report = replay(seed, until=t)
    assert report.identical and report.steps_replayed == t


def test_branch_runs_the_same_pipeline_and_the_evaluator_confirms_failure(seeds: dict[str, Trajectory]) -> None:
    """Replay click-checkboxes to its first model call, inject 'submit right away', continue live."""
    seed = seeds["click-checkboxes"]
    assert len([s for s in seed.steps if s.kind == "tool"]) >= 2, "seed must need at least one checkbox click"

    def wrong_agent(ordinal: int, body: dict) -> tuple[str | None, list | None]:
        if ordinal == 0:
            page = next(m for m in body["messages"] if m["role"] == "user")["content"]
            submit = next(line for line in page.splitlines() if "button#subbtn" in line)
            bid = submit.strip().split("]")[0].lstrip("[")
            return None, [
                {
                    "id": "call_live_0",
                    "type": "function",
                    "function": {"name": "click", "arguments": json.dumps({"bid": bid})},
                }
            ]
        return "Submitted.", None

    result = branch(
        seed,
        1,
        note="Submit without selecting anything.",
        agent=OracleResponder(wrong_agent, name="wrong-agent"),
        agent_model=ComponentSpec(name="scripted"),
        branch_id="miniwob-branch-test",
    )
    trajectory = result.trajectory
    assert trajectory.steps[0].comparable() == seed.steps[0].comparable()
    assert trajectory.steps[1].phase == "injected" and trajectory.steps[2].phase == "live"
    assert trajectory.outcome is not None and trajectory.outcome.success is False
    assert trajectory.outcome.details["done"] is True and trajectory.outcome.details["raw_reward"] <= 0


def test_registry_rebuilds_the_episode_from_the_recorded_spec(seeds: dict[str, Trajectory]) -> None:
    seed = seeds["click-tab"]
    with open_environment(seed.environment) as episode:
        assert isinstance(episode, MiniWoBEpisode)
        assert episode.instruction() == seed.steps[0].content
        record = episode.task_record()
        assert record.benchmark == "miniwob" and record.task_id == "click-tab"
        assert record.metadata["chromium_version"] and record.metadata["miniwob_version"]
