"""The build's pure parts: the recipe, cell quotas, the projection, the split by seed, deduplication, the meter."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.build import (
    CellStats,
    Price,
    Recipe,
    Spend,
    cell_config,
    content_key,
    load_recipe,
    project,
    quotas,
    split_of,
)
from failforge.build._projection import project_cell
from failforge.build._recipe import SplitConfig
from failforge.errors import ConfigError
from failforge.llm import CallMeter
from failforge.trajectory import Trajectory


def _recipe(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "recipe.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_recipe_paths_are_relative_to_the_file_and_cells_are_campaigns(tmp_path: Path) -> None:
    recipe = load_recipe(
        _recipe(
            tmp_path,
            """
[defaults]
concurrency = 2
[defaults.plan]
steps_per_seed = 3

[[cells]]
name = "a"
seeds = ["seeds/a.jsonl"]
[cells.plan]
modes = ["A.2"]

[targets]
total = 10
""",
        )
    )
    config = cell_config(recipe, recipe.cells[0], tmp_path / "rel")
    assert config.seeds == [str((tmp_path / "seeds" / "a.jsonl").resolve())]
    assert config.output == str((tmp_path / "rel" / "cells" / "a").resolve())
    assert config.concurrency == 2
    assert config.plan.steps_per_seed == 3 and config.plan.modes == ["A.2"]  # tables merged key by key


def test_a_typo_in_a_cell_names_the_cell_and_the_field(tmp_path: Path) -> None:
    recipe = load_recipe(_recipe(tmp_path, '[[cells]]\nname = "web"\nseeds = ["s.jsonl"]\nconcurency = 2\n'))
    with pytest.raises(ConfigError, match=r"cell 'web': field 'concurency'"):
        cell_config(recipe, recipe.cells[0], tmp_path / "rel")


def test_a_cell_may_not_choose_its_output(tmp_path: Path) -> None:
    recipe = load_recipe(_recipe(tmp_path, '[[cells]]\nname = "a"\nseeds = ["s.jsonl"]\noutput = "x"\n'))
    with pytest.raises(ConfigError, match="remove its 'output'"):
        cell_config(recipe, recipe.cells[0], tmp_path / "rel")


def test_two_cells_with_one_name_are_refused(tmp_path: Path) -> None:
    body = '[[cells]]\nname = "a"\nseeds = ["s.jsonl"]\n[[cells]]\nname = "a"\nseeds = ["t.jsonl"]\n'
    with pytest.raises(ConfigError, match="two cells are named 'a'"):
        load_recipe(_recipe(tmp_path, body))


def test_an_unknown_mode_target_is_refused(tmp_path: Path) -> None:
    body = '[[cells]]\nname = "a"\nseeds = ["s.jsonl"]\n[targets.per_mode]\n"Z.9" = 3\n'
    with pytest.raises(ConfigError, match="targets.per_mode"):
        load_recipe(_recipe(tmp_path, body))


def _three_cells(**targets: object) -> Recipe:
    return Recipe.model_validate(
        {
            "cells": [
                {"name": "x1", "seeds": ["s"]},
                {"name": "x2", "seeds": ["s"], "target": 9},
                {"name": "y1", "seeds": ["s"]},
            ],
            "targets": targets,
        }
    )


def test_a_quota_is_the_largest_share_any_target_asks_of_the_cell() -> None:
    envs = {"x1": "agentdojo", "x2": "agentdojo", "y1": "bfcl"}
    frameworks = {"x1": "native", "x2": "langgraph", "y1": "native"}
    assert quotas(_three_cells(), envs, frameworks) == {"x1": None, "x2": 9, "y1": None}
    assert quotas(_three_cells(total=7), envs, frameworks) == {"x1": 3, "x2": 9, "y1": 3}
    got = quotas(_three_cells(per_environment={"agentdojo": 10}, per_framework={"native": 12}), envs, frameworks)
    assert got == {"x1": 6, "x2": 9, "y1": 6}  # x1: max(10/2, 12/2); y1: 12/2


def _stats(attempts: int, kept: int, planned: int, tokens: int = 0) -> CellStats:
    stats = CellStats(cell="c", planned=planned, attempts=attempts, kept=kept)
    stats.spend["agent"] = Spend(calls=attempts * 3, prompt_tokens=tokens, completion_tokens=0)
    return stats


def test_a_projection_is_the_gold_still_owed_over_the_yield_bounded_by_the_plan() -> None:
    price = {"agent": Price(input_per_mtok=2.0)}
    cell = project_cell(_stats(10, 2, 100, tokens=1_000_000), quota=10, prices=price, wall_seconds=50.0)
    assert cell.yield_ == pytest.approx(0.2)
    assert cell.more_attempts == 40 and cell.reaches_quota  # (10 - 2) / 0.2
    assert cell.per_attempt["tokens"] == 100_000 and cell.per_attempt["dollars"] == pytest.approx(0.2)
    assert cell.more is not None and cell.more["seconds"] == pytest.approx(200.0)  # 5 s per attempt
    small = project_cell(_stats(10, 2, 30), quota=10, prices={}, wall_seconds=5.0)
    assert small.more_attempts == 20 and small.reaches_quota is False and "plan is too small" in small.note
    none = project_cell(_stats(10, 0, 30), quota=10, prices={}, wall_seconds=5.0)
    assert none.more_attempts == 20 and none.reaches_quota is False and "keep none" in none.note
    unrun = project_cell(_stats(0, 0, 30), quota=10, prices={}, wall_seconds=0.0)
    assert unrun.more_attempts is None and "run a pilot first" in unrun.note
    whole = project_cell(_stats(10, 1, 30), quota=None, prices={}, wall_seconds=5.0)
    assert whole.more_attempts == 20  # no target: the rest of its plan


def test_the_build_projection_adds_the_cells_and_checks_the_budget() -> None:
    recipe = Recipe.model_validate(
        {
            "cells": [{"name": "a", "seeds": ["s"]}, {"name": "b", "seeds": ["s"]}],
            "budget": {"attempts": 50},
        }
    )
    stats = {"a": _stats(10, 5, 100), "b": _stats(10, 1, 100)}
    stats["a"].cell, stats["b"].cell = "a", "b"
    got = project(recipe, stats, {"a": 10, "b": 10}, {"a": {}, "b": {}}, {"a": 10.0, "b": 10.0})
    assert [c.more_attempts for c in got.cells] == [10, 90]
    assert got.to_targets["attempts"] == 120 and got.to_targets["kept"] == 20
    assert got.budget["attempts"] == {"limit": 50, "so_far": 20.0, "projected": 120.0, "fits": False}


def _record(record_id: str, seed: str, env: str, mode: str = "A.2", text: str = "hi") -> Trajectory:
    return Trajectory.model_validate(
        {
            "id": record_id,
            "task": {"benchmark": env, "task_id": "t", "instruction": "do"},
            "environment": {"name": env},
            "harness": {"name": "native"},
            "model": {"name": "m"},
            "steps": [
                {"index": 0, "kind": "task", "agent": "user", "role": "user", "content": "do"},
                {"index": 1, "kind": "agent", "agent": "agent", "role": "assistant", "content": text},
            ],
            "label": {
                "decisive_step": 1,
                "decisive_agent": "agent",
                "mode_code": mode,
                "mode_family": "Action",
                "original_step": {"index": 1, "kind": "agent", "agent": "agent", "role": "assistant"},
                "steering_note": "n",
                "guide_model": "g",
                "agent_model": "m",
                "filter_verdicts": [],
                "seed_id": seed,
                "branch_step": 1,
                "evaluator_output": {"success": False, "evaluator": "e"},
            },
        }
    )


def test_a_split_keeps_every_record_of_a_seed_together_and_is_seeded() -> None:
    records = [_record(f"r{i}-{j}", f"s{i}", "agentdojo") for i in range(10) for j in range(3)]
    records += [_record(f"b{i}", f"t{i}", "bfcl") for i in range(2)]
    config = SplitConfig(test=0.2, dev=0.1, rng_seed=3)
    first = split_of(records, config)
    assert first == split_of(list(reversed(records)), config)  # the order of the records does not matter
    for i in range(10):
        assert len({first[f"r{i}-{j}"] for j in range(3)}) == 1  # siblings share a split
    agentdojo = [first[f"r{i}-0"] for i in range(10)]
    assert agentdojo.count("test") == 2 and agentdojo.count("dev") == 1
    assert sorted(first[f"b{i}"] for i in range(2)) == ["test", "train"]  # one seed to spare goes to test
    assert split_of(records, SplitConfig(test=0.2, dev=0.1, rng_seed=4)) != first


def test_duplicates_are_what_a_record_shows_not_its_id() -> None:
    a, b = _record("one", "s", "bfcl"), _record("two", "s", "bfcl")
    assert content_key(a) == content_key(b)
    assert content_key(a) != content_key(_record("one", "s", "bfcl", mode="A.3"))
    assert content_key(a) != content_key(_record("one", "s", "bfcl", text="other"))


def test_the_meter_counts_calls_and_the_tokens_an_endpoint_reports() -> None:
    meter = CallMeter()
    meter.add("agent", {"usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    meter.add("agent", {"choices": []})
    meter.add("guide", {"usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    assert meter.summary() == {
        "agent": {"calls": 2, "prompt_tokens": 10, "completion_tokens": 3, "unreported": 1},
        "guide": {"calls": 1, "prompt_tokens": 5, "completion_tokens": 1, "unreported": 0},
    }


def test_the_example_recipe_is_valid(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "build" / "recipe.toml"
    recipe = load_recipe(example)
    for cell in recipe.cells:
        config = cell_config(recipe, cell, tmp_path)
        assert all(Path(p).is_file() for p in config.seeds), f"{cell.name}: {config.seeds}"
    assert recipe.targets.total == 60 and recipe.price("my-model").output_per_mtok == 1.5


@pytest.mark.parametrize(("field", "said"), [("output", "sets 'output'"), ("bogus", "field 'bogus' is not a campaign")])
def test_a_wrong_field_in_the_defaults_is_said_as_the_defaults(tmp_path: Path, field: str, said: str) -> None:
    """It was said as the first cell's ("cell 'a': ... remove its 'output'"), sending the user to the wrong table."""
    recipe = Recipe.model_validate({"defaults": {field: "x"}, "cells": [{"name": "a", "seeds": ["s.jsonl"]}]})
    with pytest.raises(ConfigError, match=rf"recipe: \[defaults\].*{said}"):
        cell_config(recipe, recipe.cells[0], tmp_path)
