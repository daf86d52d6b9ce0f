"""Microsoft Agent Framework (MAF's Magentic workflow, ``MagenticBuilder``) through failforge: the manager's
task ledger, plan, progress ledgers and final answer labelled by purpose at the model boundary, Agent
workers using AgentDojo's tools through the tool boundary; model-recorded seeds on five tasks audit
identical, a streamed workflow run replays identically, gold at the manager's progress ledger (C.1) and at
a worker (R.3), and gold exported as Who&When logs and Who&When Pro rows is read back by failforge's own
importers with the same agent and step.

The model is the adapter's scripted team policy behind a loopback server (a pure function of (agent,
request)); under a steering note the acting agent slips a figure (in a ledger: in the instruction it
hands on, the JSON kept valid, so MAF's manager accepts it and the named worker acts on it)."""
# ruff: noqa: E402  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import json
from typing import Any

import pytest

from _required import require

require("agent_framework")
require("agentdojo")

from framework_adapters import (
    LoopbackTeam,
    campaign,
    is_worker,
    model_seed,
    replayed_identically,
    requests_of,
    slip,
)  # noqa: E402

from failforge.attribution.importers.failforge_gold import from_trajectory  # noqa: E402
from failforge.environments import environment  # noqa: E402
from failforge.fidelity import audit  # noqa: E402
from failforge.harnesses.agent_framework_team import NAME  # noqa: E402
from failforge.harnesses.magentic_one_team import (
    FINAL_ANSWER,
    PLAN,
    PROGRESS_LEDGER,
    TASK_LEDGER,
    dump_ledger,
    prompt_kind,
)  # noqa: E402
from failforge.injection import NOTE_PREFIX  # noqa: E402
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
LEDGER_KEYS = {
    "is_request_satisfied",
    "is_in_loop",
    "is_progress_being_made",
    "next_speaker",
    "instruction_or_question",
}
LEAD = "orchestrator"


class MafTeams:
    """The scripted team for several tasks behind one loopback server: each call is answered by the team of
    the task its conversation carries (the manager's prompts repeat the task; a worker's answer depends on
    its instruction alone). Guide, judge and a worker's slip are LoopbackTeam's; a
    progress ledger under a note slips the figure in the instruction it hands on, on the parsed JSON."""

    def __init__(self, tasks: tuple[str, ...]) -> None:
        self.teams = {}
        for task in tasks:
            spec = env_spec("agentdojo", task)
            with environment("agentdojo").open(spec) as episode:
                self.teams[episode.instruction()] = LoopbackTeam(harness_for(NAME, spec), task)

    def team_for(self, agent: str | None, messages: list[dict[str, Any]]) -> LoopbackTeam:
        text = json.dumps(messages)
        found = next((t for instruction, t in self.teams.items() if json.dumps(instruction)[1:-1] in text), None)
        if found is not None:
            return found
        # a MAF worker sees only its instructions, not the task: a worker's answer depends on the
        # instruction alone, so any team that has this worker answers it alike
        return next((t for t in self.teams.values() if agent in t.policy.workers), next(iter(self.teams.values())))

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body.get("messages") or []
        team = self.team_for(agent, messages)
        last = messages[-1] if messages else {}
        noted = last.get("role") in ("system", "developer") and str(last.get("content") or "").startswith(NOTE_PREFIX)
        if agent == LEAD and noted and prompt_kind(messages[:-1]) == PROGRESS_LEDGER:
            content, _ = team.policy.respond(agent, {**body, "messages": messages[:-1]})
            ledger = json.loads(str(content))
            ledger["instruction_or_question"]["answer"], _ = slip(ledger["instruction_or_question"]["answer"])
            return dump_ledger(ledger), None
        return team(agent, body)


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=MafTeams(TASKS)) as running:
        yield running


@pytest.fixture(scope="module")
def seeds(server) -> list[Trajectory]:
    return [model_seed(NAME, server, task) for task in TASKS]


def ledger_of(step: Any) -> dict[str, Any]:
    data = json.loads(step.content)
    assert set(data) == LEDGER_KEYS, step.content
    return data


def test_every_manager_call_is_labelled_and_the_ledgers_address_the_speaker_they_name(seeds):
    for task, seed in zip(TASKS, seeds, strict=True):
        assert seed.outcome is not None and seed.outcome.success and not seed.oracle and seed.harness.name == NAME, (
            seed.id
        )
        manager = [s for s in seed.agent_steps() if s.agent == LEAD]
        purposes = [s.model_call.purpose for s in manager]
        assert (
            purposes[:2] == [TASK_LEDGER, PLAN]
            and purposes[-1] == FINAL_ANSWER
            and set(purposes[2:-1]) == {PROGRESS_LEDGER}
        ), (seed.id, purposes)
        for (
            step
        ) in manager:  # the purpose came from the manager method that ran; the request is the prompt MAF wrote for it
            assert prompt_kind(step.model_call.request["messages"]) == step.model_call.purpose
        for step in (s for s in manager if s.model_call.purpose == PROGRESS_LEDGER):
            data = ledger_of(step)
            named = data["next_speaker"]["answer"]
            if data["is_request_satisfied"]["answer"]:
                assert step.recipient == LEAD
            else:
                assert is_worker(named) and step.recipient == named
                follower = seed.steps[
                    step.index + 1
                ]  # MAF acted on the ledger: the named worker speaks next, on its instruction
                assert follower.agent == named and follower.model_call.purpose is None
                assert follower.model_call.request["messages"][-1] == {
                    "role": "user",
                    "content": data["instruction_or_question"]["answer"],
                }
        assert manager[-1].recipient == "user"
        workers = [s for s in seed.agent_steps() if is_worker(s.agent)]
        assert workers and all(s.model_call.purpose is None for s in workers)
        assert all(r.get("parallel_tool_calls") is False for r in requests_of(seed) if r.get("tools"))
        calls, _ = environment("agentdojo").ground_truth(env_spec("agentdojo", task))
        assert [s.tool_name for s in seed.steps if s.kind == "tool"] == [c for c, _ in calls], seed.id


def test_the_five_seeds_audit_identical(seeds):
    report = audit(seeds)
    assert [(e.seeds, e.identical, e.evaluator_success_on_replay) for e in report.environments] == [
        (len(TASKS), len(TASKS), len(TASKS))
    ], report


def test_a_streamed_workflow_streams_the_workers_and_replays_identically(server):
    streamed = model_seed(NAME, server, streaming=True)
    assert streamed.outcome.success
    worker_requests = [s.model_call.request for s in streamed.agent_steps() if is_worker(s.agent)]
    assert worker_requests and all(r.get("stream") is True for r in worker_requests)
    identical, why = replayed_identically(streamed)
    assert identical, why


@pytest.fixture(scope="module")
def gold(tmp_path_factory, seeds, server) -> list[Trajectory]:
    summary, kept = campaign(tmp_path_factory.mktemp("maf"), [seeds[0]], server, modes=("C.1", "R.3"))
    assert summary.failed == 0, summary.failed_by
    return kept


def test_gold_at_the_managers_progress_ledger_and_at_a_worker(gold, seeds):
    seed = seeds[0]
    at_manager = [g for g in gold if g.label.decisive_agent == LEAD]
    at_worker = [g for g in gold if is_worker(g.label.decisive_agent)]
    assert at_manager and at_worker, [(g.label.decisive_agent, g.label.mode_code) for g in gold]
    assert any(g.label.mode_code == "C.1" for g in at_manager)
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        assert record.harness.name == NAME and from_trajectory(record).framework == NAME
    for record in at_manager:
        step = record.steps[record.label.decisive_step]
        assert step.model_call.purpose == PROGRESS_LEDGER
        data = ledger_of(step)  # the injected ledger is valid JSON MAF parsed: its named worker acted on it
        assert record.steps[step.index + 1].agent == data["next_speaker"]["answer"] == step.recipient
        assert (
            data["instruction_or_question"]["answer"]
            != ledger_of(seed.steps[step.index])["instruction_or_question"]["answer"]
        )


def test_gold_exported_as_who_and_when_and_who_and_when_pro_reads_back_with_the_same_agent_and_step(tmp_path, gold):
    for agent_is in (lambda a: a == LEAD, is_worker):
        record = next(g for g in gold if agent_is(g.label.decisive_agent))
        agent, t = record.label.decisive_agent, record.label.decisive_step
        out = tmp_path / agent
        exporters.get("whowhen")([record], out / "ww")
        back = [r for r in importers.get("whowhen")(out / "ww") if hasattr(r, "gold")]
        assert len(back) == 1 and back[0].gold.agent == agent and back[0].gold.step == t
        exporters.get("whowhen-pro")([record], out / "wwp")
        row = json.loads((out / "wwp" / "data" / "text.jsonl").read_text().splitlines()[0])
        assert (
            json.loads(row["ground_truth"])["step"] == record.steps[t].coordinate
            and json.loads(row["extras"])["source"]["framework"] == NAME
        )
        pro = [r for r in importers.get("whowhen-pro")(out / "wwp") if hasattr(r, "gold")]
        assert len(pro) == 1 and pro[0].gold.agent == agent
        coordinate = pro[0].steps[pro[0].gold.step].coordinate
        assert f"{coordinate.round}.{coordinate.position}" == record.steps[t].coordinate


def test_gold_exported_in_the_hand_crafted_shape_reads_back_with_the_addressee_in_the_role(tmp_path, gold):
    """Who&When's Hand-Crafted (Magentic-One) logs name the addressee in the role:
    ``orchestrator (-> banking_worker)``."""
    record = next(g for g in gold if g.label.decisive_agent == LEAD)
    t = record.label.decisive_step
    exporters.get("whowhen-hand-crafted")([record], tmp_path / "hc")
    log = json.loads((tmp_path / "hc" / "1.json").read_text())
    assert "is_corrected" in log and all("name" not in e for e in log["history"])
    (back,) = [r for r in importers.get("whowhen")(tmp_path / "hc") if hasattr(r, "gold")]
    assert back.source == "who_and_when/hand_crafted" and (back.gold.agent, back.gold.step) == (LEAD, t)
    worker = record.steps[t].recipient
    assert is_worker(worker) and back.steps[t].role == f"{LEAD} (-> {worker})" and back.steps[t].recipient == worker
    assert [s.agent for s in back.steps if s.kind == "agent"] == [s.agent for s in record.steps if s.kind == "agent"]
