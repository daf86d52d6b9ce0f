"""Coordination failures for real: a campaign over multi-agent AgentDojo seeds keeps gold for C.1, C.2
and C.3, decided at agents other than the orchestrator too, with prefixes identical to the seeds.

The model is a loopback OpenAI-compatible server (failforge.testing) answering with a deterministic
team policy: it plays the guide (a steering note per mode) and every agent. Without a note each agent
does its job the way the scripted team does (workers follow their instruction, the executor follows
the plan, the verifier answers with the executor's result); under a note the acting agent makes
exactly the coordination mistake the note asks for. Environment, harnesses, replay, evaluator and
filters are all real.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from framework_adapters import concrete

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.harnesses.orchestrator_workers import INSTRUCTION
from failforge.injection import NOTE_PREFIX, step_context
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.taxonomy import get_mode
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Trajectory, load_jsonl, write_jsonl

NOTES = {
    "C.1": "Give this job to another worker rather than the usual one.",
    "C.2": "Keep your message to the worker to one short line without the figures.",
    "C.3": "Trust the worker completely and skip your own check here.",
}
_INSTRUCTION = re.compile(r"Call (\w+) with arguments (\{.*\}) and report what it returns\.", re.DOTALL)
_PLAN_STEP = re.compile(r"^\d+\. Call (\w+) with arguments (\{.*\})\.$")
assert INSTRUCTION.startswith("Call {tool} with arguments {arguments} and report")


def _call(name: str, args: dict[str, Any], n: int) -> list[dict[str, Any]]:
    return [{"id": f"call_live_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]


class TeamPolicy:
    """A deterministic model for every agent of both harnesses (and the guide) that follows steering notes.

    Served as the loopback server's ``agent_policy``: the calling agent comes from the header failforge's
    boundary sends upstream (``X-Failforge-Agent``), never from the request's text; the guide's calls
    name no agent."""

    def __init__(self, seeds: list[Trajectory]) -> None:
        # What the scripted coordinators said, by (agent, task message) and ordinal.
        self.recorded: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for seed in seeds:
            for step in seed.agent_steps():
                messages = step.model_call.request["messages"]
                self.recorded.setdefault((step.agent, str(messages[1]["content"])), []).append(
                    step.model_call.response["choices"][0]["message"]
                )

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body["messages"]
        if agent is None:  # not a team member: the guide, asked for a steering note
            if "realistic mistakes" not in str(messages[0]["content"]):
                raise AssertionError("a team member's call reached the loopback team without naming its agent")
            mode = re.search(r"Error mode (\S+) ", str(messages[1]["content"])).group(1)
            return (
                concrete(NOTES.get(mode, "Stop here and say the task is finished."), str(messages[1]["content"])),
                None,
            )
        note = (
            str(messages[-1]["content"])
            if messages[-1]["role"] == "system" and str(messages[-1]["content"]).startswith(NOTE_PREFIX)
            else None
        )
        if note is not None:
            messages = messages[:-1]
        content, calls = self.normal(agent, messages, body.get("tools") or [])
        return (
            (content, calls) if note is None else self.mistake(note, messages, body.get("tools") or [], content, calls)
        )

    # -- doing the job -------------------------------------------------------------------------

    def normal(
        self, agent: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[str | None, list[dict[str, Any]] | None]:
        n = sum(1 for m in messages if m["role"] == "assistant")
        offered = {t["function"]["name"] for t in tools}
        if agent.endswith("_worker"):
            last = messages[-1]
            if last["role"] == "tool":
                return f"Done; the tool said: {str(last['content'])[:300]}", None
            match = _INSTRUCTION.search(str(last["content"]))
            if match is None:
                return "The instruction did not say which values to use, so I did nothing.", None
            if match.group(1) not in offered:
                return f"I have no tool called {match.group(1)}.", None
            return None, _call(match.group(1), json.loads(match.group(2)), n)
        if agent == "executor":
            plan = [
                m for m in (_PLAN_STEP.match(line.strip()) for line in str(messages[1]["content"]).splitlines()) if m
            ]
            calls_made = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
            if messages[-1]["role"] != "tool" and n > 0:
                return "Nothing more to do.", None
            if calls_made < len(plan):
                return None, _call(plan[calls_made].group(1), json.loads(plan[calls_made].group(2)), n)
            script = self.recorded.get((agent, str(messages[1]["content"])))
            return (script[-1]["content"] if script else "Completed the plan."), None
        if agent == "verifier":
            report = str(messages[1]["content"]).split("Executor's report:\n", 1)[-1]
            return report.split("Result: ", 1)[1] if "Result: " in report else report, None
        script = self.recorded.get((agent, str(messages[1]["content"])), [])  # orchestrator, planner
        message = script[min(n, len(script) - 1)] if script else {"content": "Done."}
        return message.get("content"), message.get("tool_calls")

    # -- the mistake the note asks for ---------------------------------------------------------

    def mistake(
        self,
        note: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        content: str | None,
        calls: list[dict[str, Any]] | None,
    ) -> tuple[str | None, list[dict[str, Any]] | None]:
        delegation = calls[0] if calls and calls[0]["function"]["name"] == "delegate" else None
        if NOTES["C.1"] in note:
            if delegation is not None:  # route the subtask to a worker whose tools do not fit
                args = json.loads(delegation["function"]["arguments"])
                workers = next(
                    t["function"]["parameters"]["properties"]["worker"]["enum"]
                    for t in tools
                    if t["function"]["name"] == "delegate"
                )
                args["worker"] = workers[(workers.index(args["worker"]) + 1) % len(workers)]
                return None, [{**delegation, "function": {"name": "delegate", "arguments": json.dumps(args)}}]
            if content and content.startswith("Plan:"):  # a planner leaves the last action out of the assignment
                lines = content.splitlines()
                actions = [i for i, line in enumerate(lines) if _PLAN_STEP.match(line.strip())]
                if len(actions) < 2:  # the only action left out: the executor is assigned nothing to do
                    return f"Plan:\n1. Answer the user directly about: {_subject(messages)}", None
                return "\n".join(line for i, line in enumerate(lines) if i != actions[-1]), None
        if NOTES["C.2"] in note:
            if delegation is not None:  # the instruction loses its values
                args = json.loads(delegation["function"]["arguments"])
                args["instruction"] = re.sub(r" with arguments \{.*\}", "", args["instruction"], flags=re.DOTALL)
                return None, [{**delegation, "function": {"name": "delegate", "arguments": json.dumps(args)}}]
            if content is not None and not calls:  # the message keeps its subject and loses every figure
                if content.startswith("Plan:"):
                    return f"Plan:\n1. Report on: {_subject(messages)}", None
                return f"All finished here with {_last_tool(messages) or _subject(messages)}.", None
        if NOTES["C.3"] in note and calls:  # acts on a teammate's word instead of doing its own part
            return (
                f"My teammates have already handled this ({_subject(messages)}), so there is nothing left for me.",
                None,
            )
        return content, calls  # no fitting mistake here: the same action, which the differs filter rejects


def _subject(messages: list[dict[str, Any]]) -> str:
    """The first words of what this agent was asked (its first user message): a mistake about this task."""
    asked = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
    return " ".join(asked.split()[:8])


def _last_tool(messages: list[dict[str, Any]]) -> str | None:
    calls = [c["function"]["name"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    return calls[-1] if calls else None


@pytest.fixture(scope="module")
def team_seeds() -> list[Trajectory]:
    tasks = ("banking/user_task_1", "banking/user_task_3")
    return [
        oracle_seed("agentdojo", task, harness=h)
        for h in ("orchestrator-workers", "plan-execute-verify")
        for task in tasks
    ]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, team_seeds):
    out = tmp_path_factory.mktemp("ma-campaign")
    seeds_path = out / "seeds.jsonl"
    write_jsonl(seeds_path, team_seeds)
    with LoopbackModelServer(agent_policy=TeamPolicy(team_seeds)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0)
        config = CampaignConfig(
            seeds=[str(seeds_path)],
            output=str(out / "out"),
            concurrency=2,
            plan={"modes": ["C.1", "C.2", "C.3"], "steps_per_seed": 20, "modes_per_step": 3},
            # Coordination modes are semantic: no rule verifies them and this test has no judge worth the
            # name, so candidates are kept marked unverified; what is tested here is the team mechanics.
            filters={"conformance": {"keep_unverified": True}},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    gold, bad = load_jsonl(out / "out" / "gold.jsonl")
    assert not bad
    return summary, gold, {s.id: s for s in team_seeds}


def test_campaign_keeps_gold_for_every_coordination_mode(campaign):
    summary, gold, _ = campaign
    assert summary.failed == 0, summary.failed_by
    assert summary.kept == len(gold) and summary.planned == summary.kept + summary.rejected
    by_mode: dict[str, set[str]] = {}
    for record in gold:
        by_mode.setdefault(record.label.mode_code, set()).add(record.label.decisive_agent)
    print(f"\nplanned {summary.planned}, kept {summary.kept}, rejected {summary.rejected}: {dict(summary.rejected_by)}")
    for record in gold:
        print(
            f"  gold {record.label.mode_code} at step {record.label.decisive_step} by {record.label.decisive_agent}"
            f" ({record.harness.name}, {record.task.task_id})"
        )
    assert set(by_mode) == {"C.1", "C.2", "C.3"}, by_mode
    decisive = set().union(*by_mode.values())
    assert decisive - {"orchestrator"}, decisive  # workers, the planner, the executor decide failures too
    assert {"planner", "executor"} & decisive and any(a.endswith("_worker") for a in decisive)
    assert by_mode["C.1"] & {"planner"} and by_mode["C.2"] - {"orchestrator"} and by_mode["C.3"] - {"orchestrator"}


def test_every_gold_record_is_the_seed_before_t_and_the_decisive_agents_mistake_at_t(campaign):
    _, gold, seeds = campaign
    for record in gold:
        label = record.label
        seed = seeds[label.seed_id]
        t = label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected" and all(s.phase == "replayed" for s in record.steps[1:t])
        assert label.decisive_agent == seed.steps[t].agent == record.steps[t].agent
        assert record.roster == seed.roster and record.agents == seed.agents
        assert get_mode(label.mode_code).applicable(step_context(seed, seed.steps[t]))[0]
        # stage 2 used the acting agent's own request: its own system prompt, its own stream
        own_prompt = seed.steps[t].model_call.request["messages"][0]["content"]
        assert label.agent_request["messages"][0]["content"] == own_prompt and label.agent_request["messages"][-1][
            "content"
        ].startswith(NOTE_PREFIX)
        assert record.steps[t].model_call.stream == label.decisive_agent
        assert record.outcome.success is False and all(v.passed for v in label.filter_verdicts)
        conformance = record.provenance["conformance"]
        assert (
            conformance["mode"] == label.mode_code
            and conformance["exhibited"] is None
            and conformance["method"] == "unverified"
        )


def _cli(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


def test_cli_seeds_and_model_recorded_seeds_with_a_team_harness(tmp_path, team_seeds):
    made = _cli(
        "seeds",
        "agentdojo",
        "--harness",
        "plan-execute-verify",
        "--task",
        "banking/user_task_3",
        "--task",
        "slack/user_task_2",
        "-o",
        "pev.jsonl",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    seeds, errors = load_jsonl(tmp_path / "pev.jsonl")
    assert not errors and [s.id for s in seeds] == [
        "agentdojo-banking-user_task_3-plan-execute-verify-oracle",
        "agentdojo-slack-user_task_2-plan-execute-verify-oracle",
    ]
    assert all(
        s.harness.name == "plan-execute-verify" and s.agents == ["planner", "executor", "verifier"] for s in seeds
    )
    # model-recorded: the team policy plays every agent through a loopback endpoint; the seed replays with no model
    with LoopbackModelServer(agent_policy=TeamPolicy(team_seeds)) as server:
        recorded = _cli(
            "record",
            "agentdojo",
            "--task",
            "banking/user_task_3",
            "--harness",
            "orchestrator-workers",
            "--base-url",
            server.base_url,
            "--model",
            "loopback",
            "--api-key-env",
            "NO_KEY_NEEDED",
            "-o",
            "rec.jsonl",
            cwd=tmp_path,
        )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    (seed,), errors = load_jsonl(tmp_path / "rec.jsonl")
    assert not seed.oracle and seed.outcome.success and seed.harness.name == "orchestrator-workers"
    assert all(s.model_call.source == "model" for s in seed.agent_steps()) and {
        s.agent for s in seed.agent_steps()
    } == {"orchestrator", "banking_worker"}
    replayed = _cli("replay", "rec.jsonl", cwd=tmp_path)
    assert replayed.returncode == 0 and "1/1 seeds replayed identically" in " ".join(replayed.stdout.split())


def test_bad_rosters_are_reported_with_seed_step_and_agent_and_the_campaign_goes_on(tmp_path, team_seeds):
    good = team_seeds[0]
    unknown_agent = json.loads(team_seeds[1].model_dump_json())
    k = next(s["index"] for s in unknown_agent["steps"] if s["agent"] == "banking_worker")
    unknown_agent["steps"][k]["agent"] = "ghost_worker"  # not in its own roster: refused when read
    unknown_role = json.loads(team_seeds[2].model_dump_json())
    unknown_role["harness"]["config"]["planner"]["role"] = "oracle"  # the harness spec names an unknown role
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good.model_dump_json(), json.dumps(unknown_agent), json.dumps(unknown_role)]) + "\n")
    with LoopbackModelServer(agent_policy=TeamPolicy(team_seeds)) as server:
        endpoint = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0)
        config = CampaignConfig(
            seeds=[str(path)],
            output=str(tmp_path / "out"),
            plan={"modes": ["C.1", "C.2", "C.3"], "steps_per_seed": 2, "modes_per_step": 1},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert any(
        unknown_agent["id"] in line and f"step {k}" in line and "'ghost_worker'" in line for line in summary.bad_seeds
    ), summary.bad_seeds
    failed = [json.loads(line) for line in (tmp_path / "out" / "failed.jsonl").read_text().splitlines()]
    assert failed and all(
        r["seed_id"] == unknown_role["id"] and r["error"]["type"] == "RosterError" and r["error"]["step"] == 1
        for r in failed
    )
    assert all("'planner'" in r["error"]["message"] and "'oracle'" in r["error"]["message"] for r in failed)
    done = summary.kept + summary.rejected
    assert done >= 1 and summary.failed == len(failed)  # the good seed's attempts ran to a verdict
