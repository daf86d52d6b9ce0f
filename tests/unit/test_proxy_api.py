"""The proxy's run API: durable finished runs, finished runs as seeds, published schemas, drift reports.

A real proxy on loopback (the run gateway's ASGI app under uvicorn), real OpenAI clients, and the
loopback model server with a deterministic policy as the upstream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from failforge.llm import HttpUpstream
from failforge.proxy import Proxy, ProxyServer, RunRequest, ToolReport, failed_path, openapi
from failforge.testing.model_servers import LoopbackModelServer
from failforge.trajectory import load_jsonl

ROSTER = [
    {"name": "lead", "role": "orchestrator"},
    {"name": "helper", "role": "worker", "reports_to": "lead", "opens_rounds": False},
]


def policy(body: dict) -> tuple[str | None, list[dict] | None]:
    last = (body.get("messages") or [{}])[-1]
    if last.get("role") == "tool":
        return f"found: {last['content']}", None
    return None, [
        {
            "id": f"call_{len(body['messages'])}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"q": last["content"]})},
        }
    ]


@pytest.fixture
def model() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(policy=policy) as server:
        yield server


def _proxy(model: LoopbackModelServer, output: Path | None = None) -> tuple[Proxy, HttpUpstream]:
    upstream = HttpUpstream(model.base_url, api_key_env=None, max_attempts=1)
    return Proxy(upstream=upstream, output=output), upstream


def _segment(opened: httpx.Response) -> str:
    """The run's path segment with its capability token (``id~token``), as the run's base URL carries it."""
    body = opened.json()
    return f"{body['run_id']}~{body['token']}"


def _record(http: httpx.Client, base: str, task: str = "weather in Paris") -> dict:
    run = _segment(http.post("/runs", json={"mode": "record", "task": task, "roster": ROSTER, "framework": "outside"}))
    lead = openai.OpenAI(base_url=f"{base}/runs/{run}/agents/lead/v1", api_key="unused", max_retries=0)
    first = lead.chat.completions.create(model="m", messages=[{"role": "user", "content": task}])  # type: ignore[arg-type]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    http.post(
        f"/runs/{run}/tools",
        json={
            "name": "lookup",
            "arguments": {"q": task},
            "tool_call_id": call.id,
            "observation": "sunny",
            "state": {"cache": 1},
        },
    ).raise_for_status()
    done = http.post(
        f"/runs/{run}/finish", json={"final_output": "sunny", "outcome": {"success": True, "evaluator": "outside"}}
    )
    assert done.status_code == 200, done.text
    return {**done.json(), "token": run.split("~")[1]}


def test_a_finished_run_is_on_disk_before_it_is_answered_and_is_a_seed_at_once(model, tmp_path):
    output = tmp_path / "runs.jsonl"
    proxy, upstream = _proxy(model, output)
    with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        result = _record(http, server.base_url)
        assert result["status"] == "finished" and result["failure"] is None
        on_disk, bad = load_jsonl(output)
        assert not bad and [t.id for t in on_disk] == [result["run_id"]], "appended (and fsynced) before the answer"
        assert (
            http.get(f"/runs/{result['run_id']}", headers={"X-Failforge-Token": result["token"]}).json()["trajectory"][
                "id"
            ]
            == result["run_id"]
        )
        assert result["run_id"] in http.get("/runs").json()["finished"]
        # usable as a seed right away, by id, with no restart
        replay = http.post("/runs", json={"mode": "replay", "seed_id": result["run_id"]})
        assert replay.status_code == 200, replay.text
    upstream.close()
    # a proxy started again on the same output knows the runs it finished before
    again, upstream = _proxy(model, output)
    assert result["run_id"] in again.store.trajectories
    upstream.close()


def test_a_drifted_run_goes_to_the_failed_file_naming_the_seed_the_step_the_agent_and_the_nearest_requests(
    model, tmp_path
):
    output = tmp_path / "runs.jsonl"
    proxy, upstream = _proxy(model, output)
    with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        seed = _record(http, server.base_url)
        run = _segment(http.post("/runs", json={"mode": "replay", "seed_id": seed["run_id"]}))
        refused = http.post(
            f"/runs/{run}/agents/lead/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "weather in Rome"}]},
        )
        assert refused.status_code == 400
        message = refused.json()["error"]["message"]
        assert (
            f"trajectory {seed['run_id']} step 1 (agent 'lead')" in message
            and "nearest recorded requests: step 1 of 'lead'" in message
        )
        assert message.count("--- recorded") == 1, "the diff is printed once"
        finished = http.post(f"/runs/{run}/finish", json={}).json()
        failure = finished["failure"]
        assert finished["status"] == "failed" and failure["type"] == "PromptDrift"
        assert (failure["trajectory_id"], failure["step"], failure["agent"]) == (seed["run_id"], 1, "lead") and failure[
            "nearest"
        ][0]["step"] == 1
    upstream.close()
    failed, _ = load_jsonl(failed_path(output))
    assert [t.id for t in failed] == [run.split("~")[0]] and failed[0].provenance["failure"]["type"] == "PromptDrift"
    kept, _ = load_jsonl(output)
    assert [t.id for t in kept] == [seed["run_id"]], "a failed run never lands among the finished ones"


def test_a_body_that_fails_its_schema_is_a_400_naming_the_field_and_showing_the_expected_shape(model):
    proxy, upstream = _proxy(model)
    with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        bad = http.post("/runs", json={"mode": "rewind", "task": "t"})
        assert bad.status_code == 400
        error = bad.json()["error"]
        assert "field 'mode'" in error["message"] and "'record', 'replay' or 'branch'" in error["message"]
        assert "a RunRequest is {mode:" in error["message"] and error["expected"] == RunRequest.model_json_schema()
        run = _segment(http.post("/runs", json={"mode": "record", "task": "t"}))
        tool = http.post(f"/runs/{run}/tools", json={"name": "lookup"})
        assert (
            tool.status_code == 400
            and "field 'observation'" in tool.json()["error"]["message"]
            and tool.json()["error"]["expected"] == ToolReport.model_json_schema()
        )
        assert http.get(f"/runs/{run}").json()["steps"] == 1, "nothing recorded from a refused body"
    upstream.close()


def test_the_openapi_document_is_generated_from_the_models_that_validate_the_bodies(model):
    proxy, upstream = _proxy(model)
    with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        served = http.get("/openapi.json").json()
    upstream.close()
    assert served == json.loads(json.dumps(openapi()))
    schemas = served["components"]["schemas"]
    assert {"RunRequest", "ToolReport", "FinishRequest", "RunOpened", "RunResult", "RunStatus", "ErrorBody"} <= set(
        schemas
    )
    assert set(schemas["RunRequest"]["properties"]) == set(RunRequest.model_fields)
    assert served["paths"]["/runs/{run}/tools"]["post"]["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ToolReport"
    }
