"""Tests for the 18-mode error taxonomy: codes, families, lookup and applicability rules."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from failforge.errors import ConfigError
from failforge.taxonomy import (
    MODES,
    Applicability,
    ErrorMode,
    Family,
    StepContext,
    applicable_modes,
    get_mode,
    taxonomy_table,
)

#: Every code, in the table's order (the order itself is checked against what users read in
#: test_taxonomy_behaviour.py, where the applicability rules are also run on real steps).
EXPECTED_ORDER = [m.code for m in MODES]

PREFIX_TO_FAMILY = {
    "P": Family.PERCEPTION,
    "R": Family.REASONING,
    "PL": Family.PLANNING,
    "A": Family.ACTION,
    "V": Family.VERIFICATION,
    "C": Family.COORDINATION,
}

# A step where every requirement is met: every mode must apply here.
RICH_CTX = StepContext(
    has_tool_call=True,
    tools_available=True,
    has_image=True,
    n_agents=3,
    is_final=False,
    prior_agent_steps=5,
    role="orchestrator",
    delegates=True,
    addresses_agent=True,
    acts_on_peer=True,
)
# The poorest possible step: first step, single agent, no tools, no image, final answer.
BARE_CTX = StepContext(has_tool_call=False, tools_available=False)


def codes_of(modes: list[ErrorMode]) -> list[str]:
    return [m.code for m in modes]


# ---------------------------------------------------------------- structure


def test_codes_unique_and_well_formed() -> None:
    codes = [m.code for m in MODES]
    assert len(set(codes)) == len(codes)
    for code in codes:
        assert re.fullmatch(r"(P|R|PL|A|V|C)\.[1-9]", code), code


def test_family_matches_code_prefix() -> None:
    for m in MODES:
        assert m.family is PREFIX_TO_FAMILY[m.code.split(".")[0]], m.code


def test_texts_are_real() -> None:
    names = set()
    for m in MODES:
        assert m.name.strip() and m.name not in names, m.code
        names.add(m.name)
        assert len(m.definition) >= 60, m.code
        assert len(m.guide_hint) >= 150, m.code
        # guide hints address the guide model about "the agent"
        assert "agent" in m.guide_hint.lower(), m.code
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", m.guide_hint.strip()) if s]
        assert 2 <= len(sentences) <= 4, (m.code, len(sentences))


def test_only_a4_is_format_error() -> None:
    assert [m.code for m in MODES if m.format_error] == ["A.4"]


def test_models_are_frozen() -> None:
    m = get_mode("R.3")
    with pytest.raises(ValidationError):
        m.code = "X.1"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        RICH_CTX.n_agents = 1  # type: ignore[misc]
    assert hash(m) == hash(get_mode("r.3"))


def test_step_context_validation() -> None:
    with pytest.raises(ValidationError):
        StepContext(has_tool_call=False, tools_available=False, prior_agent_steps=-1)
    with pytest.raises(ValidationError):
        StepContext(has_tool_call=False, tools_available=False, n_agents=0)
    with pytest.raises(ValidationError):
        StepContext(tools_available=False)  # type: ignore[call-arg]
    ctx = StepContext(has_tool_call=True, tools_available=True)
    assert (ctx.has_image, ctx.n_agents, ctx.is_final, ctx.prior_agent_steps) == (False, 1, False, 0)


# ---------------------------------------------------------------- lookup


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("R.3", "R.3"), ("r.3", "R.3"), ("  pl.1 ", "PL.1"), ("Pl. 3", "PL.3"), ("a . 4", "A.4"), ("\tc.2\n", "C.2")],
)
def test_get_mode_normalises(raw: str, expected: str) -> None:
    assert get_mode(raw).code == expected


def test_get_mode_returns_table_object() -> None:
    for m in MODES:
        assert get_mode(m.code) is m


@pytest.mark.parametrize("bad", ["PL.2", "A.1", "X.1", "", "R3", "R.33"])
def test_get_mode_unknown_lists_valid_codes(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        get_mode(bad)
    message = str(info.value)
    for code in EXPECTED_ORDER:
        assert code in message


def test_get_mode_non_string() -> None:
    with pytest.raises(ConfigError):
        get_mode(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- applicability rules


def test_everything_applies_at_rich_step() -> None:
    for m in MODES:
        assert m.applicable(RICH_CTX) == (True, "ok"), m.code
    assert codes_of(applicable_modes(RICH_CTX)) == EXPECTED_ORDER


def test_bare_first_final_step() -> None:
    bare_final = BARE_CTX.model_copy(update={"is_final": True})
    assert codes_of(applicable_modes(bare_final)) == ["R.1", "R.2", "R.3", "R.4", "PL.1", "PL.3", "A.4", "V.2"]
    # not final: premature termination becomes possible
    assert "A.5" in codes_of(applicable_modes(BARE_CTX))


def test_perception_needs_image() -> None:
    no_image = RICH_CTX.model_copy(update={"has_image": False})
    for code in ("P.1", "P.2"):
        ok, reason = get_mode(code).applicable(no_image)
        assert not ok and "image" in reason
    assert not {"P.1", "P.2"} & set(codes_of(applicable_modes(no_image)))
    assert len(applicable_modes(no_image)) == 16


def test_coordination_needs_two_agents() -> None:
    single = RICH_CTX.model_copy(update={"n_agents": 1})
    for code in ("C.1", "C.2", "C.3"):
        ok, reason = get_mode(code).applicable(single)
        assert not ok and "agents" in reason
    assert codes_of(applicable_modes(single)) == EXPECTED_ORDER[:-3]
    two = RICH_CTX.model_copy(update={"n_agents": 2})
    assert get_mode("C.1").applicable(two) == (True, "ok")


def test_tool_modes_need_tool_call_and_tools() -> None:
    no_call = RICH_CTX.model_copy(update={"has_tool_call": False})
    no_tools = RICH_CTX.model_copy(update={"tools_available": False})
    for code in ("A.2", "A.3"):
        ok, reason = get_mode(code).applicable(no_call)
        assert not ok and "tool call" in reason
        ok, reason = get_mode(code).applicable(no_tools)
        assert not ok and "tools" in reason
    # other action modes do not care about tools
    for code in ("A.4", "A.5", "A.6"):
        assert get_mode(code).applicable(no_call)[0]
        assert get_mode(code).applicable(no_tools)[0]


def test_premature_termination_needs_not_final() -> None:
    final = RICH_CTX.model_copy(update={"is_final": True})
    ok, reason = get_mode("A.5").applicable(final)
    assert not ok and "final" in reason
    assert codes_of(applicable_modes(final)) == [c for c in EXPECTED_ORDER if c != "A.5"]


def test_history_modes_need_prior_steps() -> None:
    first = RICH_CTX.model_copy(update={"prior_agent_steps": 0})
    for code in ("V.1", "A.6"):
        ok, reason = get_mode(code).applicable(first)
        assert not ok and "prior" in reason
        assert get_mode(code).applicable(RICH_CTX.model_copy(update={"prior_agent_steps": 1})) == (True, "ok")
    assert set(EXPECTED_ORDER) - set(codes_of(applicable_modes(first))) == {"V.1", "A.6"}


def test_reason_lists_every_unmet_requirement() -> None:
    ok, reason = get_mode("A.2").applicable(BARE_CTX)
    assert not ok
    assert "A.2" in reason and "tool call" in reason and "no tools" in reason


def test_custom_prior_steps_threshold() -> None:
    mode = get_mode("V.1").model_copy(update={"applies": Applicability(needs_prior_steps=3)})
    assert not mode.applicable(RICH_CTX.model_copy(update={"prior_agent_steps": 2}))[0]
    assert mode.applicable(RICH_CTX.model_copy(update={"prior_agent_steps": 3}))[0]
    with pytest.raises(ValidationError):
        Applicability(needs_prior_steps=-1)


# ---------------------------------------------------------------- applicable_modes with codes


def test_applicable_modes_restricted() -> None:
    got = applicable_modes(BARE_CTX, ["c.1", "R.3", "a.2", "v.2"])
    assert codes_of(got) == ["R.3", "V.2"]


def test_applicable_modes_keeps_given_order_and_dedups() -> None:
    got = applicable_modes(RICH_CTX, ["V.2", "r.1", "V.2", " v. 2 "])
    assert codes_of(got) == ["V.2", "R.1"]


def test_applicable_modes_single_string() -> None:
    assert codes_of(applicable_modes(RICH_CTX, "R.3")) == ["R.3"]  # type: ignore[arg-type]


def test_applicable_modes_empty_selection() -> None:
    assert applicable_modes(RICH_CTX, []) == []


def test_applicable_modes_unknown_code_raises() -> None:
    with pytest.raises(ConfigError, match="valid codes"):
        applicable_modes(RICH_CTX, ["R.1", "Z.9"])


# ---------------------------------------------------------------- table


def test_taxonomy_table() -> None:
    table = taxonomy_table()
    assert isinstance(table, Table)
    assert [c.header for c in table.columns] == ["code", "family", "name", "applies where", "definition"]
    assert table.row_count == 18
    console = Console(record=True, width=220, color_system=None)
    console.print(table)
    text = console.export_text()
    for code in EXPECTED_ORDER:
        assert code in text
    assert "any agent step" in text
    assert ">= 2 agents" in text
