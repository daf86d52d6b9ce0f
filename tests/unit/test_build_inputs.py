"""A hostile user's inputs to ``failforge build``: each is a one-line :class:`ConfigError` before anything runs (the
CLI's exit 2), and nothing of the user's is written over. No real parts: every case is refused before a cell runs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from failforge.build import BUILD, ROUNDS, Recipe, cell_stats, run_build
from failforge.build._projection import project
from failforge.build._run import _wall
from failforge.build._stats import CellStats
from failforge.errors import ConfigError
from failforge.jobs import FolderLock, Ledger


def _seeds(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.jsonl"
    path.write_text("", encoding="utf-8")  # never read: the cell names its environment and harness
    return path


def _recipe(seeds: Path | str, **over: Any) -> Recipe:
    cell = {"name": "a", "seeds": [str(seeds)], "environment": "bfcl", "harness": "h", "plan": {"modes": ["A.3"]}}
    return Recipe.model_validate({"cells": [{**cell, **over.pop("cell", {})}], "targets": {"total": 1}, **over})


def _released(release: Path) -> Path:
    """``release`` as a build leaves it (its recipe record), so the release-folder check lets it through."""
    (release / BUILD).mkdir(parents=True)
    (release / BUILD / "recipe.json").write_text("{}", encoding="utf-8")
    return release


def test_a_folder_of_the_users_is_not_written_into(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes", encoding="utf-8")
    with pytest.raises(ConfigError, match="holds files and is not a failforge release"):
        run_build(_recipe(_seeds(tmp_path)), mine)
    assert [p.name for p in mine.iterdir()] == ["README.md"]
    assert (mine / "README.md").read_text(encoding="utf-8") == "my notes"


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_a_seeds_file_that_is_not_a_file_is_refused_before_anything_runs(tmp_path: Path, kind: str) -> None:
    """Even for a cell that names its environment (so nothing reads its seeds to describe it): it used to run,
    fail as "did not run" and write an empty release with exit 1."""
    path = tmp_path / "seeds.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    want = {"missing": "does not exist", "directory": "is a directory", "fifo": "is not a regular file"}[kind]
    with pytest.raises(ConfigError, match=f"cell 'a': seeds file .* {want}"):
        run_build(_recipe(path), tmp_path / "release")
    assert not (tmp_path / "release").exists()


def test_a_changed_campaign_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """Even when no round would run the cell (its target met): the release's recipe would claim a campaign that
    did not make its records."""
    release = _released(tmp_path / "release")
    (release / "cells" / "a").mkdir(parents=True)
    ledger = Ledger(release / "cells" / "a" / "ledger.sqlite")
    ledger.bind("0123456789abcdef")
    ledger.close()
    with pytest.raises(ConfigError, match="cell 'a': .* holds a different campaign .* --force"):
        run_build(_recipe(_seeds(tmp_path)), release)


def test_a_release_being_built_is_not_built_twice_at_once(tmp_path: Path) -> None:
    release = _released(tmp_path / "release")
    with FolderLock(release / BUILD), pytest.raises(ConfigError, match="in use by another failforge run"):
        run_build(_recipe(_seeds(tmp_path)), release)


def test_a_mode_target_no_cell_plans_is_refused(tmp_path: Path) -> None:
    recipe = _recipe(_seeds(tmp_path), targets={"per_mode": {"A.2": 1}})
    with pytest.raises(ConfigError, match="targets.per_mode names A.2, which no cell plans"):
        run_build(recipe, tmp_path / "release")


@pytest.mark.parametrize(
    ("targets", "field"),
    [
        ({"per_environment": {"bfcl": -2}}, "per_environment"),
        ({"per_framework": {"x": 0}}, "per_framework"),
        ({"per_mode": -1}, "per_mode"),
        ({"per_mode": {"A.3": 0}}, "per_mode"),
    ],
)
def test_a_target_below_one_is_refused(targets: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Recipe.model_validate({"cells": [{"name": "a"}], "targets": targets})


def test_cell_names_that_differ_only_in_case_are_refused() -> None:
    with pytest.raises(ValueError, match="'Bfcl' and 'bfcl' differ only in case"):
        Recipe.model_validate({"cells": [{"name": "Bfcl"}, {"name": "bfcl"}]})


def test_a_cell_folder_the_recipe_no_longer_names_is_said(tmp_path: Path) -> None:
    from failforge.build._run import _strays

    (tmp_path / "cells" / "old").mkdir(parents=True)
    (tmp_path / "cells" / "a").mkdir()
    lines = _strays(_recipe("s.jsonl"), tmp_path)
    assert len(lines) == 1 and lines[0].startswith("cells/old is not a cell of this recipe")


def test_foreign_lines_in_a_release_add_nothing_and_stop_nothing(tmp_path: Path) -> None:
    """Valid JSON of the wrong shape (a hand edit, another tool's file) in rounds.jsonl or a cell's records used
    to stop the build with a traceback (KeyError, ValueError, AttributeError)."""
    (tmp_path / BUILD).mkdir()
    (tmp_path / BUILD / ROUNDS).write_text(
        "\n".join(
            json.dumps(row) for row in ({"x": 1}, {"cell": "a", "seconds": "abc"}, [1], {"cell": "a", "seconds": 2})
        )
        + "\n",
        encoding="utf-8",
    )
    assert _wall(tmp_path) == {"a": 2.0}
    cell = tmp_path / "cell"
    cell.mkdir()
    cost = {"models": {"agent": {"calls": "x", "prompt_tokens": 5}}}
    (cell / "gold.jsonl").write_text(
        json.dumps({"provenance": {"attempt_id": "g", "cost": cost}}) + "\n" + json.dumps({"not": "a record"}) + "\n",
        encoding="utf-8",
    )
    rejected = {"attempt_id": "r", "provenance": {"cost": {"models": [1], "seconds": "s"}}, "reasons": 5}
    (cell / "rejected.jsonl").write_text(json.dumps({**rejected, "stage": "filters"}) + "\n", encoding="utf-8")
    (cell / "failed.jsonl").write_text(
        json.dumps({"attempt_id": "f", "error": "s", "stage": "run"}) + "\n", encoding="utf-8"
    )
    stats = cell_stats("c", cell)
    assert (stats.kept, stats.rejected, stats.failed) == (1, 1, 1)  # the line naming no attempt is not counted
    assert stats.spend["agent"].prompt_tokens == 5 and stats.spend["agent"].calls == 0
    assert stats.failed_by == {"run": 1} and stats.rejected_by == {"?": 1}


def test_a_mode_target_not_yet_attempted_is_projected_short() -> None:
    """A mode named in ``per_mode`` that no attempt has reached yet is in the projection, 0 of its target, so the
    build says it is short of it (it used to be left out, and the build said it met its targets)."""
    recipe = Recipe.model_validate({"cells": [{"name": "a"}], "targets": {"per_mode": {"A.2": 2}}})
    stats = {"a": CellStats(cell="a", by_mode={"A.3": {"attempts": 2, "kept": 1}})}
    projection = project(recipe, stats, {"a": None}, {"a": {}}, {})
    assert projection.modes == {"A.2": {"target": 2, "kept": 0, "yield": None, "more_attempts": None}}


def test_a_release_folder_that_is_a_symlink_loop_is_one_line(tmp_path: Path) -> None:
    from failforge.cli import app

    recipe = tmp_path / "recipe.toml"
    recipe.write_text('[[cells]]\nname = "a"\nseeds = ["s.jsonl"]\n', encoding="utf-8")
    (tmp_path / "one").symlink_to(tmp_path / "two")
    (tmp_path / "two").symlink_to(tmp_path / "one")
    result = CliRunner().invoke(app, ["build", str(recipe), "-o", str(tmp_path / "one")])
    assert isinstance(result.exception, ConfigError), result.exception
    assert "cannot be used as the release folder" in str(result.exception)


def test_a_rebuilt_release_keeps_no_rows_of_the_last_run(tmp_path: Path) -> None:
    """Rows the last run exported (a modality, or every row) that this run does not make are not left in data/
    for Who&When Pro's harness to read beside a release that no longer holds their records."""
    from failforge.build._recipe import SplitConfig
    from failforge.build._release import ReleaseSummary, write_release

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "image_gui.jsonl").write_text('{"id": "old"}\n', encoding="utf-8")
    summary = write_release(tmp_path, [], SplitConfig(), "release", ReleaseSummary(), [])
    assert list((tmp_path / "data").glob("*.jsonl")) == []
    assert summary.gold == summary.rows == 0


@pytest.mark.parametrize("name", ["splits.json", "README.md", "build/pilot.json", "build/rounds.jsonl"])
def test_a_release_file_that_is_a_fifo_is_refused_before_anything_runs(tmp_path: Path, name: str) -> None:
    """Writing the release into a FIFO blocked the build for ever after its rounds ran (splits.json, README.md);
    reading one (pilot.json) failed it after its rounds."""
    release = _released(tmp_path / "release")
    os.mkfifo(release / name)
    with pytest.raises(ConfigError, match="is not a regular file"):
        run_build(_recipe(_seeds(tmp_path)), release)
