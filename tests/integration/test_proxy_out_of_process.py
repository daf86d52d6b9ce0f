"""The proxy route end to end: a real smolagents team in ANOTHER process, talking to `failforge proxy` over
per-agent routes and reporting its tool calls, recorded, replayed identically (streaming included) and
branched. The upstream is a loopback server playing the scripted smolagents team policy; the
subprocess's environment is a small stateful bank of its own (the proxy only sees its reports)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from _required import require

require("smolagents")

from failforge.harnesses._frameworks import FrameworkTeamConfig  # noqa: E402
from failforge.harnesses._team import TeamMember  # noqa: E402
from failforge.harnesses.smolagents_team import SmolagentsPolicy  # noqa: E402
from failforge.llm import HttpUpstream  # noqa: E402
from failforge.proxy import Proxy, ProxyServer  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402

ROSTER = [
    {
        "name": "manager",
        "role": "manager",
        "handoffs": [{"tool": "bank_worker", "to": "bank_worker"}, {"tool": "final_answer", "to": "user"}],
    },
    {
        "name": "bank_worker",
        "role": "worker",
        "tools": ["get_balance", "send_money"],
        "reports_to": "manager",
        "opens_rounds": False,
        "handoffs": [{"tool": "final_answer", "to": "manager"}],
    },
]
TASK = "Send 30 to Bob, then tell me the balance."
CALLS = [("send_money", {"to": "Bob", "amount": 30}), ("get_balance", {})]

FRAMEWORK = textwrap.dedent('''
    """A smolagents team in its own process: models on the proxy's per-agent routes, tools reported to the proxy."""
    import json, sys
    import httpx, openai
    from smolagents import OpenAIModel, Tool, ToolCallingAgent

    proxy, run, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "stream"
    http = httpx.Client(base_url=proxy)
    bank = {"balance": 100, "sent": []}

    def report(name, arguments, observation):
        http.post(f"/runs/{run}/tools", json={
            "name": name, "arguments": arguments, "observation": observation, "state": {"bank": bank},
        }).raise_for_status()
        return observation

    class GetBalance(Tool):
        name = "get_balance"; description = "the account balance"; inputs = {}; output_type = "string"
        def forward(self):
            return report(self.name, {}, f"balance: {bank['balance']}")

    class SendMoney(Tool):
        name = "send_money"; description = "send money"; output_type = "string"
        inputs = {
            "to": {"type": "string", "description": "recipient"},
            "amount": {"type": "number", "description": "amount"},
        }
        def forward(self, to, amount):
            bank["balance"] -= amount; bank["sent"].append([to, amount])
            return report(self.name, {"to": to, "amount": amount}, f"sent {amount} to {to}")

    def model(agent):
        client = openai.OpenAI(base_url=f"{proxy}/runs/{run}/agents/{agent}/v1", api_key="unused", max_retries=0)
        return OpenAIModel("m", client=client, retry=False, temperature=0.0)

    worker = ToolCallingAgent(tools=[GetBalance(), SendMoney()], model=model("bank_worker"), name="bank_worker",
                              description="banking", max_steps=4, max_tool_threads=1, stream_outputs=stream,
                              verbosity_level=-1)
    manager = ToolCallingAgent(tools=[], model=model("manager"), managed_agents=[worker], name="manager", max_steps=6,
                               max_tool_threads=1, verbosity_level=-1)
    answer = manager.run(sys.argv[4])
    print()
    print("RESULT " + json.dumps({"answer": str(answer), "bank": bank}))
''')


def _policy() -> SmolagentsPolicy:
    config = FrameworkTeamConfig(
        lead=TeamMember(name="manager", role="manager", system_prompt="lead"),
        workers=[
            TeamMember(name="bank_worker", role="worker", system_prompt="work", tools=["get_balance", "send_money"])
        ],
    )
    return SmolagentsPolicy(config, CALLS, "Sent 30 to Bob; the balance is 70.")


@pytest.fixture(scope="module")
def proxy():
    with LoopbackModelServer(agent_policy=_policy().respond) as model:
        upstream = HttpUpstream(model.base_url, api_key_env=None, max_attempts=1)
        with ProxyServer(Proxy(upstream=upstream)) as server:
            yield server, model
        upstream.close()


def _framework(tmp_path: Path, proxy: ProxyServer, run: str, *, stream: bool) -> dict:
    script = tmp_path / "framework.py"
    script.write_text(FRAMEWORK)
    done = subprocess.run(
        [sys.executable, str(script), proxy.base_url, run, "stream" if stream else "plain", TASK],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.rsplit("RESULT ", 1)[1])


def _segment(opened: httpx.Response) -> str:
    """The run's path segment with its capability token (``id~token``), as its base URL carries it."""
    assert opened.status_code == 200, opened.text
    return f"{opened.json()['run_id']}~{opened.json()['token']}"


def test_an_out_of_process_framework_records_replays_and_branches_through_the_proxy(tmp_path, proxy):
    server, model = proxy
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        run = _segment(
            http.post(
                "/runs", json={"mode": "record", "task": TASK, "roster": ROSTER, "framework": "smolagents-subprocess"}
            )
        )
        recorded = _framework(tmp_path, server, run, stream=True)
        assert recorded["bank"] == {"balance": 70, "sent": [["Bob", 30]]}
        done = http.post(
            f"/runs/{run}/finish",
            json={"final_output": recorded["answer"], "outcome": {"success": True, "evaluator": "bank"}},
        ).json()
        assert done["failure"] is None
        seed = done["trajectory"]
        kinds = [(s["kind"], s["agent"]) for s in seed["steps"]]
        assert ("tool", "environment") in kinds and {a for k, a in kinds if k == "agent"} == {"manager", "bank_worker"}
        assert all(s["state_fingerprint"] for s in seed["steps"] if s["kind"] == "tool")
        assert any(s["model_call"]["request"].get("stream") for s in seed["steps"] if s["kind"] == "agent")
        calls_before = model.counts["ok"]

        replay = _segment(http.post("/runs", json={"mode": "replay", "seed": seed}))
        again = _framework(tmp_path, server, replay, stream=True)
        result = http.post(f"/runs/{replay}/finish", json={"final_output": again["answer"]}).json()
        assert result["identical"] is True and result["failure"] is None and again == recorded
        assert model.counts["ok"] == calls_before, "a replay never reaches the upstream"

        # branch at the worker's send_money call: it sends 300 instead; the rest of the run is live
        t = next(
            s["index"]
            for s in seed["steps"]
            if s["kind"] == "agent"
            and s["agent"] == "bank_worker"
            and s["tool_calls"]
            and s["tool_calls"][0]["name"] == "send_money"
        )
        branch = http.post(
            "/runs",
            json={
                "mode": "branch",
                "seed": seed,
                "branch_at": t,
                "injection": {"tool_calls": [{"name": "send_money", "arguments": {"to": "Bob", "amount": 300}}]},
            },
        )
        branch = _segment(branch)
        branched = _framework(tmp_path, server, branch, stream=False)
        out = http.post(f"/runs/{branch}/finish", json={"final_output": branched["answer"]}).json()
        assert out["failure"] is None and branched["bank"]["sent"] == [["Bob", 300]]
        phases = [s["phase"] for s in out["trajectory"]["steps"]]
        assert phases[t] == "injected" and set(phases[1:t]) == {"replayed"} and "live" in phases[t + 1 :]
        assert out["trajectory"]["parent_id"] == seed["id"] and out["trajectory"]["branch_step"] == t


def _start_proxy(tmp_path: Path, output: Path, upstream: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "failforge",
            "proxy",
            "--port",
            "0",
            "--upstream",
            upstream,
            "--api-key-env",
            "NO_SUCH_KEY",
            "-o",
            str(output),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert "failforge proxy on http://" in line, line
    return process, line.split("failforge proxy on ", 1)[1].split()[0]


def test_a_sigkilled_proxy_loses_no_finished_run_and_serves_it_after_a_restart(tmp_path):
    output = tmp_path / "runs.jsonl"
    with LoopbackModelServer(agent_policy=_policy().respond) as model:
        process, base = _start_proxy(tmp_path, output, model.base_url)
        try:
            with httpx.Client(base_url=base, timeout=60) as http:
                run = _segment(
                    http.post(
                        "/runs",
                        json={"mode": "record", "task": TASK, "roster": ROSTER, "framework": "smolagents-subprocess"},
                    )
                )
                recorded = _framework(tmp_path, _Proxied(base), run, stream=False)
                done = http.post(
                    f"/runs/{run}/finish",
                    json={"final_output": recorded["answer"], "outcome": {"success": True, "evaluator": "bank"}},
                ).json()
                assert done["status"] == "finished"
        finally:
            process.kill()  # SIGKILL: no shutdown code runs
            process.wait(timeout=30)
        process, base = _start_proxy(tmp_path, output, model.base_url)
        try:
            with httpx.Client(base_url=base, timeout=60) as http:
                run_id = run.split("~")[0]
                # a run finished by an earlier proxy is in the file, and a seed by id; its token died with that proxy
                assert http.get(f"/runs/{run}").status_code == 404
                replay = _segment(http.post("/runs", json={"mode": "replay", "seed_id": run_id}))
                again = _framework(tmp_path, _Proxied(base), replay, stream=False)
                result = http.post(f"/runs/{replay}/finish", json={"final_output": again["answer"]}).json()
                assert result["identical"] is True and again == recorded
        finally:
            process.terminate()
            process.wait(timeout=30)


class _Proxied:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
