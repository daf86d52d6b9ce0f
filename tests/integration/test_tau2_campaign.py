"""A campaign on a tau2 conversation seed: gold whose decisive step is the agent's, and gold whose decisive
step is the simulated customer's, each confirmed failed by tau2's own evaluator.

The model is ``failforge.testing.conversation_policy.ConversationPolicy``, a pure function of (agent, request)
playing what the oracle plays (confirmation before each write), reading the values the customer states, and
making the rule guide's named mistake under a note. A.5: the agent gives its final message, or transfers the
customer to a human, before its writes are done, or the customer ends the conversation (``###STOP###``) at a
confirmation, before the write it was asked about. R.1: the customer misstates a value the run uses.
Environment, boundaries, replay, evaluator and filters are real.
"""

from __future__ import annotations

from tests._required import require

require("tau2")

from tests.integration.framework_adapters import campaign  # noqa: E402

from failforge.environments.tau2 import _package as pkg  # noqa: E402
from failforge.environments.tau2._oracle import CONFIRM, STOP  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.testing.conversation_policy import TRANSFER_TOOL, ConversationPolicy  # noqa: E402

DOMAIN, TASK = "retail", "0"


def test_gold_at_agent_and_customer_steps_confirmed_by_tau2(tmp_path):
    seed = oracle_seed("tau2", TASK, {"domain": DOMAIN})
    assert seed.outcome.success
    confirmations = [s.index for s in seed.steps if s.agent == "customer" and s.content == CONFIRM]
    assert confirmations, "the oracle's customer confirms the agent's write mid-conversation"
    with LoopbackModelServer(agent_policy=ConversationPolicy(DOMAIN, TASK)) as server:
        summary, gold = campaign(tmp_path, [seed], server, steps=20, modes=("A.5",))
    assert gold, summary
    by_party = {g.label.decisive_step: g.label.original_step.agent for g in gold}
    assert "agent" in by_party.values(), by_party
    at_customer = [g for g in gold if g.label.original_step.agent == "customer"]
    assert set(confirmations) & {g.label.decisive_step for g in at_customer}, by_party  # mid-conversation user gold
    for record in at_customer:  # the customer ended the call (at its opening or a confirmation), before the write
        step = record.label.decisive_step
        assert record.label.decisive_agent == "customer" and record.steps[step].content == STOP, by_party
        assert step in confirmations or step == 1, by_party
        assert not any(c.name in pkg.write_tools(DOMAIN) for s in record.steps[step:] for c in s.tool_calls)
        assert [s.comparable() for s in record.steps[:step]] == [s.comparable() for s in seed.steps[:step]]
    transfers = [g for g in gold if any(c.name == TRANSFER_TOOL for c in g.steps[g.label.decisive_step].tool_calls)]
    assert transfers, (
        by_party
    )  # a premature transfer to a human (the rule guide's other A.5 note where the tool is offered)
    for record in transfers:
        step = record.label.decisive_step
        assert (
            record.label.decisive_agent == "agent"
            and "hands the conversation to a human" in record.provenance["conformance"]["reason"]
        )
        assert [c.name for c in record.steps[step].tool_calls] == [TRANSFER_TOOL] and record.steps[
            -1
        ].content == "###TRANSFER###"
    for record in gold:
        assert record.outcome.success is False and record.outcome.evaluator == "tau2.evaluate_simulation"
        assert record.outcome.details["reward_breakdown"].get("DB") == 0.0


def test_gold_at_a_customer_who_misstates_an_id_confirmed_by_tau2(tmp_path):
    """R.1 at the customer's step: the customer gives a mistyped order number or zip code (the rule guide picks a
    value the run used), the agent acts on what it was told, and tau2's DB check fails; the seed's own opening,
    continued live, still succeeds."""
    seed = oracle_seed("tau2", TASK, {"domain": DOMAIN})
    with LoopbackModelServer(agent_policy=ConversationPolicy(DOMAIN, TASK)) as server:
        summary, gold = campaign(tmp_path, [seed], server, steps=20, modes=("R.1",))
    assert gold, summary
    for record in gold:
        label, step = record.label, record.label.decisive_step
        assert label.mode_code == "R.1" and label.decisive_agent == "customer" and step == 1, (
            step,
            label.decisive_agent,
        )
        assert label.changed == "user" and label.expected_decision is None and label.found_decision is None
        stated, original = record.steps[step].content or "", seed.steps[step].content or ""
        value, wrong = label.guide_request["user_value"], label.guide_request["value"]
        assert value in original and value not in stated and wrong in stated and wrong not in seed.task.instruction
        assert (
            record.provenance["conformance"]["method"] == "deterministic"
            and record.provenance["conformance"]["exhibited"] is True
        )
        assert any(
            wrong in c.arguments for s in record.steps[step + 1 :] for c in s.tool_calls
        )  # the agent acted on it
        assert record.outcome.success is False and record.outcome.details["reward_breakdown"].get("DB") == 0.0
        assert [s.comparable() for s in record.steps[:step]] == [s.comparable() for s in seed.steps[:step]]
