"""tau2-bench through failforge: oracle conversation seeds scored by tau2's own evaluator, replayed identically,
with the user simulator as the roster member ``customer`` whose calls go through the model boundary."""

from __future__ import annotations

import pytest
from tests._required import require

require("tau2")

from failforge.environments import environment  # noqa: E402
from failforge.environments.tau2 import _package as pkg  # noqa: E402
from failforge.environments.tau2._oracle import _Script  # noqa: E402
from failforge.errors import ConfigError  # noqa: E402
from failforge.fidelity import audit  # noqa: E402
from failforge.harnesses.conversation import ConversationHarness  # noqa: E402
from failforge.llm import TeamOracle  # noqa: E402
from failforge.seeds import oracle_seed, record  # noqa: E402
from failforge.trajectory import ComponentSpec  # noqa: E402

TELECOM_TASK = "[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"


@pytest.mark.parametrize(("domain", "task_id"), [("retail", "0"), ("telecom", TELECOM_TASK)])
def test_oracle_seed_scores_one_and_replays_identically(domain, task_id):
    seed = oracle_seed("tau2", task_id, {"domain": domain})
    assert seed.outcome.success and seed.outcome.score == 1.0, seed.outcome.details
    assert seed.outcome.evaluator == "tau2.evaluate_simulation"
    agents = {s.agent for s in seed.steps if s.kind == "agent"}
    assert agents == {"agent", "customer"}
    # recipients: the customer talks to the agent, the agent's messages go to the customer, tool calls to the
    # environment
    for step in seed.steps:
        if step.kind == "agent" and not step.tool_calls:
            assert step.recipient == ("agent" if step.agent == "customer" else "customer"), step
        if step.kind == "agent" and step.tool_calls:
            assert step.recipient == "environment"
    parts = next(s.state_parts for s in seed.steps if s.kind == "tool")
    assert any(k.startswith("db.") for k in parts)
    if domain == "telecom":  # dual control: the customer's own device tools ran, and the device state is fingerprinted
        assert any(s.agent == "customer" and s.tool_calls for s in seed.steps)
        assert any(k.startswith("user_db.") for k in parts)
    report = audit([seed])
    assert report.seeds[0]["identical"] is True, report.seeds[0]


def test_dropping_the_last_write_fails_tau2s_evaluator():
    """The evaluator discriminates: the same conversation without the last ground-truth write scores 0."""
    spec = environment("tau2").spec("0", environment("tau2").Options(domain="retail"))
    task = pkg.task("retail", "base", "0")
    script = _Script(
        task, pkg.write_tools("retail")
    )  # the oracle confirms writes first, as environment("tau2").oracle does
    script.actions = script.actions[:-1]
    oracle = TeamOracle({"agent": script.agent, "customer": script.customer}, name="tau2.truncated")
    run = record(
        env_spec=spec, harness=ConversationHarness(), model=ComponentSpec(name="m"), upstream=oracle, oracle=True
    )
    assert run.outcome.success is False and run.outcome.score == 0.0
    assert run.outcome.details["reward_breakdown"].get("DB") == 0.0


def test_bad_input_is_one_line():
    plugin = environment("tau2")
    with pytest.raises(ConfigError, match="has no task 'nope'"):
        plugin.spec("nope", plugin.Options(domain="airline"))
    with pytest.raises(ConfigError, match="unknown tau2 domain 'airlne'"):
        pkg.check_domain("airlne")
    with pytest.raises(ConfigError, match="no split 'basee'"):
        pkg.tasks("retail", "basee")


def test_without_a_domain_the_tasks_are_every_domains_and_name_it() -> None:
    from failforge.seeds import env_spec

    tasks = environment("tau2").tasks(environment("tau2").Options())
    domains = {t.split("/", 1)[0] for t in tasks}
    assert domains == {"airline", "retail", "telecom"} and "airline/0" in tasks and len(tasks) > 200
    spec = env_spec("tau2", "retail/0")
    assert (spec.config["domain"], spec.config["task_id"]) == ("retail", "0")
    assert (
        env_spec("tau2", "0", {"domain": "airline"}).config["domain"] == "airline"
    )  # with --domain, the bare id as before
    with pytest.raises(ConfigError, match="names no domain"):
        env_spec("tau2", "0")
