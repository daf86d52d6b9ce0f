"""Schema version 2: rosters, recipients, (round, position), purposes; version-1 records migrated on read;
coordination modes decided from a step's place in the team's conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from failforge.errors import SeedFormatError
from failforge.injection import step_context
from failforge.injection._roster import render_message, roster_context
from failforge.roster import AgentProfile, Handoff, StepAddresser
from failforge.taxonomy import applicable_modes
from failforge.trajectory import (
    SCHEMA_VERSION,
    ComponentSpec,
    ModelCallRef,
    Step,
    Task,
    ToolCall,
    Trajectory,
    load_jsonl,
    parse_line,
    write_jsonl,
)

BUNDLED_V1 = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"
TEAM = [
    AgentProfile(name="orchestrator", role="orchestrator", handoffs=[Handoff(tool="delegate", to_argument="worker")]),
    AgentProfile(
        name="mail_worker", role="worker", tools=["send_email"], reports_to="orchestrator", opens_rounds=False
    ),
    AgentProfile(
        name="files_worker", role="worker", tools=["read_file"], reports_to="orchestrator", opens_rounds=False
    ),
]


def _ref(agent: str, ordinal: int, purpose: str | None = None) -> ModelCallRef:
    return ModelCallRef(
        stream=agent,
        ordinal=ordinal,
        purpose=purpose,
        request={"messages": [], "tools": [{"type": "function"}]},
        request_hash="h",
        response={},
    )


def _agent(
    agent: str,
    ordinal: int,
    content: str | None = None,
    calls: list[ToolCall] | None = None,
    purpose: str | None = None,
) -> Step:
    return Step(
        index=0,
        kind="agent",
        agent=agent,
        role="assistant",
        content=content,
        tool_calls=calls or [],
        model_call=_ref(agent, ordinal, purpose),
    )


def _tool(name: str, call_id: str, content: str) -> Step:
    return Step(
        index=0, kind="tool", agent="environment", role="tool", content=content, tool_call_id=call_id, tool_name=name
    )


def _team_trajectory() -> Trajectory:
    raw = [
        Step(index=0, kind="task", agent="user", role="user", content="Mail the report."),
        _agent("orchestrator", 0, "Plan: files, then mail.", purpose="plan"),
        _agent(
            "orchestrator",
            1,
            calls=[
                ToolCall(
                    id="c1", name="delegate", arguments='{"worker": "files_worker", "instruction": "read report.txt"}'
                )
            ],
        ),
        _agent("files_worker", 0, calls=[ToolCall(id="c2", name="read_file", arguments='{"path": "report.txt"}')]),
        _tool("read_file", "c2", "Q3 revenue: 12"),
        _agent("files_worker", 1, "report.txt says Q3 revenue: 12"),
        _agent(
            "orchestrator",
            2,
            calls=[ToolCall(id="c3", name="delegate", arguments='{"worker": "mail_worker", "instruction": "mail it"}')],
        ),
        _agent("mail_worker", 0, calls=[ToolCall(id="c4", name="send_email", arguments="{}")]),
        _tool("send_email", "c4", "sent"),
        _agent("mail_worker", 1, "Sent."),
        _agent("orchestrator", 3, "Done: the report was mailed."),
    ]
    addresser = StepAddresser(TEAM)
    steps = []
    for i, step in enumerate(raw):
        recipient, round_, position = addresser.address(step)
        steps.append(
            step.model_copy(update={"index": i, "recipient": recipient, "round": round_, "position": position})
        )
    return Trajectory(
        id="team-seed",
        task=Task(benchmark="toy", task_id="t", instruction="Mail the report."),
        steps=steps,
        harness=ComponentSpec(name="orchestrator-workers"),
        environment=ComponentSpec(name="toy"),
        model=ComponentSpec(name="m"),
        roster=TEAM,
    )


def test_every_step_is_addressed_and_placed_in_a_round():
    traj = _team_trajectory()
    assert traj.schema_version == SCHEMA_VERSION == "2" and traj.agents == [
        "orchestrator",
        "mail_worker",
        "files_worker",
    ]
    got = [(s.sender, s.recipient, s.coordinate) for s in traj.steps]
    assert got == [
        ("user", "orchestrator", "0.0"),
        ("orchestrator", "orchestrator", "1.0"),  # a plan: the orchestrator's own note
        ("orchestrator", "files_worker", "2.0"),  # delegation, addressed by the delegate call's argument
        ("files_worker", "environment", "2.1"),
        ("environment", "files_worker", "2.2"),  # the observation goes back to the caller
        ("files_worker", "orchestrator", "2.3"),  # the report
        ("orchestrator", "mail_worker", "3.0"),
        ("mail_worker", "environment", "3.1"),
        ("environment", "mail_worker", "3.2"),
        ("mail_worker", "orchestrator", "3.3"),
        ("orchestrator", "user", "4.0"),
    ]


def test_round_trip_keeps_the_roster_and_addresses(tmp_path):
    traj = _team_trajectory()
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [traj])
    again, errors = load_jsonl(path)
    assert not errors and again[0] == traj and json.loads(path.read_text())["schema_version"] == "2"


def test_version_1_records_are_migrated_on_read(bundled_seeds):
    raw = json.loads(BUNDLED_V1.read_text().splitlines()[0])
    assert raw["schema_version"] == "1" and "roster" not in raw and "recipient" not in raw["steps"][1]
    seed = bundled_seeds[0]
    assert seed.schema_version == "2" and [p.name for p in seed.roster] == ["agent"] and seed.roster[0].role == "agent"
    for step in seed.steps:
        assert step.recipient is not None and step.coordinate is not None
        if step.kind == "tool":
            assert step.recipient == "agent"
        if step.kind == "agent":
            assert step.recipient == ("environment" if step.tool_calls else "user")
    assert [s.round for s in seed.steps if s.kind == "agent"] == list(range(1, len(seed.agent_steps()) + 1))


def test_a_version_1_gold_label_is_migrated_with_its_original_step(bundled_seeds):
    data = json.loads(bundled_seeds[0].model_dump_json())
    t = next(s["index"] for s in data["steps"] if s["kind"] == "agent" and s["index"] > 1)
    label = {
        "decisive_step": t,
        "decisive_agent": "agent",
        "mode_code": "R.3",
        "mode_family": "Reasoning",
        "original_step": json.loads(json.dumps(data["steps"][t])),
        "steering_note": "n",
        "guide_model": "g",
        "agent_model": "a",
        "filter_verdicts": [],
        "seed_id": data["id"],
        "branch_step": t,
        "evaluator_output": {"success": False, "evaluator": "e"},
    }
    v1 = {k: v for k, v in data.items() if k != "roster"} | {"schema_version": "1", "label": label}
    for step in [*v1["steps"], label["original_step"]]:
        for key in ("recipient", "round", "position"):
            step.pop(key)
    migrated = parse_line(json.dumps(v1))
    assert migrated.label.original_step == bundled_seeds[0].steps[t]


def test_a_step_naming_an_agent_outside_the_roster_names_seed_step_and_agent():
    data = json.loads(_team_trajectory().model_dump_json())
    data["steps"][7]["agent"] = "ghost_worker"
    with pytest.raises(SeedFormatError) as info:
        parse_line(json.dumps(data), "seeds.jsonl", 4)
    message = str(info.value)
    assert "seeds.jsonl:4" in message and "team-seed" in message and "step 7" in message and "'ghost_worker'" in message


def test_an_unknown_role_names_seed_step_and_agent():
    data = json.loads(_team_trajectory().model_dump_json())
    data["roster"][1]["role"] = "wizard"
    with pytest.raises(SeedFormatError) as info:
        parse_line(json.dumps(data))
    message = str(info.value)
    assert "team-seed" in message and "step 7" in message and "'mail_worker'" in message and "'wizard'" in message


def test_coordination_modes_follow_delegation_handoffs_and_peer_input():
    traj = _team_trajectory()
    coordination = {
        s.index: sorted(m.code for m in applicable_modes(step_context(traj, s)) if m.code.startswith("C."))
        for s in traj.agent_steps()
    }
    assert coordination == {
        1: [],  # the plan is addressed to nobody else
        2: ["C.1", "C.2"],  # the orchestrator delegates
        3: ["C.3"],  # the worker acts on its instruction
        5: ["C.2"],  # the worker reports
        6: ["C.1", "C.2", "C.3"],  # delegates again, having read a report
        7: ["C.3"],
        9: ["C.2"],
        10: ["C.3"],  # answers the user on the strength of the last report
    }
    single = Trajectory.model_validate(
        {**json.loads(traj.model_dump_json()), "roster": [], "agents": ["orchestrator", "mail_worker", "files_worker"]}
    )
    assert single.roster[1].role == "agent"  # no roles: nobody coordinates, so C.1 never applies
    assert all("C.1" not in [m.code for m in applicable_modes(step_context(single, s))] for s in single.agent_steps())


def test_the_guide_gets_the_team_and_who_is_acting():
    traj = _team_trajectory()
    text = roster_context(traj, 3)
    assert "files_worker (worker)" in text and "tools: read_file" in text
    assert text.endswith(
        "Acting at step 3: files_worker (worker), addressing environment, responding to orchestrator's message at"
        " step 2."
    )
    assert roster_context(traj, 5).endswith(
        "Acting at step 5: files_worker (worker), addressing orchestrator."
    )  # after its own tool result
    assert "plan call" in roster_context(traj, 1)
    assert (
        roster_context(traj.model_copy(update={"agents": ["agent"], "roster": [AgentProfile(name="agent")]}), 1) == ""
    )
    assert render_message(traj.steps[5]) == "[5] files_worker -> orchestrator: says: report.txt says Q3 revenue: 12"


def test_the_guide_prompt_carries_the_team_for_a_team_seed_only():
    from failforge.injection._injector import guide_request
    from failforge.taxonomy import get_mode as error_mode

    traj = _team_trajectory()
    prompt = guide_request(traj, 5, error_mode("C.2"), model="guide", temperature=0)["messages"][1]["content"]
    assert "The team:" in prompt and "Acting at step 5: files_worker (worker), addressing orchestrator." in prompt
    assert "[5] files_worker -> orchestrator: says:" in prompt
    alone = traj.model_copy(update={"agents": ["agent"], "roster": [AgentProfile(name="agent")]})
    solo_prompt = guide_request(alone, 5, error_mode("C.2"), model="guide", temperature=0)["messages"][1]["content"]
    assert "The team:" not in solo_prompt and "->" not in solo_prompt
