"""The framework adapters' bundled seeds (scripts/make_framework_seeds.py) still match the framework
installed now: their model side is replayed through the real framework against the seeds' own tool
observations, so a framework version that changes what it sends fails here, in seconds and without
AgentDojo. Needs the framework (``require``); tests/unit/test_bundled_seeds.py checks the same files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._required import require

from failforge.errors import PromptDrift
from failforge.fidelity import check_harness
from failforge.trajectory import load_jsonl

SEEDS = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds"


def magentic_seeds() -> list:  # type: ignore[type-arg]
    require("autogen")
    seeds, errors = load_jsonl(SEEDS / "magentic_one_seeds.jsonl")
    assert not errors and len(seeds) == 5
    return seeds


def test_the_magentic_one_seeds_replay_through_the_installed_framework() -> None:
    for seed in magentic_seeds():
        assert seed.harness.name == "magentic-one" and seed.outcome is not None and seed.outcome.success
        purposes = {s.model_call.purpose for s in seed.agent_steps() if s.model_call is not None}
        assert {"task_ledger", "plan", "progress_ledger", "final_answer"} <= purposes
        assert check_harness(seed) == len(seed.agent_steps())


def test_a_framework_that_stops_asking_for_the_structured_ledger_is_caught_at_the_first_progress_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a version of autogen-ext that sent the ledger request without its JSON schema would."""
    from failforge.harnesses import magentic_one_team

    seed = magentic_seeds()[0]
    monkeypatch.setattr(magentic_one_team, "_MODEL_INFO", {**magentic_one_team._MODEL_INFO, "structured_output": False})
    first = next(
        s for s in seed.agent_steps() if s.model_call is not None and s.model_call.purpose == "progress_ledger"
    )
    with pytest.raises(PromptDrift, match="differs from the recorded one") as info:
        check_harness(seed)
    assert info.value.step == first.index and "response_format" in info.value.diff


def test_a_changed_orchestrator_prompt_is_caught_at_the_task_ledger(monkeypatch: pytest.MonkeyPatch) -> None:
    """As a Magentic-One release that rewords its fact-sheet prompt would."""
    from autogen_agentchat.teams._group_chat._magentic_one import _magentic_one_orchestrator as orchestrator

    seed = magentic_seeds()[0]
    monkeypatch.setattr(
        orchestrator,
        "ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT",
        orchestrator.ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT.replace("pre-survey", "survey"),
    )
    with pytest.raises(PromptDrift) as info:
        check_harness(seed)
    assert info.value.step == 1 and "survey" in info.value.diff


def agent_framework_seeds() -> list:  # type: ignore[type-arg]
    require("agent_framework")
    seeds, errors = load_jsonl(SEEDS / "maf_seeds.jsonl")
    assert not errors and len(seeds) == 5
    return seeds


def test_the_agent_framework_seeds_replay_through_the_installed_framework() -> None:
    for seed in agent_framework_seeds():
        assert seed.harness.name == "agent-framework" and seed.outcome is not None and seed.outcome.success
        purposes = {s.model_call.purpose for s in seed.agent_steps() if s.model_call is not None}
        assert {"task_ledger", "plan", "progress_ledger", "final_answer"} <= purposes
        assert any(s.kind == "tool" for s in seed.steps)
        assert check_harness(seed) == len(seed.agent_steps())


def test_a_changed_magentic_manager_prompt_in_agent_framework_is_caught_at_the_task_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As an agent-framework-orchestrations release that rewords the manager's fact-sheet prompt would."""
    from agent_framework_orchestrations import _magentic

    seed = agent_framework_seeds()[0]
    monkeypatch.setattr(
        _magentic,
        "ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT",
        _magentic.ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT.replace("pre-survey", "survey"),
    )
    with pytest.raises(PromptDrift) as info:
        check_harness(seed)
    assert info.value.step == 1 and "survey" in info.value.diff


def test_an_agent_framework_client_that_renames_a_request_field_is_caught_at_the_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As an agent-framework-openai version that sent the older ``max_tokens`` instead of
    ``max_completion_tokens`` would."""
    from agent_framework_openai import _chat_completion_client as completions

    seed = agent_framework_seeds()[0]
    monkeypatch.setattr(
        completions, "OPTION_TRANSLATIONS", {**completions.OPTION_TRANSLATIONS, "max_tokens": "max_tokens"}
    )
    with pytest.raises(PromptDrift, match="differs from the recorded one") as info:
        check_harness(seed)
    assert info.value.step == 1 and "max_completion_tokens" in info.value.diff
