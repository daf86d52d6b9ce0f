"""Microsoft Agent Framework's Handoff workflow (``HandoffBuilder``, ``orchestration="handoff"``) through
failforge: the lead writes each instruction and calls MAF's ``handoff_to_<worker>`` tool, the worker (which
sees the shared conversation) calls its AgentDojo tool through the tool boundary, reports and hands back
with ``handoff_to_<lead>``, and the lead's answer without a handoff ends the run. Model-recorded seeds on
five tasks audit identical, a streamed run replays identically; gold at the lead's handoff (C.1: the
instruction it hands on carries a changed figure) and at a worker's tool call (R.3), read back by the
Who&When importer with the same agent and step.

The model is the adapter's scripted team policy behind a loopback server (framework_adapters.LoopbackTeam)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _required import require

require("agent_framework")
require("agentdojo")

from framework_adapters import LoopbackTeam, campaign, is_worker, model_seed, replayed_identically  # noqa: E402

from failforge.environments import environment  # noqa: E402
from failforge.fidelity import audit  # noqa: E402
from failforge.harnesses.agent_framework_team import HANDOFF, NAME  # noqa: E402
from failforge.plugins import exporters, importers  # noqa: E402
from failforge.seeds import env_spec, harness_for  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.trajectory import Trajectory  # noqa: E402

TASKS = (
    "banking/user_task_3",
    "banking/user_task_1",
    "slack/user_task_0",
    "slack/user_task_2",
    "workspace/user_task_0",
)
LEAD = "orchestrator"
HANDOFF_MODE = {"orchestration": "handoff"}


class HandoffTeams:
    """The scripted team of the task the conversation carries (every agent sees the task in a handoff workflow)."""

    def __init__(self, tasks: tuple[str, ...]) -> None:
        self.teams = {}
        for task in tasks:
            spec = env_spec("agentdojo", task)
            with environment("agentdojo").open(spec) as episode:
                self.teams[episode.instruction()] = LoopbackTeam(harness_for(NAME, spec, **HANDOFF_MODE), task)

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        text = json.dumps(body.get("messages") or [])
        team = next(
            (t for instruction, t in self.teams.items() if json.dumps(instruction)[1:-1] in text),
            next(iter(self.teams.values())),
        )
        return team(agent, body)


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=HandoffTeams(TASKS)) as running:
        yield running


@pytest.fixture(scope="module")
def seeds(server) -> list[Trajectory]:
    return [model_seed(NAME, server, task, **HANDOFF_MODE) for task in TASKS]


def test_handoff_seeds_on_five_tasks_address_each_handoff_and_audit_identical(seeds):
    for task, seed in zip(TASKS, seeds, strict=True):
        assert (
            seed.outcome is not None and seed.outcome.success and seed.harness.config["orchestration"] == "handoff"
        ), seed.id
        lead = [s for s in seed.agent_steps() if s.agent == LEAD]
        handoffs = [s for s in lead if s.tool_calls]
        assert handoffs and all(
            s.tool_calls[0].name == HANDOFF.format(agent=s.recipient) and is_worker(s.recipient) for s in handoffs
        ), seed.id
        for step in handoffs:  # MAF acted on the handoff: the worker it names speaks next
            assert seed.steps[step.index + 1].agent == step.recipient
        assert not lead[-1].tool_calls and lead[-1].recipient == "user"
        backs = [
            s
            for s in seed.agent_steps()
            if is_worker(s.agent) and s.tool_calls and s.tool_calls[0].name == HANDOFF.format(agent=LEAD)
        ]
        assert len(backs) == len(handoffs) and all(s.recipient == LEAD for s in backs)
        calls, _ = environment("agentdojo").ground_truth(env_spec("agentdojo", task))
        assert [s.tool_name for s in seed.steps if s.kind == "tool"] == [c for c, _ in calls], seed.id
    report = audit(seeds)
    assert [(e.seeds, e.identical, e.evaluator_success_on_replay) for e in report.environments] == [
        (len(TASKS), len(TASKS), len(TASKS))
    ], report


def test_a_streamed_handoff_workflow_streams_every_agent_keeps_the_leads_answer_and_replays_identically(server, seeds):
    streamed = model_seed(NAME, server, TASKS[0], streaming=True, **HANDOFF_MODE)
    assert streamed.outcome is not None and streamed.outcome.success
    assert all(s.model_call.request.get("stream") is True for s in streamed.agent_steps())
    answer = streamed.outcome.details[
        "final_output"
    ]  # what the run returned, as the evaluator got it: the lead's last turn, from its updates
    assert answer and answer == seeds[0].outcome.details["final_output"] == streamed.final_output()
    identical, why = replayed_identically(streamed)
    assert identical, why


@pytest.fixture(scope="module")
def gold(tmp_path_factory, seeds, server) -> list[Trajectory]:
    summary, kept = campaign(tmp_path_factory.mktemp("maf-handoff"), [seeds[0]], server, modes=("C.1", "R.3"))
    assert summary.failed == 0, summary.failed_by
    return kept


def test_gold_at_the_leads_handoff_and_at_a_worker_read_back_with_the_same_agent_and_step(tmp_path, gold, seeds):
    seed = seeds[0]
    found = {(g.label.decisive_agent, g.label.mode_code) for g in gold}
    assert (LEAD, "C.1") in found and any(is_worker(a) and m == "R.3" for a, m in found), found
    for record in gold:
        agent, t = record.label.decisive_agent, record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        if agent == LEAD:  # the instruction it hands on changed; MAF still handed off to that worker
            assert (
                record.steps[t].content != seed.steps[t].content
                and record.steps[t + 1].agent == record.steps[t].recipient
            )
        out = tmp_path / f"{agent}-{t}"
        exporters.get("whowhen")([record], out)
        back = [r for r in importers.get("whowhen")(out) if hasattr(r, "gold")]
        assert len(back) == 1 and (back[0].gold.agent, back[0].gold.step) == (agent, t)
