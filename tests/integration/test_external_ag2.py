"""AG2's GroupChat (ag2 0.14.0, the classic ``autogen`` API of Who&When's Algorithm-Generated logs) as an
external agent in its own venv: a manager that writes each worker's instruction into the group chat, a
worker per tool domain proposing and executing its own MCP tools, and the GroupChatManager's LLM speaker
selection, whose calls reach failforge on the ``selector`` route labelled ``speaker_selection``.

Seeds from the loopback team model on five AgentDojo tasks audit identical; the manager's chat-text
instructions are addressed to their worker by the roster's text handoffs (``Handoff(addressed=...)``), so a
campaign keeps gold at the manager's instruction (C.1) and at a worker's tool call (R.3), both confirmed by
AgentDojo's evaluator; a gold record of each exported as a Who&When log reads back with the same agent and step.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from _required import require

require("agentdojo")
require("venv_ag2")

from external_teams import TASKS, LoopbackTeams, external_team, record_seed, roster_for, venv_python  # noqa: E402
from framework_adapters import campaign  # noqa: E402

from failforge.fidelity import audit  # noqa: E402
from failforge.harnesses._frameworks import Answer, TeamPolicy, text_of  # noqa: E402
from failforge.plugins import exporters, importers  # noqa: E402
from failforge.roster import AgentProfile, Handoff  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

pytestmark = pytest.mark.timeout(900)
FRAMEWORK = "ag2"
SCRIPT = "examples/external/ag2_groupchat_team.py"
SELECTOR = "selector"
DONE = "TERMINATE"
_ADDRESSED = re.compile(r"^(\w+): Call \w+ with arguments")


def ag2_roster(suite: str) -> list[AgentProfile]:
    """The manager, the speaker selector, the workers. The manager's instructions are group-chat text
    (``<worker>: <instruction>``), so its handoffs are text handoffs, one per worker, not tools."""
    base = roster_for(suite)
    lead = base[0].model_copy(
        update={"handoffs": [Handoff(addressed=f"^{re.escape(w.name)}:", to=w.name) for w in base[1:]]}
    )
    selector = AgentProfile(
        name=SELECTOR,
        role="selector",
        description="the group chat's speaker selection",
        reports_to=lead.name,
        opens_rounds=False,
    )
    return [lead, selector, *base[1:]]


class GroupChatPolicy(TeamPolicy):
    """The scripted team as an AG2 group chat spells it: the manager writes ``<worker>: <instruction>``
    and ends with ``TERMINATE``; the selector answers the speaker-selection prompt with the worker the
    manager's last message addresses, else the manager; a worker calls its tool (AG2 runs it as the
    worker's next turn) and the manager reads the result in the chat."""

    def respond(self, agent: str, body: dict[str, Any]) -> Answer:
        if agent == SELECTOR:
            return self.select(list(body.get("messages") or [])), None
        return super().respond(agent, body)

    def agents(self) -> list[str]:
        return [self.config.lead.name, SELECTOR, *self.workers]

    def select(self, messages: list[dict[str, Any]]) -> str:
        lead = self.config.lead.name
        said = [m for m in messages if m.get("role") != "system" and m.get("name")]
        last = said[-1] if said else {}
        if last.get("name") == lead:
            named = _ADDRESSED.match(text_of(last.get("content")))
            return named.group(1) if named and named.group(1) in self.workers else lead
        return lead

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(1 for m in messages if m.get("role") == "assistant" and _ADDRESSED.match(text_of(m.get("content"))))

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return f"{worker}: {instruction}", None

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return (f"{text} {DONE}" if agent == self.config.lead.name else text), None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return text_of(last.get("content")) if last.get("role") == "tool" else None


ROSTERS = {task: ag2_roster(task.split("/")[0]) for task in TASKS}


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=LoopbackTeams(GroupChatPolicy, ROSTERS)) as running:
        yield running


@pytest.fixture(scope="module")
def seeds(server):
    return [
        record_seed(
            external_team(venv_python("ag2"), SCRIPT, FRAMEWORK, ROSTERS[task], timeout=180), task, server.base_url
        )
        for task in TASKS
    ]


def test_seeds_on_five_tasks_label_the_speaker_selection_and_audit_identical(seeds):
    for seed, task in zip(seeds, TASKS, strict=True):
        assert seed.outcome.success, (task, seed.outcome)
        assert seed.harness.config["framework"] == FRAMEWORK and seed.harness.config["framework_version"] == "0.14.0"
        steps = seed.agent_steps()
        selections = [s for s in steps if s.agent == SELECTOR]
        assert selections and all(s.model_call.purpose == "speaker_selection" for s in selections)
        assert all(s.model_call.purpose is None for s in steps if s.agent != SELECTOR)
        for step in selections:  # AG2 acted on each selection: the agent named speaks next (with a model call)
            following = next(s for s in steps if s.index > step.index)
            assert following.agent == step.content.strip(), (seed.id, step.index)
        tools = [s for s in seed.steps if s.kind == "tool"]
        assert tools and all(s.state_fingerprint and s.tool_call_id and s.recipient.endswith("_worker") for s in tools)
        assert all(
            r.get("parallel_tool_calls") is False for r in (s.model_call.request for s in steps) if r.get("tools")
        )
    report = audit(seeds)
    (env,) = report.environments
    assert env.identical == env.seeds == env.evaluator_success_on_replay == len(TASKS), report.seeds


def test_the_managers_instructions_are_addressed_to_the_worker_they_name(seeds):
    """The text handoffs at work: each ``<worker>: ...`` message goes to that worker (the step C.1 and C.2
    apply at), the final answer to the user; the worker's tool results reach the manager in the chat."""
    for seed in seeds:
        said = [s for s in seed.agent_steps() if s.agent == "manager"]
        named = [(s, m.group(1)) for s in said if (m := _ADDRESSED.match(s.content or ""))]
        assert named and all(s.recipient == worker for s, worker in named), seed.id
        assert said[-1].recipient == "user" and DONE in (said[-1].content or "")
        assert all(
            s.recipient == s.agent for s in seed.agent_steps() if s.agent == SELECTOR
        )  # a speaker choice stays with the selector


@pytest.fixture(scope="module")
def gold(tmp_path_factory, seeds, server):
    # every point: a random subset may miss the one instruction or call whose figure decides
    summary, kept = campaign(tmp_path_factory.mktemp("ag2"), [seeds[1]], server, steps=16, modes=("C.1", "R.3"))
    assert summary.failed == 0, summary.failed_by
    return kept


def test_gold_at_the_managers_instruction_and_at_a_workers_tool_call(gold, seeds):
    """C.1 at the manager: the instruction it writes into the chat hands the worker a changed figure, the
    worker AG2 selects acts on it; R.3 at a worker: its own tool call's arguments."""
    seed = seeds[1]
    found = {(g.label.decisive_agent, g.label.mode_code) for g in gold}
    assert ("manager", "C.1") in found and any(a.endswith("_worker") and m == "R.3" for a, m in found), found
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        if record.label.decisive_agent == "manager":
            step = record.steps[t]
            addressed = _ADDRESSED.match(step.content or "")
            assert addressed and step.recipient == addressed.group(1) and not step.tool_calls
            assert step.content != seed.steps[t].content
            following = next(s for s in record.steps[t + 1 :] if s.kind == "agent" and s.agent != SELECTOR)
            assert following.agent == step.recipient  # the worker it addressed acted on it
        else:
            assert (
                record.steps[t].tool_calls
                and record.steps[t].tool_calls[0].arguments != seed.steps[t].tool_calls[0].arguments
            )


def test_gold_exported_as_a_who_and_when_log_reads_back_with_the_same_agent_and_step(tmp_path, gold):
    read = set()
    for record in gold:
        agent, t, mode = record.label.decisive_agent, record.label.decisive_step, record.label.mode_code
        out = tmp_path / f"{agent}-{t}-{mode}"
        exporters.get("whowhen")([record], out)
        back = [r for r in importers.get("whowhen")(out) if hasattr(r, "gold")]
        assert len(back) == 1 and (back[0].gold.agent, back[0].gold.step) == (agent, t)
        read.add((agent, mode))
    assert ("manager", "C.1") in read
