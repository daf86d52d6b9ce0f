"""Magentic-One (AutoGen AgentChat's MagenticOneGroupChat) through failforge: the orchestrator's task
ledger, plan, progress ledgers and final answer labelled by purpose at the model boundary, workers using
AgentDojo's tools through the tool boundary; model-recorded seeds on five tasks audit identical, the
progress ledger's JSON comes back verbatim in replay, gold at the orchestrator's progress ledger (C.1)
and at a worker (R.3), and gold exported as Who&When logs and Who&When Pro rows is read back by
failforge's own importers with the same agent and step (the row's ``R.P``).

The model is the adapter's scripted team policy behind a loopback server (a pure function of (agent,
request)); under a steering note the acting agent slips a figure (in a ledger: in the instruction it
hands on, the JSON kept valid, so Magentic-One accepts it and the named worker acts on it)."""
# ruff: noqa: E402  (imported after the parts they need are checked, or for their side effects)

from __future__ import annotations

import json
from typing import Any

import pytest

from _required import require

require("autogen")
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
from failforge.harnesses.magentic_one_team import (
    FINAL_ANSWER,
    NAME,
    PLAN,
    PROGRESS_LEDGER,
    TASK_LEDGER,
    dump_ledger,
    prompt_kind,
)  # noqa: E402
from failforge.injection import NOTE_PREFIX  # noqa: E402
from failforge.plugins import exporters, importers  # noqa: E402
from failforge.replay import replay  # noqa: E402
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


class MagenticTeams:
    """The scripted Magentic-One team for several tasks behind one loopback server: each call is answered
    by the team of the task its conversation carries (every Magentic-One prompt, and every worker's
    context, repeats the task). Guide, judge and a worker's slip are framework_adapters' LoopbackTeam's;
    a progress ledger under a note slips the figure in the instruction it hands on, on the parsed JSON
    object, so the ledger stays valid JSON."""

    def __init__(self, tasks: tuple[str, ...]) -> None:
        self.teams = {}
        for task in tasks:
            spec = env_spec("agentdojo", task)
            with environment("agentdojo").open(spec) as episode:
                self.teams[episode.instruction()] = LoopbackTeam(harness_for(NAME, spec), task)

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body.get("messages") or []
        text = json.dumps(messages)
        team = next(
            (t for instruction, t in self.teams.items() if json.dumps(instruction)[1:-1] in text),
            next(iter(self.teams.values())),
        )
        last = messages[-1] if messages else {}
        noted = last.get("role") in ("system", "developer") and str(last.get("content") or "").startswith(NOTE_PREFIX)
        if agent == "orchestrator" and noted and prompt_kind(messages[:-1]) == PROGRESS_LEDGER:
            content, _ = team.policy.respond(agent, {**body, "messages": messages[:-1]})
            ledger = json.loads(str(content))
            ledger["instruction_or_question"]["answer"], _ = slip(ledger["instruction_or_question"]["answer"])
            return dump_ledger(ledger), None
        return team(agent, body)


@pytest.fixture(scope="module")
def server():
    with LoopbackModelServer(agent_policy=MagenticTeams(TASKS)) as running:
        yield running


@pytest.fixture(scope="module")
def seeds(server) -> list[Trajectory]:
    return [model_seed(NAME, server, task) for task in TASKS]


def ledger_of(step: Any) -> dict[str, Any]:
    data = json.loads(step.content)
    assert set(data) == LEDGER_KEYS, step.content
    return data


def test_every_orchestrator_call_is_labelled_and_the_ledgers_address_the_speaker_they_name(seeds):
    for task, seed in zip(TASKS, seeds, strict=True):
        assert seed.outcome is not None and seed.outcome.success and not seed.oracle and seed.harness.name == NAME, (
            seed.id
        )
        orchestrator = [s for s in seed.agent_steps() if s.agent == "orchestrator"]
        purposes = [s.model_call.purpose for s in orchestrator]
        assert (
            purposes[:2] == [TASK_LEDGER, PLAN]
            and purposes[-1] == FINAL_ANSWER
            and set(purposes[2:-1]) == {PROGRESS_LEDGER}
        ), (seed.id, purposes)
        for step in (
            orchestrator
        ):  # the purpose came from the framework side; the request is the prompt Magentic-One wrote for it
            assert prompt_kind(step.model_call.request["messages"]) == step.model_call.purpose
        ledgers = [s for s in orchestrator if s.model_call.purpose == PROGRESS_LEDGER]
        for step in ledgers:
            assert (
                step.model_call.request["response_format"]["type"] == "json_schema"
            )  # structured output, LedgerEntry's schema
            data = ledger_of(step)
            named = data["next_speaker"]["answer"]
            if data["is_request_satisfied"]["answer"]:
                assert step.recipient == "orchestrator"
            else:
                assert is_worker(named) and step.recipient == named
                follower = seed.steps[step.index + 1]  # Magentic-One acted on the ledger: the named worker speaks next
                assert follower.agent == named and follower.model_call.purpose is None
        assert orchestrator[-1].recipient == "user"
        workers = [s for s in seed.agent_steps() if is_worker(s.agent)]
        assert workers and all(s.model_call.purpose is None for s in workers)
        assert all(r.get("parallel_tool_calls") is False for r in requests_of(seed) if r.get("tools"))
        calls, _ = environment("agentdojo").ground_truth(env_spec("agentdojo", task))
        assert [s.tool_name for s in seed.steps if s.kind == "tool"] == [c for c, _ in calls], seed.id
        rounds = [s.coordinate for s in seed.steps if s.kind == "agent" and s.agent == "orchestrator"]
        assert len(set(rounds)) == len(rounds) and all(
            c.endswith(".0") for c in rounds
        )  # each orchestrator call opens a round


def test_the_five_seeds_audit_identical_with_the_ledgers_json_served_verbatim(seeds):
    report = audit(seeds)
    assert [(e.seeds, e.identical, e.evaluator_success_on_replay) for e in report.environments] == [
        (len(TASKS), len(TASKS), len(TASKS))
    ], report
    # replay serves the ledger's JSON as recorded: the same text Magentic-One parses (its next speaker acts
    # next in the identical replay); a ledger edited in the seed is refused at its own step
    seed = seeds[0]
    first = next(s for s in seed.agent_steps() if s.model_call.purpose == PROGRESS_LEDGER)
    edited = dump_ledger({**ledger_of(first), "is_in_loop": {"reason": "edited", "answer": False}})
    steps = [s.model_copy(update={"content": edited}) if s.index == first.index else s for s in seed.steps]
    report = replay(seed.model_copy(update={"steps": steps}), raise_on_drift=False)
    assert not report.identical and report.drift is not None and report.drift.step == first.index, report.drift


def test_a_streaming_seed_streams_the_workers_and_replays_identically(server):
    streamed = model_seed(NAME, server, streaming=True)
    assert streamed.outcome.success
    worker_requests = [s.model_call.request for s in streamed.agent_steps() if is_worker(s.agent)]
    assert worker_requests and all(r.get("stream") is True for r in worker_requests)
    identical, why = replayed_identically(streamed)
    assert identical, why


@pytest.fixture(scope="module")
def gold(tmp_path_factory, seeds, server) -> list[Trajectory]:
    summary, kept = campaign(tmp_path_factory.mktemp("m1"), [seeds[0]], server, modes=("C.1", "R.3"))
    assert summary.failed == 0, summary.failed_by
    return kept


def test_gold_at_the_orchestrators_progress_ledger_and_at_a_worker(gold, seeds):
    seed = seeds[0]
    at_orchestrator = [g for g in gold if g.label.decisive_agent == "orchestrator"]
    at_worker = [g for g in gold if is_worker(g.label.decisive_agent)]
    assert at_orchestrator and at_worker, [(g.label.decisive_agent, g.label.mode_code) for g in gold]
    assert any(g.label.mode_code == "C.1" for g in at_orchestrator)
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and record.outcome.success is False
        assert record.harness.name == NAME and from_trajectory(record).framework == NAME
    for record in at_orchestrator:
        step = record.steps[record.label.decisive_step]
        assert step.model_call.purpose == PROGRESS_LEDGER
        data = ledger_of(step)  # the injected ledger is valid JSON Magentic-One parsed: its named worker acted on it
        assert record.steps[step.index + 1].agent == data["next_speaker"]["answer"] == step.recipient
        original = ledger_of(seed.steps[step.index])
        assert data["instruction_or_question"]["answer"] != original["instruction_or_question"]["answer"]


def test_gold_exported_as_who_and_when_and_who_and_when_pro_reads_back_with_the_same_agent_and_step(tmp_path, gold):
    record = next(g for g in gold if g.label.decisive_agent == "orchestrator")
    t = record.label.decisive_step
    step = record.steps[t]
    exporters.get("whowhen")([record], tmp_path / "ww")
    back = [r for r in importers.get("whowhen")(tmp_path / "ww") if hasattr(r, "gold")]
    assert len(back) == 1 and back[0].gold.agent == "orchestrator" and back[0].gold.step == t
    assert json.loads(back[0].steps[t].content) == json.loads(
        step.content
    )  # the ledger's JSON, numbered as in the history
    exporters.get("whowhen-pro")([record], tmp_path / "wwp")
    row = json.loads((tmp_path / "wwp" / "data" / "text.jsonl").read_text().splitlines()[0])
    assert row["framework"] == "magentic-one" and json.loads(row["ground_truth"])["step"] == step.coordinate
    pro = [r for r in importers.get("whowhen-pro")(tmp_path / "wwp") if hasattr(r, "gold")]
    assert len(pro) == 1 and pro[0].gold.agent == "orchestrator"
    coordinate = pro[0].steps[pro[0].gold.step].coordinate
    assert f"{coordinate.round}.{coordinate.position}" == step.coordinate
