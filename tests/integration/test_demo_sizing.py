"""An environment demo's seeds are recorded with the live budgets its ``demo_harness`` names, and still succeed.

The demo continues every branch live on the embedded model, so tau2, BFCL and DA-Bench size their continuations (turns,
calls per turn, tokens per reply) for it. The oracle must still finish every demo task within those budgets, or
the demo would branch failed seeds; the seeds keep their default ids (the harness is the default one, resized).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._required import missing

from failforge.environments import environment
from failforge.seeds import oracle_seed


@pytest.mark.parametrize("env", ["tau2", "bfcl", "dabench"])
def test_demo_seeds_succeed_within_the_demo_harness_budgets(env: str, tmp_path: Path) -> None:
    problem = missing({"dabench": "dabench_local"}.get(env, env))
    if problem:
        pytest.skip(problem)
    plugin = environment(env)
    tasks, options = plugin.demo(tmp_path)
    budgets = plugin.demo_harness()
    assert budgets, f"{env} names no demo budgets"
    for task in tasks:
        seed = oracle_seed(env, task, options, harness_config=budgets)
        default = oracle_seed(env, task, options)
        assert seed.outcome is not None and seed.outcome.success, f"{env} demo task {task} fails within {budgets}"
        assert seed.id == default.id
        config = seed.harness.config
        for key, value in budgets.items():
            assert config[key] == value, (key, config[key])
        assert config != default.harness.config


def test_tau2_demo_budget_ends_a_live_run_at_its_turn_limit() -> None:
    """Four turns: the demo's seeds end in their third exchange, so a late step leaves at most two live ones."""
    problem = missing("tau2")
    if problem:
        pytest.skip(problem)
    plugin = environment("tau2")
    tasks, options = plugin.demo(Path("."))
    seed = oracle_seed("tau2", tasks[0], options, harness_config=plugin.demo_harness())
    customer_messages = [s for s in seed.steps if s.agent == "customer" and not s.tool_calls]
    assert len(customer_messages) == 3  # the STOP is the third customer message
    assert seed.harness.config["max_turns"] == 4
