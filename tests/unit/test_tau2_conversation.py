"""The conversation harness's roster and stop rules (no tau2 needed): the customer is an agent with role ``user``."""

from __future__ import annotations

import pytest

from failforge.errors import ConfigError
from failforge.harnesses.conversation import ConversationHarness, _stopped
from failforge.roster import ROLES, AgentProfile, StepAddresser, check_roster


def test_roster_has_the_customer_as_a_user_role_member():
    roster = ConversationHarness().roster()
    check_roster(roster)  # role "user" is known, names are not reserved
    assert "user" in ROLES
    assert [(p.name, p.role, p.reports_to) for p in roster] == [
        ("agent", "agent", "customer"),
        ("customer", "user", "agent"),
    ]


def test_the_name_user_stays_reserved_for_the_task_author():
    with pytest.raises(ConfigError, match="cannot be an agent's name"):
        check_roster([AgentProfile(name="user", role="user")])


class _Step:
    def __init__(self, agent: str, calls: list = (), kind: str = "agent") -> None:  # type: ignore[assignment]
        self.kind = kind
        self.agent = agent
        self.tool_calls = list(calls)
        self.tool_call_id = None
        self.model_call = None


def test_messages_are_addressed_between_the_two_parties():
    addresser = StepAddresser(ConversationHarness().roster())
    assert addresser.address(_Step("customer"))[0] == "agent"
    assert addresser.address(_Step("agent"))[0] == "customer"


def test_stop_tokens_end_the_conversation_and_nothing_else_does():
    assert _stopped("Thanks! ###STOP###") and _stopped("###TRANSFER###") and _stopped("###OUT-OF-SCOPE###")
    assert not _stopped("Please stop the order") and not _stopped(None) and not _stopped("")


def test_an_environment_without_a_user_is_refused_in_one_line():
    class Plain:
        def schemas(self) -> list:
            return []

    with pytest.raises(ConfigError, match="needs an environment with a simulated user"):
        ConversationHarness().run(None, "m", "task", Plain())  # type: ignore[arg-type]
