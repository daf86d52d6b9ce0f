"""Magentic-One gold, labelled at each of its agent steps in turn (task ledger, plan, every progress ledger,
the workers' calls and reports, the final answer), exported to every public format and read back with
failforge's importers: the same records (tests/export_round_trips.py says what "identical" means per
format). The seed is the team oracle's run of a real AgentDojo task through the real MagenticOneGroupChat."""

from __future__ import annotations

import pytest

from _required import require

require("autogen")
require("agentdojo")

from export_round_trips import FORMATS, golds_of, round_trip  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402

TASK = "banking/user_task_3"


@pytest.fixture(scope="module")
def gold():  # type: ignore[no-untyped-def]
    seed = oracle_seed("agentdojo", TASK, harness="magentic-one")
    assert seed.outcome is not None and seed.outcome.success
    return golds_of(seed)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_magentic_one_record_comes_back_identical(tmp_path, gold, fmt):
    if fmt.endswith("parquet"):
        require("pyarrow")
    assert {g.label.decisive_agent for g in gold} == {"orchestrator", "banking_worker"}
    assert {g.label.mode_code for g in gold if g.label.decisive_agent == "orchestrator"} >= {
        "C.1"
    }  # the progress ledgers delegate
    result = round_trip(fmt, gold, tmp_path)
    assert result.skipped == [] and result.differences == []
    assert result.written == result.reimported == result.identical == len(gold)
