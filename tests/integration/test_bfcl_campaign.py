"""BFCL multi-turn through the whole failforge path: the environment self-check, oracle seeds that BFCL's
own multi_turn_checker accepts and that replay identically, and a campaign whose gold is confirmed failed
by that checker. The model is a loopback policy (a pure function of the request: the ground truth per
turn, and under a note the same call with its first number one larger); simulators, checker, replay,
injection and filters are real.
"""

from __future__ import annotations

import json
from typing import Any

from tests._required import require

require("bfcl")

from tests.integration.framework_adapters import NOTES, campaign, concrete, slipped  # noqa: E402

from failforge.environments.bfcl import entry_of, oracle_script  # noqa: E402
from failforge.fidelity import assert_self_check  # noqa: E402
from failforge.injection import NOTE_PREFIX  # noqa: E402
from failforge.replay import replay  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

TASK = "multi_turn_base_100"  # TradingBot: get_stock_info, then fund_account(amount=2203.4) in turn 2


def test_conformance_on_a_base_and_a_miss_func_task():
    for task in ("multi_turn_base_0", "multi_turn_miss_func_0"):
        report = assert_self_check("bfcl", task)
        assert report.passed, report.summary()


def test_oracle_seeds_of_each_category_pass_the_checker_and_replay_identically():
    for task in ("multi_turn_base_3", "multi_turn_miss_func_5", "multi_turn_miss_param_5", "multi_turn_long_context_3"):
        seed = oracle_seed("bfcl", task)
        assert (
            seed.outcome is not None and seed.outcome.success and seed.outcome.evaluator == "bfcl.multi_turn_checker"
        ), seed.outcome
        turns = [s for s in seed.steps if s.kind == "task"]
        assert len(turns) == len(entry_of(task)[1])  # one user step per BFCL turn
        report = replay(seed, raise_on_drift=False)
        assert report.identical and report.outcome is not None and report.outcome.success, report.to_dict()


def test_a_changed_user_turn_is_caught_in_replay():
    seed = oracle_seed("bfcl", TASK)
    index = [s.index for s in seed.steps if s.kind == "task"][1]
    steps = list(seed.steps)
    steps[index] = steps[index].model_copy(update={"content": "Please fund my account with 1 dollar."})
    report = replay(seed.model_copy(update={"steps": steps}), raise_on_drift=False)
    assert not report.identical and report.drift is not None and report.steps_replayed <= index


class Policy:
    """The ground truth per turn; the guide's note; under a note, the usual call with its first number + 1."""

    def __init__(self, task: str) -> None:
        self.script = oracle_script(*entry_of(task))

    def __call__(self, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body.get("messages") or []
        system = str((messages[0] or {}).get("content") or "") if messages else ""
        if "realistic mistakes" in system:
            return concrete(NOTES["R.3"], str(messages[1].get("content") or "")), None
        last = messages[-1] if messages else {}
        if last.get("role") in ("system", "developer") and str(last.get("content") or "").startswith(NOTE_PREFIX):
            return slipped(self.script(0, {**body, "messages": messages[:-1]}))  # type: ignore[no-any-return]
        return self.script(0, body)  # type: ignore[no-any-return]


def test_campaign_keeps_gold_that_the_checker_confirms_failed(tmp_path):
    seed = oracle_seed("bfcl", TASK)
    assert seed.outcome is not None and seed.outcome.success
    with LoopbackModelServer(policy=Policy(TASK)) as server:
        summary, gold = campaign(tmp_path, [seed], server, steps=12, modes=("R.3",))
    assert summary.failed == 0
    assert gold, "no gold kept"
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        injected = record.steps[t]
        assert injected.phase == "injected" and injected.tool_calls[0].name == "fund_account"
        assert injected.tool_calls[0].parsed_arguments() == {"amount": 2204.4}
        assert (
            record.outcome is not None
            and record.outcome.success is False
            and record.outcome.evaluator == "bfcl.multi_turn_checker"
        )
        assert "mismatch" in json.dumps(record.outcome.details)
