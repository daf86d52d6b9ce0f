"""``failforge build`` on the real parts: two cells (BFCL and tau2-bench, real environments and evaluators) driven by
deterministic loopback models that report token usage; a pilot, its projection, the build to the targets, the
release read back by failforge's own importer, a resume that runs nothing twice, and a budget that stops a build."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from _required import require
from failforge.build import PILOT, REPORT, Recipe, run_build
from failforge.jsonl import read_jsonl
from failforge.testing import LoopbackModelServer
from failforge.trajectory import write_jsonl

BFCL_TASKS = ("multi_turn_miss_param_2", "multi_turn_miss_func_5", "multi_turn_miss_func_0")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require("bfcl")
    require("tau2")
    from failforge.seeds import oracle_seed

    folder = tmp_path_factory.mktemp("seeds")
    write_jsonl(folder / "bfcl.jsonl", [oracle_seed("bfcl", t) for t in BFCL_TASKS])
    write_jsonl(folder / "tau2.jsonl", [oracle_seed("tau2", "0", {"domain": "retail"})])
    return folder


@pytest.fixture(scope="module")
def ports() -> tuple[int, int]:
    return _port(), _port()


@contextmanager
def _servers(ports: tuple[int, int]) -> Iterator[None]:
    from failforge.testing.bfcl_policy import BfclPolicies
    from failforge.testing.conversation_policy import ConversationPolicy

    with ExitStack() as stack:
        stack.enter_context(
            LoopbackModelServer(policy=BfclPolicies(list(BFCL_TASKS)), report_usage=True, port=ports[0])
        )
        stack.enter_context(
            LoopbackModelServer(agent_policy=ConversationPolicy("retail", "0"), report_usage=True, port=ports[1])
        )
        yield


def _recipe_toml(seeds: Path, ports: tuple[int, int], extra: str = "") -> str:
    def endpoint(port: int) -> str:
        return f'{{ base_url = "http://127.0.0.1:{port}/v1", model = "loopback", timeout = 60, max_attempts = 1 }}'

    return f"""
round_size = 2
{extra}
[defaults]
concurrency = 1

[[cells]]
name = "bfcl"
seeds = ["{seeds / "bfcl.jsonl"}"]
agent = {endpoint(ports[0])}
guide_kind = "rules"
[cells.plan]
modes = ["R.1", "A.3"]
steps_per_seed = 1
modes_per_step = 2

[[cells]]
name = "tau2"
framework = "tau2-native"
seeds = ["{seeds / "tau2.jsonl"}"]
agent = {endpoint(ports[1])}
[cells.plan]
modes = ["R.1", "A.5"]
steps_per_seed = 4
modes_per_step = 2

[targets]
total = 5
[targets.per_environment]
tau2 = 2

[prices.loopback]
input_per_mtok = 1.0
output_per_mtok = 4.0

[split]
test = 0.5
"""


def _settled(cell: Path) -> Counter[str]:
    """Attempt ids in the cell's three output files (each must appear once, in one file)."""
    ids: Counter[str] = Counter()
    for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl"):
        if (cell / name).exists():
            for item in read_jsonl(cell / name):
                assert isinstance(item, tuple)
                record = item[1]
                ids[record.get("attempt_id") or record["provenance"]["attempt_id"]] += 1
    return ids


def _ledger(cell: Path) -> dict[str, int]:
    with sqlite3.connect(cell / "ledger.sqlite") as db:
        return dict(db.execute("SELECT state, COUNT(*) FROM attempts GROUP BY state").fetchall())


def test_pilot_then_build_then_resume(tmp_path: Path, seeds: Path, ports: tuple[int, int]) -> None:
    from failforge.cli import app

    recipe = tmp_path / "recipe.toml"
    recipe.write_text(_recipe_toml(seeds, ports), encoding="utf-8")
    release = tmp_path / "release"
    runner = CliRunner()
    with _servers(ports):
        pilot = runner.invoke(app, ["build", str(recipe), "-o", str(release), "--pilot", "2"])
        assert pilot.exit_code == 0, pilot.output
        projection = json.loads((release / "build" / PILOT).read_text(encoding="utf-8"))
        by_cell = {c["cell"]: c for c in projection["cells"]}
        assert set(by_cell) == {"bfcl", "tau2"}
        for cell in by_cell.values():
            assert cell["attempts"] == 2
            assert cell["per_attempt"]["calls"] > 0 and cell["per_attempt"]["tokens"] > 0
            assert cell["per_attempt"]["dollars"] > 0 and cell["per_attempt"]["seconds"] > 0
        assert by_cell["tau2"]["quota"] == 3  # max(ceil(5 / 2 cells), 2 for tau2's one cell)
        assert projection["to_targets"]["attempts"] is not None
        assert "to the targets:" in pilot.output
        assert not (release / "data").exists()  # a pilot writes no release

        built = runner.invoke(app, ["build", str(recipe), "-o", str(release)])
        assert built.exit_code == 0, built.output
        report = json.loads((release / "build" / REPORT).read_text(encoding="utf-8"))
        assert set(report["pilot_vs_actual"]) >= {"attempts", "kept", "tokens", "dollars", "seconds"}
        before = {}
        for cell in ("bfcl", "tau2"):
            folder = release / "cells" / cell
            ids = _settled(folder)
            assert ids and max(ids.values()) == 1  # every attempt in exactly one file, once
            ledger = _ledger(folder)
            assert ledger.get("done", 0) + ledger.get("rejected", 0) + ledger.get("failed", 0) == len(ids)
            before[cell] = len(ids)
        gold = [item[1] for item in read_jsonl(release / "failforge" / "gold.jsonl") if isinstance(item, tuple)]
        assert len(gold) >= 5
        assert sum(1 for g in gold if g["environment"]["name"] == "tau2") >= 2
        rows = [item[1] for item in read_jsonl(release / "data" / "text.jsonl") if isinstance(item, tuple)]
        assert len(rows) == len(gold)
        splits = json.loads((release / "splits.json").read_text(encoding="utf-8"))["splits"]
        assert sorted(r for s in splits.values() for r in s["records"]) == sorted(g["id"] for g in gold)
        assert splits["test"]["records"], "a seed to spare goes to test"

        again = runner.invoke(app, ["build", str(recipe), "-o", str(release)])
        assert again.exit_code == 0, again.output
        for cell in ("bfcl", "tau2"):
            assert len(_settled(release / "cells" / cell)) == before[cell]  # resumed: nothing ran twice

    _round_trip(release, gold)


def _round_trip(release: Path, gold: list[dict[str, Any]]) -> None:
    """Each exported row read back by failforge's importer names the same agent, mode and decisive step (its text
    and calls; the index follows each format's own step convention) as the failforge record it came from."""
    from failforge.plugins import importers

    mine = {r.id: r for r in importers.get("failforge")(release / "failforge" / "gold.jsonl") if hasattr(r, "gold")}
    theirs = [r for r in importers.get("whowhen-pro")(release) if hasattr(r, "gold")]
    assert len(theirs) == len(mine) == len(gold)
    for row in theirs:
        original = mine[row.extra["source"]["record_id"]]
        got, want = row.steps[row.gold.step], original.steps[original.gold.step]
        assert (row.gold.agent, row.extra["failforge_mode"]) == (original.gold.agent, original.gold.mode)
        assert (got.content or "", [c.name for c in got.tool_calls]) == (
            want.content or "",
            [c.name for c in want.tool_calls],
        )


def test_a_budget_stops_the_build_short(tmp_path: Path, seeds: Path, ports: tuple[int, int]) -> None:
    from failforge.build import load_recipe

    recipe_file = tmp_path / "recipe.toml"
    recipe_file.write_text(_recipe_toml(seeds, ports, "[budget]\nattempts = 3\n"), encoding="utf-8")
    recipe: Recipe = load_recipe(recipe_file)
    with _servers(ports):
        result = run_build(recipe, tmp_path / "release")
    assert result.ended == "budget: 3 attempts"
    settled = sum(len(_settled(tmp_path / "release" / "cells" / c)) for c in ("bfcl", "tau2"))
    assert settled == 3  # one attempt in flight at a time: the budget is met exactly
    assert any(s.startswith("total:") for s in result.short())


def test_a_cell_that_cannot_run_is_named_and_the_others_go_on(tmp_path: Path, seeds: Path) -> None:
    from failforge.trajectory import load_jsonl

    good, _ = load_jsonl(seeds / "bfcl.jsonl")
    failed = [
        s.model_copy(update={"outcome": s.outcome.model_copy(update={"success": False})}) for s in good if s.outcome
    ]
    write_jsonl(tmp_path / "failed.jsonl", failed)
    endpoint = {"base_url": "http://127.0.0.1:9/v1", "model": "never-called", "api_key_env": None}
    recipe = Recipe.model_validate(
        {
            "cells": [{"name": "broken", "seeds": [str(tmp_path / "failed.jsonl")], "agent": endpoint}],
            "targets": {"total": 1},
        }
    )
    result = run_build(recipe, tmp_path / "release")
    assert result.short()[0].startswith("cell broken did not run: nothing to do")
    assert "not a successful run" in result.short()[0]


def test_targets_met_by_duplicates_are_said_short_of_the_release(
    tmp_path: Path, seeds: Path, ports: tuple[int, int]
) -> None:
    """Two cells that branch the same seeds with the same deterministic policy make the same records: each cell's
    ledger counts its kept ones, the release keeps each record once (the first cell's), and the build says that the
    second cell's target is not met by the release."""
    from failforge.build import load_recipe

    endpoint = f'{{ base_url = "http://127.0.0.1:{ports[0]}/v1", model = "loopback", timeout = 60, max_attempts = 1 }}'
    cell = (
        '[[cells]]\nname = "{name}"\nseeds = ["' + str(seeds / "bfcl.jsonl") + '"]\nagent = ' + endpoint + "\n"
        'guide_kind = "rules"\n[cells.plan]\nmodes = ["A.3"]\nsteps_per_seed = 1\nmodes_per_step = 1\n'
    )
    recipe_file = tmp_path / "recipe.toml"
    recipe_file.write_text(
        "round_size = 3\n[defaults]\nconcurrency = 1\n"
        + cell.replace("{name}", "first")
        + cell.replace("{name}", "again")
        + "[targets]\nper_cell = 1\n",
        encoding="utf-8",
    )
    with _servers(ports):
        result = run_build(load_recipe(recipe_file), tmp_path / "release")
    assert result.stats["first"].kept >= 1 and result.stats["again"].kept == result.stats["first"].kept
    assert result.release_summary is not None
    assert result.release_summary.duplicates == result.stats["again"].kept
    assert result.short() == ["cell again: 0 of 1 distinct records in the release (duplicates dropped)"]


@pytest.mark.timeout(180)
def test_a_pilot_past_a_cells_quota_ends(tmp_path: Path, seeds: Path, ports: tuple[int, int]) -> None:
    """``--pilot N`` with N past what a cell's quota takes: the cell stops at its quota and the pilot ends. It used
    to stop each round before its first attempt (the quota met) without calling the cell done: empty rounds forever."""
    from failforge.build import load_recipe

    endpoint = f'{{ base_url = "http://127.0.0.1:{ports[0]}/v1", model = "loopback", timeout = 60, max_attempts = 1 }}'
    recipe_file = tmp_path / "recipe.toml"
    recipe_file.write_text(
        "round_size = 2\n[defaults]\nconcurrency = 1\n"
        f'[[cells]]\nname = "bfcl"\nseeds = ["{seeds / "bfcl.jsonl"}"]\nagent = {endpoint}\nguide_kind = "rules"\n'
        '[cells.plan]\nmodes = ["R.1", "A.3"]\nsteps_per_seed = 1\nmodes_per_step = 2\n'
        "[targets]\nper_cell = 1\n",
        encoding="utf-8",
    )
    with _servers(ports):
        result = run_build(load_recipe(recipe_file), tmp_path / "release", pilot=1000)
    assert result.ended == "pilot done"
    stats = result.stats["bfcl"]
    assert stats.kept >= 1 and stats.pending > 0  # stopped at its quota, with attempts still planned
    assert result.rounds <= 2


def test_a_mode_target_takes_a_cell_past_its_quota(tmp_path: Path, seeds: Path, ports: tuple[int, int]) -> None:
    """A cell at its quota with planned attempts of a mode still short of its target goes on for that mode. It used
    to stop at the quota, end "targets met" and exit 1 short of the mode with the attempts to meet it planned."""
    from failforge.build import load_recipe

    endpoint = f'{{ base_url = "http://127.0.0.1:{ports[0]}/v1", model = "loopback", timeout = 60, max_attempts = 1 }}'
    recipe_file = tmp_path / "recipe.toml"
    recipe_file.write_text(
        "round_size = 1\n[defaults]\nconcurrency = 1\n"
        f'[[cells]]\nname = "bfcl"\nseeds = ["{seeds / "bfcl.jsonl"}"]\nagent = {endpoint}\nguide_kind = "rules"\n'
        '[cells.plan]\nmodes = ["A.3"]\nsteps_per_seed = 2\nmodes_per_step = 1\n'
        '[targets]\nper_cell = 1\nper_mode = {"A.3" = 2}\n',
        encoding="utf-8",
    )
    with _servers(ports):
        result = run_build(load_recipe(recipe_file), tmp_path / "release")
    assert result.stats["bfcl"].by_mode["A.3"]["kept"] >= 2
    assert result.short() == [] and result.ended == "targets met"


def test_a_pilot_stopped_by_the_circuit_breaker_exits_3(tmp_path: Path, seeds: Path) -> None:
    """A pilot whose endpoint is down: its projection would be the endpoint's failures read as the cell's yield. It
    used to print it and exit 0; it says the breaker stopped it and exits 3, as a build does."""
    from failforge.cli import app

    endpoint = '{ base_url = "http://127.0.0.1:9/v1", model = "down", timeout = 5, max_attempts = 1 }'
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        '[defaults]\nconcurrency = 1\ncircuit_breaker = 2\n[[cells]]\nname = "bfcl"\n'
        f'seeds = ["{seeds / "bfcl.jsonl"}"]\nagent = {endpoint}\nguide_kind = "rules"\n'
        '[cells.plan]\nmodes = ["A.3"]\nsteps_per_seed = 1\nmodes_per_step = 1\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["build", str(recipe), "-o", str(tmp_path / "release"), "--pilot", "4"])
    assert result.exit_code == 3, result.output
    assert "stopped:" in result.output


def test_a_pilot_runs_the_original_arms_of_its_own_attempts_only(
    tmp_path: Path, seeds: Path, ports: tuple[int, int]
) -> None:
    """A round hands its campaign at most its attempts: the campaign runs the original arm of every point the
    attempts it is handed need, so a pilot of 2 over a plan of 12 points used to run 12 live arms (and spread their
    cost over its 2 attempts)."""
    from failforge.build import load_recipe

    endpoint = f'{{ base_url = "http://127.0.0.1:{ports[0]}/v1", model = "loopback", timeout = 60, max_attempts = 1 }}'
    recipe_file = tmp_path / "recipe.toml"
    recipe_file.write_text(
        "[defaults]\nconcurrency = 1\n"
        f'[[cells]]\nname = "bfcl"\nseeds = ["{seeds / "bfcl.jsonl"}"]\nagent = {endpoint}\nguide_kind = "rules"\n'
        '[cells.plan]\nmodes = ["R.1", "A.3"]\nsteps_per_seed = 4\nmodes_per_step = 2\n'
        "[targets]\ntotal = 40\n",
        encoding="utf-8",
    )
    with _servers(ports):
        result = run_build(load_recipe(recipe_file), tmp_path / "release", pilot=2)
    cell = tmp_path / "release" / "cells" / "bfcl"
    assert result.stats["bfcl"].attempts == 2 and result.stats["bfcl"].pending > 2
    assert 1 <= sum(1 for _ in read_jsonl(cell / "arms.jsonl")) <= 2
