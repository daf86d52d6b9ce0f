"""TextWorld games, for real (textworld 1.7, games made by tw-make): oracle seeds from the walkthrough are
won and replay identically, the environment passes failforge's self-check, a regenerated different game
file is a drift naming the file, a command the game rejects is the agent's recorded action, and a game
id that does not exist is exit 2. A small slice; scripts/textworld_seeds_all.py runs all 60 games."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests._required import require

from failforge.environments import environment
from failforge.environments.textworld_env import TextWorldDrift, default_cache_dir, game_path
from failforge.fidelity import self_check
from failforge.injection._planner import step_context
from failforge.replay import replay
from failforge.runlog import Plan, RunLog
from failforge.seeds import env_spec, oracle_seed
from failforge.taxonomy import applicable_modes

require("textworld")

GAMES = ["simple-dense/1", "simple-balanced/1"]


@pytest.mark.parametrize("game", GAMES)
def test_walkthrough_seed_is_won_and_replays_identically(game):
    seed = oracle_seed("textworld", game)
    assert seed.id == f"textworld-{game.replace('/', '-')}-oracle" and seed.oracle
    assert seed.outcome is not None and seed.outcome.success and seed.outcome.details["won"] is True
    assert seed.outcome.details["score"] == seed.outcome.details["max_score"] > 0
    tools = [s for s in seed.steps if s.kind == "tool"]
    walkthrough = environment("textworld").walkthrough(seed.environment)
    assert [s.tool_arguments for s in tools] == [{"text": c} for c in walkthrough]
    assert set(tools[0].state_parts or {}) == {"facts", "location", "inventory", "score", "moves", "ended"}
    assert seed.environment.config["game_sha256"] and seed.environment.config["tw_make"][0] in (
        "tw-simple",
        "tw-cooking",
    )
    report = replay(seed, raise_on_drift=False)
    assert report.identical, report.drift
    assert report.outcome is not None and report.outcome.success


def test_environment_self_check():
    report = self_check("textworld", GAMES[0])
    assert report.passed, report.summary()


def test_taxonomy_applies_to_game_steps():
    seed = oracle_seed("textworld", GAMES[0])
    agent_steps = [s for s in seed.steps if s.kind == "agent"]
    first, later, final = agent_steps[0], agent_steps[3], agent_steps[-1]
    codes = lambda step: {m.code for m in applicable_modes(step_context(seed, step))}  # noqa: E731
    assert {"A.2", "A.5"} <= codes(first) and "A.6" not in codes(first)  # nothing to repeat yet
    assert {"A.2", "A.5", "A.6"} <= codes(later)  # a wrong command, stopping early, a loop of a command
    assert "A.5" not in codes(final) and "A.2" not in codes(final)  # the final answer has no command


def test_changed_game_file_is_a_drift_naming_the_file(tmp_path: Path):
    src = game_path(default_cache_dir(), "simple-dense", 1)
    oracle_seed("textworld", GAMES[0])  # makes sure the game exists
    cache = tmp_path / "cache"
    copy = game_path(cache, "simple-dense", 1)
    copy.parent.mkdir(parents=True)
    for name in ("game.z8", "game.json"):
        shutil.copy(src.parent / name, copy.parent / name)
    seed = oracle_seed("textworld", GAMES[0], {"cache_dir": str(cache)})
    data = bytearray(copy.read_bytes())
    data[-1] ^= 0xFF
    copy.write_bytes(bytes(data))
    with pytest.raises(TextWorldDrift) as info:
        environment("textworld").open(seed.environment)
    assert str(copy) in str(info.value)


def test_rejected_command_is_the_agents_recorded_action():
    spec = env_spec("textworld", GAMES[0])
    log = RunLog(trajectory_id="rejected", plan=Plan.record())
    with environment("textworld").open(spec) as episode:
        before = episode.fingerprint()
        answer = episode.toolbox(log).call("command", '{"text": "fly to the moon"}', "c1")
        step = log.steps[-1]
        assert step.kind == "tool" and step.tool_arguments == {"text": "fly to the moon"} and step.error is None
        assert answer == step.content and "not a verb" in answer.lower()
        assert episode.fingerprint().parts["facts"] == before.parts["facts"]
        assert episode.evaluate(None, log.steps).success is False


def test_unknown_game_id_exits_2(tmp_path: Path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from failforge.cli import main; main()",
            "seeds",
            "textworld",
            "--task",
            "cooking-9/1",
            "-o",
            str(tmp_path / "s.jsonl"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, (done.stdout[-300:], done.stderr[-800:])
    assert "Traceback" not in done.stderr and "cooking-9/1" in done.stdout + done.stderr
