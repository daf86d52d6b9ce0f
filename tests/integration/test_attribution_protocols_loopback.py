"""Every judge protocol against a loopback stand-in for a remote judge that knows the answer.

A paid judge (GPT-4o, Claude) is the usual target of these protocols; the loopback server plays one
whose answers are always right, so each protocol's control flow must recover the gold exactly: the
step-by-step walk stops at the gold step, the binary search narrows to it, the hybrid finds the agent
and then the step, and the mode question's answer (a code, or a free-text description mapped back)
is the gold mode. Any off-by-one in a protocol shows up as a wrong prediction here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from failforge.attribution import summarise
from failforge.attribution._metrics import score
from failforge.attribution._predictions import load_predictions
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.llm import HttpUpstream
from failforge.plugins import importers
from failforge.taxonomy import get_mode
from failforge.testing.model_servers import LoopbackModelServer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "attribution"


@pytest.fixture(scope="module")
def records():  # type: ignore[no-untyped-def]
    ww, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    pro, _ = summarise(importers.get("whowhen-pro")(FIXTURES / "whowhen_pro"))
    # records whose gold names the author of the gold step (a protocol that reads the author cannot do better elsewhere)
    usable = [r for r in ww[:8] + pro if r.steps[r.gold.step].agent == r.gold.agent and not r.gold.accepted_steps]
    return usable


def oracle(records):  # type: ignore[no-untyped-def]
    by_question = {r.task.question.split("\n")[0][:80]: r for r in records}

    def record_of(text: str):  # type: ignore[no-untyped-def]
        for key, record in by_question.items():
            if key in text:
                return record
        raise AssertionError("unknown record in prompt")

    def answer(body: dict[str, Any]) -> tuple[str | None, None]:
        text = body["messages"][-1]["content"]
        record = record_of(text)
        gold, mode = record.gold, record.gold.mode
        menu = "one code from the list" in text
        mode_line = (
            f"Error Mode: {mode}" if menu else f"Error Description: {get_mode(mode).definition if mode else 'unclear'}"
        )
        if "Here's the conversation:" in text:
            return (
                f"Agent Name: {gold.agent}\nStep Number: {gold.step}\n{mode_line}\nReason for Mistake: it is there.",
                None,
            )
        if m := re.search(r"The most recent step \((\d+)\) was by", text):
            return (
                "1. Yes.\n2. Reason: derails." if int(m.group(1)) == gold.step else "1. No.\n2. Reason: fine."
            ), None
        if m := re.search(r"upper half \(from step (\d+) to step (\d+)\)", text):
            return ("upper half" if int(m.group(1)) <= gold.step <= int(m.group(2)) else "lower half"), None
        if "contains the decisive error" in text:
            return f"{mode_line}\nReason: as shown.", None
        raise AssertionError(f"unexpected prompt: {text[:200]}")

    return answer


@pytest.mark.parametrize("method", ["all-at-once", "step-by-step", "binary-search", "hybrid"])
@pytest.mark.parametrize("menu", [True, False], ids=["menu", "free-text"])
def test_protocols_recover_the_gold_from_a_judge_that_knows_it(records, tmp_path, method, menu):
    with LoopbackModelServer(policy=oracle(records)) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, model="oracle-judge")
        config = AttributeConfig(method=method, judge_model="oracle-judge", prompt=PromptConfig(menu=menu))
        summary = run_attribution(records, config, tmp_path / "run", upstream=upstream)
        upstream.close()
    assert summary.failed == 0 and summary.predicted == len(records)
    predictions, _ = load_predictions(tmp_path / "run" / "predictions.jsonl")
    report = score(records, predictions)["overall"]
    assert report["step_exact"]["value"] == 100.0 and report["joint"]["value"] == 100.0, [
        p.problems for p in predictions
    ]
    if menu:
        assert report["mode_macro_f1"]["value"] == 100.0
    calls = {p.record_id: p.calls for p in predictions}
    for record in records:
        candidates = record.candidate_steps()
        expected = {"all-at-once": 1, "step-by-step": candidates.index(record.gold.step) + 2}.get(method)
        if expected is not None:
            assert calls[record.id] == expected  # stops at the first Yes, then asks the mode


def test_free_text_descriptions_map_back_to_their_modes(records, tmp_path):
    with LoopbackModelServer(policy=oracle(records)) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, model="oracle-judge")
        config = AttributeConfig(method="all-at-once", judge_model="oracle-judge", prompt=PromptConfig(menu=False))
        run_attribution(records, config, tmp_path / "run", upstream=upstream)
        upstream.close()
    predictions, _ = load_predictions(tmp_path / "run" / "predictions.jsonl")
    with_mode = [(r.gold.mode, p.mode) for r, p in zip(records, predictions, strict=False) if r.gold.mode]
    hits = sum(g == p for g, p in with_mode)
    assert with_mode and hits >= len(with_mode) - 1, with_mode  # the lexical map reads a mode's own definition back
