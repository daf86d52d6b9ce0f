"""The taxonomy and the rule guide on BFCL's steps: a wrong parameter and a hallucinated function apply
where the agent calls a simulator method (and the rules name the method and value), not at the words
that end a turn, such as miss_param's request for the missing detail."""

from __future__ import annotations

from tests._required import require

require("bfcl")

from failforge.environments.bfcl import ASK_FOR_DETAIL  # noqa: E402
from failforge.injection._planner import step_context  # noqa: E402
from failforge.injection._rules import rules_note  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.taxonomy import get_mode  # noqa: E402

TASK = "multi_turn_miss_param_0"  # turn 3 lacks the file name: the ground truth asks (no call)


def test_tool_modes_apply_to_method_calls_and_not_to_the_clarification():
    seed = oracle_seed("bfcl", TASK)
    assert seed.outcome is not None and seed.outcome.success
    user_steps = [s.index for s in seed.steps if s.kind == "task"]
    clarify_turn = user_steps[3]
    clarification = next(s for s in seed.steps[clarify_turn + 1 :] if s.kind == "agent")
    assert not clarification.tool_calls and clarification.content == ASK_FOR_DETAIL
    ok, why = get_mode("A.2").applicable(step_context(seed, clarification))
    assert not ok and "no tool call" in why
    call = next(s for s in seed.steps if s.kind == "agent" and s.tool_calls and s.tool_calls[0].name == "mv")
    ctx = step_context(seed, call)
    for code in ("A.2", "A.3", "A.5", "R.1"):
        assert get_mode(code).applicable(ctx)[0], code
    wrong = rules_note(seed, call.index, get_mode("A.2"))
    assert wrong.feasible and wrong.request["tool"] == "mv" and wrong.request["value"] != wrong.request["original"]
    invented = rules_note(seed, call.index, get_mode("A.3"))
    offered = {t["function"]["name"] for t in call.model_call.request["tools"]}  # type: ignore[union-attr]
    assert invented.feasible and invented.request["invented_tool"] not in offered


def test_the_held_out_function_is_offered_only_from_its_turn_in_the_recorded_requests():
    seed = oracle_seed("bfcl", "multi_turn_miss_func_0")
    offered = [{t["function"]["name"] for t in s.model_call.request["tools"]} for s in seed.agent_steps()]  # type: ignore[union-attr]
    assert "sort" not in offered[0] and "sort" in offered[-1]
    sort_call = next(s for s in seed.agent_steps() if s.tool_calls and s.tool_calls[0].name == "sort")
    assert "sort" in {t["function"]["name"] for t in sort_call.model_call.request["tools"]}  # type: ignore[union-attr]
