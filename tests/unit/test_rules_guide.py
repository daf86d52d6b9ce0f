"""The rule-based stage-1 guide: concrete notes for the structural modes, written from the seed.

The notes must name the tool, the argument and the value; wrong values must be of the right type and
come from the agent's context where possible; and a step that does what the note says must pass
both mode conformance and the note-leak filter (the rules must not write notes their own filters
reject). Campaign settings choose the guide per mode.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from failforge.campaign import CampaignConfig
from failforge.errors import ConfigError
from failforge.filters import mode_conformance, note_leak
from failforge.gold import FilterContext
from failforge.injection import RULE_MODES, guide_kind_for, rules_note, wrong_value
from failforge.taxonomy import get_mode
from failforge.trajectory import Outcome, Step, ToolCall, Trajectory, load_jsonl

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
BANKING3 = "agentdojo-banking-user_task_3-oracle"


@pytest.fixture(scope="module")
def seeds() -> dict[str, Trajectory]:
    return {s.id: s for s in load_jsonl(BUNDLED)[0]}


def _offered(seed: Trajectory, t: int) -> set[str]:
    return {tool["function"]["name"] for tool in seed.steps[t].model_call.request["tools"]}


def test_a2_names_tool_argument_and_a_context_value(seeds):
    seed = seeds[BANKING3]
    g = rules_note(seed, 3, get_mode("A.2"))
    assert g.feasible and g.kind == "rules"
    r = g.request
    assert r["guide"] == "rules" and r["tool"] == "send_money" and r["argument"] == "recipient"
    assert r["value"] != r["original"] and r["value"] in seed.steps[2].content  # another IBAN from the transaction list
    assert "from the agent's context" in r["source"]
    assert "send_money" in g.note and "recipient" in g.note and r["value"] in g.note


def test_wrong_values_keep_their_type():
    rng = random.Random(0)
    assert isinstance(wrong_value(100, "", rng)[0], int) and wrong_value(100, "", rng)[0] != 100
    assert isinstance(wrong_value(4.0, "", rng)[0], float)
    assert wrong_value(True, "", rng)[0] is False
    assert wrong_value("2024-05-26", "", rng)[0] in ("2024-05-25", "2024-05-27")
    assert wrong_value("bob@x.com", "mail alice@y.org now", rng)[0] == "alice@y.org"
    swapped = wrong_value("dora@gmail.com", "", rng)[0]
    assert "@" in swapped and swapped != "dora@gmail.com" and sorted(swapped) == sorted("dora@gmail.com")
    assert wrong_value(["Le Marais Boutique"], "", rng)[0] == ["Le Marais"]
    assert wrong_value(50, "amounts 10.0 and 5000", rng)[0] == 10  # another number of a similar size from the context


def test_a3_invents_a_tool_that_is_not_offered(seeds):
    for seed in seeds.values():
        for t in (s.index for s in seed.steps if s.kind == "agent" and s.tool_calls):
            g = rules_note(seed, t, get_mode("A.3"))
            assert g.feasible
            assert g.request["invented_tool"] not in _offered(seed, t)
            assert g.request["invented_tool"] in g.note


def test_not_feasible_says_why(seeds):
    seed = seeds[BANKING3]
    assert "already the final answer" in rules_note(seed, 5, get_mode("A.5")).reason
    assert "no earlier call" in rules_note(seed, 1, get_mode("A.6")).reason
    travel = seeds["agentdojo-travel-user_task_0-oracle"]
    assert "uses no number" in rules_note(travel, 1, get_mode("R.3")).reason
    semantic = rules_note(seed, 1, get_mode("R.2"))
    assert not semantic.feasible and "no rule for R.2" in semantic.reason


def test_r3_changes_a_computed_number_not_a_given_one(seeds):
    seed = seeds["agentdojo-banking-user_task_1-oracle"]  # "Your total spending in March 2022 was £1,050."
    g = rules_note(seed, 3, get_mode("R.3"))
    assert g.request["answer_number"] == "1050" and g.request["value"] != "1050"


def test_r3_moves_a_date_answer_by_a_day(seeds):
    seed = seeds["agentdojo-banking-user_task_1-oracle"].model_copy(deep=True)
    seed.steps[3].content = "2024-06-10 13:00"
    g = rules_note(seed, 3, get_mode("R.3"))
    assert g.request["answer_date"] == "2024-06-10 13:00" and g.request["value"] in (
        "2024-06-09 13:00",
        "2024-06-11 13:00",
    )
    assert g.note == f"In your answer, state the date as {g.request['value']}."


def test_notes_are_reproducible_and_vary_by_sample(seeds):
    seed = seeds[BANKING3]
    a = rules_note(seed, 3, get_mode("A.2"), rng_seed=1, sample=0)
    assert a.note == rules_note(seed, 3, get_mode("A.2"), rng_seed=1, sample=0).note
    assert len({rules_note(seed, 3, get_mode("A.2"), rng_seed=1, sample=k).note for k in range(6)}) > 1


def _follow(seed: Trajectory, t: int, mode: str, request: dict) -> Step:
    """The step an obedient agent writes for a rule note."""
    original = seed.steps[t]
    if mode in ("A.2", "R.3") and "tool" in request:
        args = original.tool_calls[0].parsed_arguments() | {request["argument"]: request["value"]}
        calls = [ToolCall(id="x", name=request["tool"], arguments=json.dumps(args))]
        return Step(index=t, kind="agent", agent="agent", role="assistant", tool_calls=calls, phase="injected")
    if mode == "R.3" and "answer_date" in request:
        return Step(
            index=t,
            kind="agent",
            agent="agent",
            role="assistant",
            content=original.content.replace(request["answer_date"], request["value"]),
            phase="injected",
        )
    if mode == "R.3":
        text = (
            (original.content or "")
            .replace("1,050", request["value"])
            .replace(request["answer_number"], request["value"])
        )
        return Step(index=t, kind="agent", agent="agent", role="assistant", content=text, phase="injected")
    if mode == "A.3":
        calls = [ToolCall(id="x", name=request["invented_tool"], arguments=json.dumps(request["arguments"]))]
        return Step(index=t, kind="agent", agent="agent", role="assistant", tool_calls=calls, phase="injected")
    if mode == "A.4":
        return Step(
            index=t, kind="agent", agent="agent", role="assistant", content=request["written_as_text"], phase="injected"
        )
    if mode == "A.5":
        return Step(index=t, kind="agent", agent="agent", role="assistant", content="Done.", phase="injected")
    calls = [ToolCall(id="x", name=request["tool"], arguments=json.dumps(request["arguments"]))]
    return Step(index=t, kind="agent", agent="agent", role="assistant", tool_calls=calls, phase="injected")


def test_following_a_rule_note_is_conformant_and_leaks_nothing(seeds):
    checked = 0
    for seed in seeds.values():
        for t in (s.index for s in seed.steps if s.kind == "agent" and s.index > 0):
            for mode in RULE_MODES:
                g = rules_note(seed, t, get_mode(mode))
                if not g.feasible:
                    continue
                step = _follow(seed, t, mode, g.request)
                branch = seed.model_copy(
                    update={"steps": [*seed.steps[:t], step], "outcome": Outcome(success=False, evaluator="t")}
                )
                ctx = FilterContext(
                    seed=seed, branch=branch, step=t, mode=get_mode(mode), note=g.note, guide_request=g.request
                )
                conformance = mode_conformance.check(ctx)
                assert conformance.passed, (seed.id, t, mode, g.note, conformance.reason)
                leak = note_leak.check(ctx)
                assert leak.passed, (seed.id, t, mode, g.note, leak.reason)
                checked += 1
    assert checked >= 30


def test_guide_kind_per_mode():
    assert [guide_kind_for("auto", m) for m in ("A.2", "A.5", "R.3", "R.2", "V.2")] == [
        "rules",
        "rules",
        "rules",
        "model",
        "model",
    ]
    assert guide_kind_for("model", "A.2") == "model" and guide_kind_for("rules", "R.2") == "rules"
    with pytest.raises(ValueError):
        guide_kind_for("oracle", "A.2")


def test_campaign_guide_setting(tmp_path):
    base = {"seeds": [str(BUNDLED)], "output": str(tmp_path)}
    assert CampaignConfig(**base).guide_kind == "auto"  # rules where a mode has them, the guide model otherwise
    assert CampaignConfig(**base, guide_kind="auto").guide_kind == "auto"
    assert (
        CampaignConfig.model_validate({**base, "guide": "rules"}).guide_kind == "rules"
    )  # the `guide = "rules"` shorthand
    endpoint = CampaignConfig.model_validate({**base, "guide": {"base_url": "http://x/v1", "model": "g"}})
    assert endpoint.guide is not None and endpoint.guide_kind == "auto"
    with pytest.raises(ValueError):
        CampaignConfig.model_validate({**base, "guide": "rules", "guide_kind": "auto"})
    with pytest.raises(ValueError):
        CampaignConfig(**base, guide_kind="oracle")


def test_campaign_file_with_guide_and_conformance_options(tmp_path):
    from failforge.campaign import load_campaign

    path = tmp_path / "c.toml"
    path.write_text(
        f'seeds = ["{BUNDLED}"]\noutput = "out"\nguide = "auto"\n[filters.conformance]\njudge = true\nkeep_unverified ='
        " true\n"
    )
    config = load_campaign(path)
    assert (
        config.guide_kind == "auto" and config.filters.conformance.judge and config.filters.conformance.keep_unverified
    )
    assert "mode_conformance" in config.filters.enabled
    bad = tmp_path / "bad.toml"
    bad.write_text(f'seeds = ["{BUNDLED}"]\noutput = "out"\n[filters.conformance]\njudge = "maybe"\n')
    with pytest.raises(ConfigError, match="filters.conformance.judge"):
        load_campaign(bad)


def test_notes_survive_being_embedded_in_json(seeds):
    # records keep the note inside JSON requests; a note with double quotes would appear escaped there
    for seed in seeds.values():
        for t in (s.index for s in seed.steps if s.kind == "agent" and s.index > 0):
            for mode in RULE_MODES:
                g = rules_note(seed, t, get_mode(mode))
                if g.feasible:
                    assert g.note in json.dumps({"content": g.note}), g.note


def test_only_notes_asking_for_an_offered_call_pin_their_tool(seeds):
    from failforge.injection import steer_request

    seed = seeds[BANKING3]
    a2 = rules_note(seed, 3, get_mode("A.2"))
    assert a2.pin_tool == "send_money"  # offered to stage 2; the campaign uses it only with pin_tool = true
    for code in ("A.3", "A.4", "A.5", "R.3"):  # no call, a call that is not offered, or a number moved for no reason
        made = rules_note(seed, 3, get_mode(code))
        assert made.pin_tool is None, code
    body = seed.steps[3].model_call.request
    pinned = steer_request(body, a2.note, a2.pin_tool)
    assert pinned["tool_choice"] == {"type": "function", "function": {"name": "send_money"}}
    assert pinned["messages"][:-1] == body["messages"] and a2.note in pinned["messages"][-1]["content"]
    assert "tool_choice" not in body  # the seed's own request is untouched
    assert "tool_choice" not in steer_request(
        body, a2.note, "no_such_tool"
    )  # never pin a tool the request does not offer
    assert "tool_choice" not in steer_request(body, a2.note)
