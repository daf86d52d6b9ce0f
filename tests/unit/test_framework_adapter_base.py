"""The framework adapter base, with no framework installed: a new adapter needs only its framework's
spellings, and the one schema->tool bridge runs a call through failforge's tool boundary.

The framework here is a toy one written in this file (an agent loop over an OpenAI client, a tool
type, agents as tools); its adapter defines only how it spells a delegation and a final answer, its
tool type and how it builds its team. Everything else — config, roster, team from a tool split,
scripted team oracle, the framework check, the tool bridge — is the base's. It runs through the real
session: model boundary (recording, then replaying), tool boundary, run log.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai
import pytest

from failforge.environments import ToolResult, observe_tool_call, parse_tool_arguments
from failforge.environments._base import fingerprint_of
from failforge.errors import ConfigError
from failforge.harnesses import harness_roster
from failforge.harnesses._adapter import BoundaryTool, FrameworkAdapter, Spelling, boundary_tools
from failforge.harnesses._frameworks import Answer, TeamPolicy, function_call
from failforge.harnesses._team import member_client
from failforge.harnesses.autogen_team import SELECTOR, AutoGenTeam
from failforge.harnesses.langgraph_team import LangGraphTeam
from failforge.harnesses.openai_agents_team import OpenAIAgentsConfig, OpenAIAgentsTeam
from failforge.harnesses.smolagents_team import SmolagentsTeam
from failforge.replay import Session
from failforge.roster import USER, Handoff
from failforge.runlog import Plan, RunLog

DOMAINS = {"counter": ["add"], "notes": ["write_note"]}
CALLS = [("add", {"n": 2}), ("write_note", {"text": "counter is 2"})]
INSTRUCTION = "Add 2 to the counter and write a note saying so."


# --- an environment's toolbox, observed as every real one is ---------------------------------------


class CounterToolbox:
    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.counter = 0
        self.notes: list[str] = []

    def schemas(self) -> list[dict[str, Any]]:
        def schema(name: str, description: str, prop: str, kind: str) -> dict[str, Any]:
            return {
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": {"type": "object", "properties": {prop: {"type": kind}}, "required": [prop]},
                },
            }

        return [
            schema("add", "add n to the counter", "n", "integer"),
            schema("write_note", "keep a note", "text", "string"),
        ]

    def fingerprint(self) -> Any:
        return fingerprint_of({"counter": self.counter, "notes": self.notes})

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        args = parse_tool_arguments(arguments)

        def run() -> ToolResult:
            if args is None:
                return ToolResult(content="", error=f"arguments are not a JSON object: {arguments}")
            if name == "add":
                self.counter += int(args["n"])
                return ToolResult(content=f"counter = {self.counter}")
            self.notes.append(str(args["text"]))
            return ToolResult(content=f"{len(self.notes)} note(s)")

        step = observe_tool_call(
            self.log, name=name, arguments=args, call_id=call_id, run=run, fingerprint=self.fingerprint
        )
        return step.error or step.content or ""


# --- a toy framework: its tool type and its agent loop ---------------------------------------------


class ToyTool:
    """The toy framework's tool type: a schema and a function of the parsed arguments."""

    def __init__(self, name: str, description: str, parameters: dict[str, Any], run: Any) -> None:
        self.name, self.description, self.parameters, self.run = name, description, parameters, run

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def toy_agent(
    client: openai.OpenAI, model: str, system: str, task: str, tools: list[ToyTool], max_steps: int
) -> str | None:
    """The toy framework's agent: asks its model, runs the tools it asks for, until it answers in text."""
    by_name = {t.name: t for t in tools}
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    for _ in range(max_steps):
        message = (
            client.chat.completions.create(model=model, messages=messages, tools=[t.schema() for t in tools])
            .choices[0]
            .message
        )  # type: ignore[arg-type]
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                **(
                    {
                        "tool_calls": [
                            {
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.function.name, "arguments": c.function.arguments},
                            }
                            for c in calls
                        ]
                    }
                    if calls
                    else {}
                ),
            }
        )
        if not calls:
            return message.content
        for c in calls:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": c.id,
                    "content": by_name[c.function.name].run(json.loads(c.function.arguments or "{}")),
                }
            )
    return None


# --- the adapter: only the framework's spellings -----------------------------------------------------

ASK = "ask_{worker}"


class ToyPolicy(TeamPolicy):
    """The scripted team as the toy framework spells it: the lead calls ``ask_<worker>``, answers are text."""

    def delegations_done(self, messages: list[dict[str, Any]]) -> int:
        return sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if c["function"]["name"].startswith("ask_")
        )

    def delegate(self, messages: list[dict[str, Any]], worker: str, instruction: str) -> Answer:
        return None, [
            function_call(self.config.lead.name, messages, ASK.format(worker=worker), {"instruction": instruction})
        ]

    def answer(self, agent: str, messages: list[dict[str, Any]], text: str) -> Answer:
        return text, None

    def tool_result(self, messages: list[dict[str, Any]]) -> str | None:
        last = messages[-1] if messages else {}
        return str(last.get("content")) if last.get("role") == "tool" else None


class ToyTeam(FrameworkAdapter):
    name = "toy-team"
    Policy = ToyPolicy
    framework = "json"  # the toy framework is in this file; the check imports a module that is always there
    extra = "toy"
    spelling = Spelling(delegation=ASK)

    def tool(self, tool: BoundaryTool) -> ToyTool:
        return ToyTool(tool.name, tool.description, tool.parameters, tool.call)

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        cfg = self.config

        def ask(worker: Any) -> ToyTool:
            def run(arguments: dict[str, Any]) -> str:
                return (
                    toy_agent(
                        member_client(client, worker.name),
                        model,
                        worker.system_prompt,
                        arguments["instruction"],
                        tools[worker.name],
                        cfg.worker_max_steps,
                    )
                    or ""
                )

            params = {"type": "object", "properties": {"instruction": {"type": "string"}}, "required": ["instruction"]}
            return ToyTool(ASK.format(worker=worker.name), worker.description, params, run)

        lead = cfg.lead
        return toy_agent(
            member_client(client, lead.name),
            model,
            lead.system_prompt,
            instruction,
            [ask(w) for w in cfg.workers],
            cfg.lead_max_steps,
        )


#: what a framework adapter may define: its plugin names, its spellings, its tool type, its team (and private helpers)
SPELLINGS = {
    "name",
    "Config",
    "Policy",
    "framework",
    "extra",
    "lead_name",
    "lead_role",
    "spelling",
    "spelled",
    "members",
    "tool",
    "worker_tools",
    "run_team",
}
SHARED = {"__init__", "roster", "for_environment", "scripted_policy", "scripted_oracle", "run"}


def own_members(cls: type) -> set[str]:
    """What a class defines itself (dunders but ``__init__`` left out, and ``_abc_impl``, which ``abc`` adds
    to every subclass)."""
    return {
        k for k in vars(cls) if (not (k.startswith("__") and k.endswith("__")) or k == "__init__") and k != "_abc_impl"
    }


def run_team(
    harness: FrameworkAdapter, session: Session, toolbox_log: RunLog | None = None
) -> tuple[str | None, CounterToolbox]:
    toolbox = CounterToolbox(toolbox_log or session.log)
    session.begin(INSTRUCTION)
    client = session.client()
    try:
        final = harness.run(client, "toy-model", INSTRUCTION, session.tools(toolbox, toolbox.fingerprint))
    finally:
        client.close()
    session.end()
    return final, toolbox


# --- the tests ---------------------------------------------------------------------------------------


def test_an_adapter_of_only_spellings_records_a_team_run_and_replays_it_identically():
    assert own_members(ToyTeam) <= SPELLINGS
    harness = ToyTeam.for_environment(DOMAINS, budget=6, max_tokens=64)
    assert [w.name for w in harness.config.workers] == [
        "counter_worker",
        "notes_worker",
    ] and harness.config.lead_max_steps == 6
    roster = harness_roster(harness)
    assert roster is not None and [p.name for p in roster] == ["manager", "counter_worker", "notes_worker"]
    assert roster[0].handoffs == [
        Handoff(tool="ask_counter_worker", to="counter_worker"),
        Handoff(tool="ask_notes_worker", to="notes_worker"),
    ]

    recording = Session(
        Plan.record(),
        upstream=harness.scripted_oracle(CALLS, "Done: counter 2, note written."),
        roster=roster,
        source="oracle",
    )
    final, toolbox = run_team(harness, recording)
    assert final == "Done: counter 2, note written." and (toolbox.counter, toolbox.notes) == (2, ["counter is 2"])
    steps = recording.steps
    tools = [s for s in steps if s.kind == "tool"]
    assert [(s.tool_name, s.tool_arguments, s.content) for s in tools] == [
        ("add", {"n": 2}, "counter = 2"),
        ("write_note", {"text": "counter is 2"}, "1 note(s)"),
    ]
    agents = [s.agent for s in steps if s.kind != "tool"]
    assert agents == [
        "user",
        "manager",
        "counter_worker",
        "counter_worker",
        "manager",
        "notes_worker",
        "notes_worker",
        "manager",
    ]
    delegations = [s for s in steps if s.agent == "manager" and s.tool_calls]
    assert [s.recipient for s in delegations] == [
        "counter_worker",
        "notes_worker",
    ]  # the roster built from the spelling addresses them

    replaying = Session(Plan.replay(len(steps)), expected=steps, roster=roster)
    again, replayed = run_team(harness, replaying)
    assert again == final and replaying.failure is None and replayed.counter == 2
    assert [s.comparable() for s in replaying.steps] == [s.comparable() for s in steps]


def test_the_framework_is_checked_first_and_named_with_its_extra():
    missing = type("MissingFramework", (ToyTeam,), {"framework": "failforge_no_such_framework"}).for_environment(
        DOMAINS
    )
    with pytest.raises(ConfigError, match=r"pip install 'failforge\[toy\]'"):
        missing.run(object(), "m", "task", object())  # type: ignore[arg-type]  # neither client nor toolbox is touched
    with pytest.raises(ConfigError, match="no workers"):
        ToyTeam().run(object(), "m", "task", object())  # type: ignore[arg-type]


def test_the_bridge_returns_the_tool_boundarys_observation_and_records_a_tool_step():
    session = Session(Plan.record())
    toolbox = CounterToolbox(session.log)
    boundary = session.tools(toolbox, toolbox.fingerprint)
    add, note = boundary_tools(boundary, ["add", "write_note"], "a_worker")
    assert (add.name, add.description, add.parameters["required"]) == ("add", "add n to the counter", ["n"])
    assert add.call({"n": 3}, "call_1") == "counter = 3"
    assert asyncio.run(add.acall({"n": 1})) == "counter = 4"  # the async call, in a worker thread
    assert note.call('{"text": "as sent"}') == "1 note(s)"  # a framework's own JSON text goes through verbatim
    assert (
        add.call("{not json") == "arguments are not a JSON object: {not json"
    )  # a malformed call earns the environment's error
    steps = session.steps
    assert [(s.kind, s.tool_name, s.tool_arguments, s.tool_call_id, s.content or s.error) for s in steps] == [
        ("tool", "add", {"n": 3}, "call_1", "counter = 3"),
        ("tool", "add", {"n": 1}, None, "counter = 4"),
        ("tool", "write_note", {"text": "as sent"}, None, "1 note(s)"),
        ("tool", "add", None, None, "arguments are not a JSON object: {not json"),
    ]
    assert steps[0].state_fingerprint != steps[1].state_fingerprint  # fingerprinted after each call
    with pytest.raises(ConfigError, match="'a_worker' is given tool\\(s\\) delete_all"):
        boundary_tools(boundary, ["delete_all"], "a_worker")


def test_the_four_adapters_define_only_their_spellings():
    for cls in (SmolagentsTeam, OpenAIAgentsTeam, LangGraphTeam, AutoGenTeam):
        assert issubclass(cls, FrameworkAdapter)
        assert not own_members(cls) & SHARED, (cls.__name__, own_members(cls) & SHARED)


def test_rosters_come_from_each_frameworks_spelling():
    smol = SmolagentsTeam.for_environment(DOMAINS).roster()
    assert smol[0].handoffs[-1] == Handoff(tool="final_answer", to=USER) and smol[0].handoffs[0] == Handoff(
        tool="counter_worker", to="counter_worker"
    )
    assert all(p.handoffs == [Handoff(tool="final_answer", to="manager")] for p in smol[1:])
    as_tools = OpenAIAgentsTeam.for_environment(DOMAINS)
    assert [h.tool for h in as_tools.roster()[0].handoffs] == ["counter_worker", "notes_worker"] and all(
        not p.handoffs for p in as_tools.roster()[1:]
    )
    handoffs = OpenAIAgentsTeam.for_environment(DOMAINS, delegation="handoffs")
    assert isinstance(handoffs.config, OpenAIAgentsConfig) and handoffs.config.delegation == "handoffs"
    assert [h.tool for h in handoffs.roster()[0].handoffs] == ["transfer_to_counter_worker", "transfer_to_notes_worker"]
    assert all(p.handoffs == [Handoff(tool="transfer_to_manager", to="manager")] for p in handoffs.roster()[1:])
    graph = LangGraphTeam.for_environment(DOMAINS).roster()
    assert graph[0].name == "supervisor" and [h.tool for h in graph[0].handoffs] == [
        "transfer_to_counter_worker",
        "transfer_to_notes_worker",
    ]
    autogen = AutoGenTeam.for_environment(DOMAINS).roster()
    assert [p.name for p in autogen] == ["manager", SELECTOR, "counter_worker", "notes_worker"]
    assert autogen[0].handoffs == [Handoff(tool="assign", to_argument="worker")] and autogen[1].role == "selector"
    with pytest.raises(ValueError, match="delegation"):  # an adapter's own field is still validated
        OpenAIAgentsTeam.for_environment(DOMAINS, delegation="telepathy")
    with pytest.raises(ValueError, match="delegation"):  # and refused by an adapter that does not have it
        SmolagentsTeam.for_environment(DOMAINS, delegation="handoffs")
