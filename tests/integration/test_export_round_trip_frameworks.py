"""Gold of each framework adapter's team (smolagents, openai-agents, langgraph, autogen), exported to every
public format and read back with failforge's importer: the same records (tests/export_round_trips.py says
what "identical" means per format).

The seeds are the team oracle's runs of a real AgentDojo task through the real framework, one per adapter:
each team's own shape (a manager with managed agents, handoff tools, a supervisor, a group chat with a
speaker selector), labelled at each of its agent steps in turn."""

from __future__ import annotations

import pytest

from _required import missing, require

require("agentdojo")

from export_round_trips import FORMATS, golds_of, round_trip  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402

TASK = "banking/user_task_3"
ADAPTERS = {
    "smolagents": "smolagents",
    "openai-agents": "openai_agents",
    "langgraph": "langgraph",
    "autogen": "autogen",
}


@pytest.fixture(scope="module")
def team_gold():  # type: ignore[no-untyped-def]
    made = {}
    for harness, part in ADAPTERS.items():
        if missing(part) is None:
            seed = oracle_seed("agentdojo", TASK, harness=harness)
            assert seed.outcome is not None and seed.outcome.success and seed.harness.name == harness
            made[harness] = golds_of(seed)
    return made


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("harness", list(ADAPTERS))
def test_every_team_record_comes_back_identical(tmp_path, team_gold, harness, fmt):
    require(ADAPTERS[harness])
    if fmt.endswith("parquet"):
        require("pyarrow")
    gold = team_gold[harness]
    assert len({g.label.decisive_agent for g in gold}) >= 2  # the lead and at least one worker are labelled
    result = round_trip(fmt, gold, tmp_path)
    assert result.skipped == [] and result.differences == []
    assert result.written == result.reimported == result.identical == len(gold)
