"""Prompts, reply parsing, free-text mode mapping and the no-model baselines."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._freetext import map_to_mode
from failforge.attribution._methods import DatasetFacts, MethodContext, methods
from failforge.attribution._parse import code_in, half, parse_all_at_once, yes_no
from failforge.attribution._prompts import PromptConfig, all_at_once, binary_half, mode_question, step_chars, step_check
from failforge.plugins import importers
from failforge.taxonomy import MODES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when"))
    return records


def test_all_at_once_prompt_variants(records):
    record = next(r for r in records if r.id == "who_and_when/algorithm_generated/1")
    with_all = all_at_once(record, PromptConfig(with_answer=True, menu=True))[1]["content"]
    bare = all_at_once(record, PromptConfig(with_answer=False, menu=False))[1]["content"]
    assert (
        f"The Answer for the problem is: {record.task.gold_answer}" in with_all
        and "The Answer for the problem is" not in bare
    )
    assert all(f"- {m.code}:" in with_all for m in MODES) and not any(f"- {m.code}:" in bare for m in MODES)
    assert "Error Mode:" in with_all and "Error Description:" in bare
    assert f"Step {record.gold.step} - {record.steps[record.gold.step].agent}:" in with_all


def test_long_logs_are_cut_to_the_budget(records):
    long = max(records, key=lambda r: sum(len(s.content) for s in r.steps))
    config = PromptConfig(budget_chars=3000, max_step_chars=600, min_step_chars=60)
    assert step_chars(long, config) == max(60, 3000 // len(long.candidate_steps()))
    limit = step_chars(long, config)
    text = all_at_once(long, config)[1]["content"]
    lines = [line for line in text.splitlines() if line.startswith("Step ") and " - " in line]
    assert [int(line.split()[1]) for line in lines] == long.candidate_steps()
    for line, index in zip(lines, long.candidate_steps(), strict=False):
        body = line.split(f" - {long.steps[index].agent}: ", 1)[1]
        assert len(body) <= limit
    assert sum(1 for line in lines if line.endswith("[...]")) > 10  # the long ones were cut


def test_step_by_step_prompts_grow_by_one_step(records):
    record = next(r for r in records if r.id == "who_and_when/algorithm_generated/2")
    config = PromptConfig()
    first, second = (step_check(record, i, config)[1]["content"] for i in (0, 1))
    history = first.split("Here is the conversation history up to the current step:\n", 1)[1].split(
        "\nThe most recent step", 1
    )[0]
    assert second.split("Here is the conversation history up to the current step:\n", 1)[1].startswith(history + "\n")
    segment = binary_half(record, record.candidate_steps(), 3, config)[1]["content"]
    assert "upper half (from step 0 to step 3)" in segment and "lower half (from step 4 to step" in segment
    assert "Step 2, by" in mode_question(record, 2, config)[1]["content"]


def test_parse_all_at_once_is_lenient_on_layout_and_strict_on_values():
    ok = parse_all_at_once(
        "Sure.\n**Agent Name:** WebSurfer\n**Step Number:** Step 12\nError Mode: R.1 (Hallucination)\nReason for"
        " Mistake: made it up",
        menu=True,
    )
    assert (ok.agent, ok.step, ok.step_text, ok.mode, ok.problems) == ("WebSurfer", 12, "12", "R.1", [])
    placeholder = parse_all_at_once("Agent Name: (Your prediction)\nStep Number: none\nError Mode: A.1", menu=True)
    assert (
        placeholder.agent is None
        and placeholder.step is None
        and placeholder.mode is None
        and len(placeholder.problems) == 3
    )
    free = parse_all_at_once(
        "Agent Name: Coder\nStep Number: 3\nError Description: it computed 7*8 as 54\nReason: arithmetic", menu=False
    )
    assert free.description == "it computed 7*8 as 54" and free.mode is None and free.step == 3
    assert code_in("the error is PL.3 goal drift") == "PL.3" and code_in("release code A.1") is None


def test_yes_no_and_halves():
    assert [yes_no(r) for r in ("1. Yes.\n2. Reason: x", "No.", "**1. No**", "It depends", "")] == [
        True,
        False,
        False,
        None,
        None,
    ]
    assert [half(r) for r in ("Upper half.", "the LOWER HALF", "neither")] == ["upper", "lower", None]


def test_free_text_maps_to_modes_without_a_model():
    assert map_to_mode("it made an arithmetic mistake when computing the total") == "R.3"
    assert map_to_mode("it called a tool that does not exist") == "A.3"
    assert map_to_mode("it repeated the same search again and again") == "A.6"
    assert map_to_mode("the agent misread the image") == "P.1"
    assert map_to_mode("xyzzy") is None and map_to_mode(None) is None


def _predict(name: str, record, records, seed: int = 0):  # type: ignore[no-untyped-def]
    method = methods.get(name)()
    return method.predict(
        MethodContext(record=record, prompt=PromptConfig(), seed=seed, dataset=DatasetFacts.of(records))
    )


def test_baselines(records):
    ag = next(r for r in records if r.id == "who_and_when/algorithm_generated/1")
    first = _predict("first-agent-step", ag, records)
    assert first.step == next(
        i for i in ag.candidate_steps() if ag.steps[i].kind == "agent"
    ) and first.agent == ag.author(first.step)
    last = _predict("last-step", ag, records)
    assert last.step == len(ag.steps) - 1 and last.mode is None
    draws = [_predict("random", r, records).step for r in records[:40]]
    assert draws == [_predict("random", r, records).step for r in records[:40]]  # seeded by (seed, record)
    assert draws != [_predict("random", r, records, seed=1).step for r in records[:40]]
    assert all(_predict("random", r, records).mode in {m.code for m in MODES} for r in records[:5])
    facts = DatasetFacts.of(records)
    assert facts.majority_agent == {
        "who_and_when/hand_crafted": "WebSurfer",
        "who_and_when/algorithm_generated": "Verification_Expert",
    }
    hc = next(r for r in records if r.source == "who_and_when/hand_crafted")
    majority = _predict("majority-agent", hc, records)
    assert majority.agent == "WebSurfer" and hc.steps[majority.step].agent == "WebSurfer"


def test_every_documented_method_is_registered():
    assert set(methods.names()) == {
        "all-at-once",
        "step-by-step",
        "binary-search",
        "hybrid",
        "random",
        "first-agent-step",
        "last-step",
        "majority-agent",
        "role-prior",
        "rcta",
        "auditor",
        "incremental",
        "leave-one-out",
    }
    assert {
        methods.get(n).kind for n in ("all-at-once", "step-by-step", "binary-search", "hybrid", "rcta", "auditor")
    } == {"judge"}
    assert {methods.get(n).kind for n in ("incremental", "leave-one-out")} == {"likelihood"}


def test_paraphrased_menu_keeps_the_codes_and_drops_the_taxonomy_wording(records):
    from failforge.attribution._methods import method_key

    record = records[0]
    plain = all_at_once(record, PromptConfig(menu=True))[1]["content"]
    para = all_at_once(record, PromptConfig(menu=True, paraphrased_menu=True))[1]["content"]
    assert all(f"- {m.code}:" in para for m in MODES)
    assert not any(m.name in para or m.definition in para for m in MODES) and all(m.definition in plain for m in MODES)
    assert (
        parse_all_at_once("Agent Name: X\nStep Number: 3\nError Mode: A.2\nReason for Mistake: r", menu=True).mode
        == "A.2"
    )
    keys = {
        method_key("all-at-once", "judge", PromptConfig(menu=m, paraphrased_menu=p))
        for m, p in ((True, False), (True, True), (False, False))
    }
    assert keys == {"all-at-once/answer/menu", "all-at-once/answer/paraphrased-menu", "all-at-once/answer/free-text"}
