"""The external harness and the run gateway on a small real environment (the toy counter plugin).

A real agent process (``examples/external/plain_agent.py``: the OpenAI client and the MCP SDK, no
framework) records, replays and is branched through failforge; the gateway's routes are checked for
what they refuse; the harness's failures (a missing command, a crash, a hang, a command that never
calls the model) are one-line infrastructure errors that leave no process behind.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "plugins"))

from failforge.plugins import environments  # noqa: E402

if "toy" not in environments:
    import toy_env  # noqa: F401  (registers the toy environment)

from failforge.errors import AttemptDeadlineExceeded, EnvironmentDrift, InfrastructureError, PromptDrift  # noqa: E402
from failforge.gateway import Gateway, ServedRun  # noqa: E402
from failforge.gold import error_kind  # noqa: E402
from failforge.harnesses.external import ExternalAgent  # noqa: E402
from failforge.injection import branch  # noqa: E402
from failforge.llm import HttpUpstream, chat_response  # noqa: E402
from failforge.replay import Plan, Session, replay  # noqa: E402
from failforge.seeds import env_spec, oracle_seed, record  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.trajectory import ComponentSpec, Trajectory  # noqa: E402

pytestmark = pytest.mark.timeout(300)
PLAIN = [sys.executable, str(ROOT / "examples" / "external" / "plain_agent.py")]


def _agent(command: list[str] = PLAIN, **fields) -> ExternalAgent:  # type: ignore[no-untyped-def]
    return ExternalAgent.for_command(command, framework="mcp", **fields)


@pytest.fixture(scope="module")
def seed() -> Trajectory:
    return oracle_seed("toy", "count-to-3", harness=_agent())


def test_an_external_agent_records_an_ordinary_seed_that_replays_identically(seed):
    assert seed.outcome.success and seed.harness.name == "external" and seed.harness.config["framework_version"]
    assert seed.id == "toy-count-to-3-external.mcp-oracle", "the seed id names the harness"
    tools = [s for s in seed.steps if s.kind == "tool"]
    assert [s.content for s in tools] == ["counter = 1", "counter = 2", "counter = 3"]
    assert all(
        s.tool_call_id == c.id
        for s, c in zip(tools, [c for a in seed.agent_steps() for c in a.tool_calls], strict=True)
    ), "each MCP call is matched to the model's tool call it carries out"
    report = replay(seed)
    assert report.identical and report.outcome.success


def test_a_prefix_replay_of_an_external_agent_stops_at_t(seed):
    t = seed.agent_steps()[2].index
    report = replay(seed, until=t)
    assert report.identical and report.steps_replayed == t


def test_a_changed_request_and_a_changed_observation_are_drifts_at_their_step(seed):
    changed = seed.model_copy(
        update={
            "harness": seed.harness.model_copy(update={"config": {**seed.harness.config, "env": {"AGENT_SYSTEM": "x"}}})
        }
    )
    prompt = Path(PLAIN[1]).read_text()
    assert "AGENT_SYSTEM" in prompt, "the plain agent reads its system prompt from AGENT_SYSTEM when set"
    with pytest.raises(PromptDrift) as info:
        replay(changed)
    assert (info.value.trajectory_id, info.value.step, info.value.agent) == (seed.id, 1, "agent") and info.value.nearest
    tool = next(s for s in seed.steps if s.kind == "tool")
    steps = list(seed.steps)
    steps[tool.index] = tool.model_copy(update={"content": "counter = 7"})
    with pytest.raises(EnvironmentDrift) as drift:
        replay(seed.model_copy(update={"steps": steps}))
    assert (drift.value.trajectory_id, drift.value.step) == (seed.id, tool.index)


def test_a_branch_of_an_external_seed_injects_at_t_and_goes_on_live(seed):
    t = seed.agent_steps()[1].index

    def live(agent, body):  # type: ignore[no-untyped-def]
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        return (
            (
                None,
                [
                    {
                        "id": f"call_live_{done}",
                        "type": "function",
                        "function": {"name": "add", "arguments": json.dumps({"n": 1})},
                    }
                ],
            )
            if done < 4
            else ("done", None)
        )

    with LoopbackModelServer(agent_policy=live) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1)
        try:
            response = chat_response(
                "m",
                None,
                [
                    {
                        "id": "call_injected",
                        "type": "function",
                        "function": {"name": "add", "arguments": json.dumps({"n": 2})},
                    }
                ],
            )
            made = branch(
                seed,
                t,
                response=response,
                agent=upstream,
                agent_model=ComponentSpec(name="loopback"),
                branch_id="branch-ext",
            )
        finally:
            upstream.close()
    record = made.trajectory
    assert [s.phase for s in record.steps[:t]] == ["replayed"] * t and record.steps[t].phase == "injected"
    assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
    assert record.outcome is not None and record.outcome.success is False  # 1 + 2 + 1 + ... overshoots 3
    assert record.parent_id == seed.id and server.agents_seen and set(server.agents_seen) == {"agent"}


def test_an_mcp_call_whose_arguments_do_not_fit_the_schema_is_recorded_as_the_agents_action():
    def clumsy(agent, body):  # type: ignore[no-untyped-def]
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if not tools:
            return None, [
                {
                    "id": "call_bad",
                    "type": "function",
                    "function": {"name": "add", "arguments": json.dumps({"n": "one"})},
                }
            ]
        if len(tools) < 3:
            return None, [
                {
                    "id": f"call_{len(tools)}",
                    "type": "function",
                    "function": {"name": "add", "arguments": json.dumps({"n": 1})},
                }
            ]
        return "done", None

    with LoopbackModelServer(agent_policy=clumsy) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1)
        try:
            recorded = record(
                env_spec=env_spec("toy", "count-to-2"),
                harness=_agent(),
                model=ComponentSpec(name="loopback"),
                upstream=upstream,
            )
        finally:
            upstream.close()
    refused = next(s for s in recorded.steps if s.kind == "tool")
    assert refused.error and "do not fit its input schema" in refused.error and "n" in refused.error
    assert refused.tool_arguments == {"n": "one"} and refused.tool_call_id == "call_bad"
    with environments.get("toy")().open(recorded.environment) as pristine:
        assert refused.state_fingerprint == pristine.fingerprint().digest, "the refused call never ran"
    answered = recorded.steps[refused.index + 1].model_call.request["messages"]
    assert any(m.get("role") == "tool" and "do not fit its input schema" in str(m.get("content")) for m in answered), (
        "the agent was told"
    )
    assert recorded.outcome.success and replay(recorded).identical


def test_the_gateway_answers_only_its_runs_and_records_nothing_from_a_refused_request():
    session = Session(Plan.record(), upstream=lambda body: chat_response("m", "hi"))  # type: ignore[arg-type]
    session.begin("task")
    with Gateway() as gateway:
        urls = gateway.add(ServedRun(session.id, session.models, None))
        with httpx.Client(base_url=gateway.base_url, timeout=30) as http:
            chat = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            other = f"run-{uuid.uuid4().hex[:8]}"
            assert http.post(f"/runs/{other}/agents/agent/v1/chat/completions", json=chat).status_code == 404
            assert (
                http.post(f"/runs/{other}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code
                == 404
            )
            mcp = http.post(f"/runs/{urls.segment}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert mcp.status_code == 404 and "serves no tools" in mcp.json()["error"]["message"]
            assert http.post(f"/runs/{session.id}/agents/agent/v1/chat/completions", json=chat).status_code == 404, (
                "the id alone reaches no run"
            )
            assert (
                http.post(
                    f"/runs/{urls.segment}/agents/agent/v1/chat/completions",
                    content=b"{nope",
                    headers={"content-type": "application/json"},
                ).status_code
                == 400
            )
            assert len(session.steps) == 1 and session.failure is None, "nothing is recorded from a refused request"
            ok = http.post(urls.agent("agent").removeprefix(gateway.base_url) + "/chat/completions", json=chat)
            assert ok.status_code == 200 and len(session.steps) == 2


def _marker_alive(marker: str) -> bool:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = Path(entry.path, "stat").read_text().rsplit(")", 1)[-1].split()[0]
            except OSError:
                continue
            if marker in cmdline and state not in ("Z", "X"):
                return True
    return False


@pytest.mark.parametrize("case", ["missing", "crash", "hang", "silent"])
def test_a_broken_agent_command_is_a_one_line_infrastructure_error_and_leaves_no_process(tmp_path, case):
    marker = f"failforge-test-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "agent.py"
    script.write_text(
        f"import subprocess, sys, time\nmarker = {marker!r}\nif sys.argv[1] == 'crash':\n    print('starting',"
        " file=sys.stderr); print('boom: the framework crashed', file=sys.stderr); sys.exit(3)\nif sys.argv[1] =="
        " 'hang':\n    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', marker]);"
        " print('hanging', file=sys.stderr); time.sleep(600)\nif sys.argv[1] == 'silent':\n    print('did nothing at"
        " all', file=sys.stderr)\n"
    )
    command = ["/nonexistent/agent-" + marker] if case == "missing" else [sys.executable, str(script), case, marker]
    with pytest.raises(InfrastructureError) as info:
        oracle_seed("toy", "count-to-2", harness=_agent(command, timeout=3))
    message = str(info.value)
    assert "\n" not in message and error_kind(info.value) == "infrastructure"
    expected = {
        "missing": "agent command not found",
        "crash": "exited with status 3: boom: the framework crashed",
        "hang": "did not finish within 3 s and was stopped: hanging",
        "silent": "exited without calling the model",
    }[case]
    assert expected in message, message
    assert isinstance(info.value, AttemptDeadlineExceeded) == (case == "hang")
    assert not _marker_alive(marker), "a process of the agent's group outlived the run"
