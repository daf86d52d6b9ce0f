"""The bundled seeds still match the code: a harness change that would make them drift fails here, in
milliseconds and without AgentDojo (the model side is replayed against the seeds' own observations).

When this fails after an intended harness change, regenerate them: ``PYTHONHASHSEED=0 python
scripts/make_bundled_seeds.py`` (the recipe), and commit the new files with the change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from failforge.errors import PromptDrift
from failforge.fidelity import check_harness
from failforge.harnesses.tool_calling import ToolCallingAgent
from failforge.trajectory import READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, load_jsonl

BUNDLED = sorted((Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds").glob("*.jsonl"))
#: The seeds the drift check below changes the harness of: the single-agent tool-calling demo, chosen by
#: name (not by sort order, which a new bundled file would change).
TOOL_CALLING_SEEDS = next(p for p in BUNDLED if p.name == "agentdojo_demo.jsonl")


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_bundled_seeds_parse_at_the_current_schema_and_their_harness_still_sends_the_recorded_requests(
    path: Path,
) -> None:
    seeds, errors = load_jsonl(path)
    assert seeds and not errors
    for seed in seeds:
        assert seed.schema_version == SCHEMA_VERSION in READABLE_SCHEMA_VERSIONS
        assert seed.outcome is not None and seed.outcome.success
        assert check_harness(seed) == len(seed.agent_steps())


def test_the_check_fails_when_the_harness_changes_what_it_sends(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds, _ = load_jsonl(TOOL_CALLING_SEEDS)
    assert seeds and all(seed.harness is not None and seed.harness.name == "failforge.tool_calling" for seed in seeds)
    original = ToolCallingAgent.run

    def run_with_a_new_field(
        self: ToolCallingAgent, client: Any, model: str, instruction: str, toolbox: Any
    ) -> str | None:
        create = client.chat.completions.create
        client.chat.completions.create = lambda **kw: create(**{**kw, "parallel_tool_calls": False})
        return original(self, client, model, instruction, toolbox)

    monkeypatch.setattr(ToolCallingAgent, "run", run_with_a_new_field)
    with pytest.raises(PromptDrift, match="differs from the recorded one") as info:
        check_harness(seeds[0])
    assert info.value.step == 1 and "parallel_tool_calls" in info.value.diff
