"""The TextWorld plugin's own logic, without running a game: task ids, the game file's identity, the
game's answer as the agent sees it, the fingerprint's parts. Games themselves are exercised in
tests/integration/test_textworld_*.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.environments import environment
from failforge.environments.textworld_env import (
    RECIPES,
    TextWorldDrift,
    TextWorldOptions,
    _location,
    feedback,
    game_sha256,
    generate_game,
    parse_task_id,
)
from failforge.errors import ConfigError, EnvironmentDrift


def test_default_set_is_60_games_with_stable_ids():
    plugin = environment("textworld")
    ids = plugin.tasks(TextWorldOptions())
    assert len(ids) == 60 == len(set(ids))
    assert ids[:2] == ["simple-dense/1", "simple-dense/2"] and ids[-1] == "cooking-3/10"
    assert plugin.tasks(TextWorldOptions(recipe=["cooking-1"], seeds=3)) == [
        "cooking-1/1",
        "cooking-1/2",
        "cooking-1/3",
    ]
    assert issubclass(plugin.drift_error, EnvironmentDrift) and plugin.drift_error is TextWorldDrift


@pytest.mark.parametrize("bad", ["cooking-9/1", "cooking-1", "cooking-1/x", "nope/3", ""])
def test_unknown_game_id_is_a_config_error_naming_the_form(bad):
    with pytest.raises(ConfigError, match="RECIPE/SEED"):
        parse_task_id(bad)


def test_unknown_recipe_option_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown TextWorld recipe 'hard'"):
        environment("textworld").tasks(TextWorldOptions(recipe=["hard"]))


def test_game_hash_ignores_the_serial_number_only(tmp_path: Path):
    header = bytearray(b"\x08" * 64 + b"story")
    header[18:24] = b"261201"
    a, b = tmp_path / "a.z8", tmp_path / "b.z8"
    a.write_bytes(bytes(header))
    header[18:24] = b"270315"  # compiled on another day: the same game
    b.write_bytes(bytes(header))
    assert game_sha256(a) == game_sha256(b)
    header[40] = 0  # a different byte anywhere else: another game
    b.write_bytes(bytes(header))
    assert game_sha256(a) != game_sha256(b)


def test_feedback_drops_the_prompt_and_status_line():
    raw = "\nYou open the antique trunk.\n\n>          " + " " * 100 + "-= Bedroom =-1/8"
    assert feedback(raw) == "You open the antique trunk."
    assert feedback("  no prompt here \n") == "no prompt here"


def test_location_comes_from_the_player_fact():
    facts = sorted(["at(apple: f, kitchen: r)", "at(P, living room: r)", "closed(toilet: c)"])
    assert _location(facts) == "living room"
    assert _location(["closed(toilet: c)"]) == ""


def test_missing_game_that_cannot_be_made_names_file_and_install_command(tmp_path: Path, monkeypatch):
    monkeypatch.setattr("failforge.environments.textworld_env.tw_make", lambda: str(tmp_path / "no-tw-make"))
    with pytest.raises(ConfigError) as info:
        generate_game(tmp_path, "cooking-1", 1)
    message = str(info.value)
    assert "\n" not in message
    assert (
        str(tmp_path / "cooking-1" / "seed-1" / "game.z8") in message
        and "scripts/benchmarks/install_textworld.sh" in message
    )


def test_recipes_are_tw_make_challenges():
    assert {args[0] for args in RECIPES.values()} == {"tw-simple", "tw-cooking"}
