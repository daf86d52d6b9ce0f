"""Gold and seeds as OTLP-JSON traces, checked against a real consumer: Arize Phoenix, started on loopback
from its own virtual environment (scripts/install_phoenix.sh), ingests them and its client reads them back.

The runs are AgentDojo oracle seeds of a single agent and of an orchestrator with workers, and their gold
(each agent step labelled in turn). What Phoenix gives back is compared span by span with the trajectory:
one span per step under one root per run, the OpenInference span kind and the GenAI operation of each, the
agent of each model call, each tool's name, call id and result, and the decisive span the labels sidecar
names. No trace says its own answer: no steering note, no step phase, no run id, no mode.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from _required import require

require("agentdojo")
require("venv_phoenix")

sys.path.insert(0, str(Path(__file__).parent))
from external_teams import venv_python  # noqa: E402

from export_round_trips import golds_of  # noqa: E402
from failforge.plugins import exporters  # noqa: E402
from failforge.seeds import oracle_seed  # noqa: E402

pytestmark = pytest.mark.timeout(600)
ROUND_TRIP = Path(__file__).parent / "phoenix_roundtrip.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A Phoenix server on loopback with its own working directory; stopped (its whole process group) after."""
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [venv_python("phoenix"), "-m", "phoenix.server.main", "serve"],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Phoenix did not start: {(work / 'server.log').read_text()[-2000:]}") from None
                time.sleep(1)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def runs():  # type: ignore[no-untyped-def]
    seeds = [
        oracle_seed("agentdojo", "banking/user_task_3"),
        oracle_seed("agentdojo", "banking/user_task_3", harness="orchestrator-workers"),
    ]
    gold = [g for seed in seeds for g in golds_of(seed)[:3]]
    return seeds, gold


def test_phoenix_ingests_the_traces_and_its_client_reads_them_back(phoenix, runs, tmp_path):
    seeds, gold = runs
    out = tmp_path / "otel"
    summary = exporters.get("otel")([*seeds, *gold], out)
    assert summary.written == len(seeds) + len(gold) and not summary.skipped
    lines = (out / "traces.jsonl").read_text().splitlines()
    labels = [json.loads(x) for x in (out / "labels.jsonl").read_text().splitlines()]
    assert len(lines) == len(labels) == summary.written
    for line, run in zip(lines, [*seeds, *gold], strict=True):  # a trace never carries its own answer
        assert run.id not in line and "(round-trip test)" not in line and '"phase"' not in line
        keys = {a["key"] for a in json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]}
        assert not any(word in key for key in keys for word in ("label", "mode", "phase", "decisive"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["gen_ai_semconv"] == "1.44.0" and manifest["openinference_semconv"] == "0.1.42"

    read = tmp_path / "phoenix.json"
    done = subprocess.run(
        [venv_python("phoenix"), str(ROUND_TRIP), phoenix, str(out / "traces.jsonl"), str(read)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    back = json.loads(read.read_text())
    assert back["sent_traces"] == len(lines) and len(back["spans"]) == back["sent_spans"]
    by_trace: dict[str, dict[str, dict]] = {}
    for span in back["spans"]:
        by_trace.setdefault(span["context"]["trace_id"], {})[span["context"]["span_id"]] = span

    for run, label in zip([*seeds, *gold], labels, strict=True):
        spans = by_trace[label["trace_id"]]
        roots = [s for s in spans.values() if not s.get("parent_id")]
        assert len(roots) == 1 and len(spans) == len(run.steps)  # the task is the root's input, every other step a span
        root = roots[0]
        assert root["span_kind"] == ("AGENT" if len(run.agents) == 1 else "CHAIN")
        assert root["attributes"]["input.value"] == run.task.instruction
        steps = {s["attributes"]["failforge.step.index"]: s for s in spans.values() if s is not root}
        assert sorted(steps) == [s.index for s in run.steps[1:]]
        for step in run.steps[1:]:
            span, attrs = steps[step.index], steps[step.index]["attributes"]
            assert span["parent_id"] == root["context"]["span_id"]
            if step.kind == "agent":
                assert span["span_kind"] == "LLM" and attrs["gen_ai.operation.name"] == "chat"
                assert attrs["gen_ai.agent.name"] == step.agent and attrs.get("output.value", "") == (
                    step.content or ""
                )
                for k, call in enumerate(step.tool_calls):
                    assert attrs[f"llm.output_messages.0.message.tool_calls.{k}.tool_call.function.name"] == call.name
            else:
                assert span["span_kind"] == "TOOL" and attrs["gen_ai.operation.name"] == "execute_tool"
                assert attrs["gen_ai.tool.name"] == step.tool_name and attrs["gen_ai.tool.call.id"] == step.tool_call_id
                assert attrs["gen_ai.tool.call.result"] == (step.error or step.content or "")
        if run.label is None:
            assert label["gold"] is None and label["success"] is True
        else:
            decisive = spans[label["gold"]["decisive_span_id"]]
            assert (
                decisive["attributes"]["failforge.step.index"]
                == run.label.decisive_step
                == label["gold"]["decisive_step"]
            )
            assert (
                decisive["attributes"]["gen_ai.agent.name"]
                == run.label.decisive_agent
                == label["gold"]["decisive_agent"]
            )
            assert label["gold"]["mode"] == run.label.mode_code and label["seed_id"] == run.label.seed_id
