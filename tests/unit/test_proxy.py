"""The stand-alone proxy: record, replay and branch over HTTP, per-agent routes, tool reports, bad input.

A real proxy server on loopback, real OpenAI clients talking to it, and the loopback model server
(a scripted deterministic policy) as the upstream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from failforge.errors import ConfigError
from failforge.llm import HttpUpstream, completion_from_chunks
from failforge.proxy import Proxy, ProxyServer, require_loopback
from failforge.testing.model_servers import LoopbackModelServer

ROSTER = [
    {"name": "lead", "role": "orchestrator"},
    {"name": "helper", "role": "worker", "reports_to": "lead", "opens_rounds": False},
]


def policy(body: dict) -> tuple[str | None, list[dict] | None]:
    """Deterministic: the first call of a conversation looks something up, the next answers with what it saw."""
    messages = body.get("messages") or []
    last = messages[-1]
    if last.get("role") == "tool":
        return f"found: {last['content']}", None
    return None, [
        {
            "id": f"call_up_{len(messages)}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"q": last["content"]})},
        }
    ]


@pytest.fixture
def servers() -> Iterator[tuple[LoopbackModelServer, ProxyServer]]:
    with LoopbackModelServer(policy=policy) as model:
        upstream = HttpUpstream(model.base_url, api_key_env=None, max_attempts=1)
        with ProxyServer(Proxy(upstream=upstream)) as proxy:
            yield model, proxy
        upstream.close()


def _open(http: httpx.Client, **body) -> str:
    """The run's path segment, its id and capability token (``id~token``), as its base URL carries it."""
    response = http.post("/runs", json=body)
    assert response.status_code == 200, response.text
    opened = response.json()
    assert opened["base_url"].endswith(f"/runs/{opened['run_id']}~{opened['token']}/v1")
    return f"{opened['run_id']}~{opened['token']}"


def _client(proxy: ProxyServer, run: str, agent: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy.base_url}/runs/{run}/agents/{agent}/v1", api_key="unused", max_retries=0)


def _drive(proxy: ProxyServer, http: httpx.Client, run: str, *, stream: bool) -> str:
    """A two-agent run as an outside framework would drive it: lead asks, helper uses a tool, lead answers."""
    lead, helper = _client(proxy, run, "lead"), _client(proxy, run, "helper")
    history = [{"role": "user", "content": "weather in Paris"}]
    first = lead.chat.completions.create(model="m", messages=history)  # type: ignore[arg-type]
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    observation = "sunny, 21C"
    report = http.post(
        f"/runs/{run}/tools",
        json={
            "name": "lookup",
            "arguments": json.loads(call.function.arguments),
            "tool_call_id": call.id,
            "observation": observation,
            "state": {"calendar": ["none"]},
        },
    )
    assert report.status_code == 200, report.text
    history += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": observation},
    ]
    if stream:
        chunks = [
            c.model_dump()
            for c in helper.chat.completions.create(
                model="m", messages=history, stream=True, stream_options={"include_usage": True}
            )
        ]  # type: ignore[arg-type]
        assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]
        return str(completion_from_chunks(chunks)["choices"][0]["message"]["content"])
    return str(helper.chat.completions.create(model="m", messages=history).choices[0].message.content)  # type: ignore[arg-type]


def test_record_then_replay_over_http_is_identical_streaming_included(servers):
    model, proxy = servers
    with httpx.Client(base_url=proxy.base_url) as http:
        run = _open(http, mode="record", task="weather in Paris", roster=ROSTER, framework="outside")
        answer = _drive(proxy, http, run, stream=True)
        assert answer == "found: sunny, 21C"
        done = http.post(
            f"/runs/{run}/finish", json={"final_output": answer, "outcome": {"success": True, "evaluator": "outside"}}
        ).json()
        seed = done["trajectory"]
        assert done["failure"] is None
        assert [s["kind"] for s in seed["steps"]] == ["task", "agent", "tool", "agent"]
        assert [s["agent"] for s in seed["steps"]] == ["user", "lead", "environment", "helper"]
        assert seed["steps"][2]["state_fingerprint"] and seed["harness"]["config"]["framework"] == "outside"
        served_before = model.counts["ok"]
        replay = _open(http, mode="replay", seed=seed)
        assert _drive(proxy, http, replay, stream=True) == answer
        result = http.post(f"/runs/{replay}/finish", json={"final_output": answer}).json()
        assert result["identical"] is True and result["failure"] is None
        assert model.counts["ok"] == served_before, "replay must not call the upstream"


def test_replay_fails_closed_on_a_changed_request_and_after_the_recording_ends(servers):
    _, proxy = servers
    with httpx.Client(base_url=proxy.base_url) as http:
        run = _open(http, mode="record", task="weather in Paris", roster=ROSTER)
        _drive(proxy, http, run, stream=False)
        seed = http.post(f"/runs/{run}/finish", json={}).json()["trajectory"]
        changed = _open(http, mode="replay", seed=seed)
        response = http.post(
            f"/runs/{changed}/agents/lead/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "weather in Rome"}]},
        )
        assert response.status_code == 400 and response.headers["x-should-retry"] == "false"
        error = response.json()["error"]
        assert error["code"] == "PromptDrift" and "Rome" in error["message"] and "Paris" in error["message"]
        assert "nearest recorded requests: step 1 of 'lead'" in error["message"]
        assert http.post(f"/runs/{changed}/finish", json={}).json()["failure"]["type"] == "PromptDrift"
        # a whole replay, then one model call too many
        again = _open(http, mode="replay", seed=seed)
        _drive(proxy, http, again, stream=False)
        extra = _client(proxy, again, "lead")
        with pytest.raises(openai.BadRequestError) as caught:
            extra.chat.completions.create(model="m", messages=[{"role": "user", "content": "more"}])
        assert "RecordingExhausted" in str(caught.value) and "4 recorded steps" in str(caught.value)


def test_branch_injects_with_fresh_ids_then_continues_live(servers):
    _, proxy = servers
    with httpx.Client(base_url=proxy.base_url) as http:
        run = _open(http, mode="record", task="weather in Paris", roster=ROSTER)
        _drive(proxy, http, run, stream=False)
        seed = http.post(f"/runs/{run}/finish", json={}).json()["trajectory"]
        branch = _open(
            http,
            mode="branch",
            seed=seed,
            branch_at=1,
            injection={"tool_calls": [{"name": "lookup", "arguments": {"q": "weather in Lyon"}}]},
        )
        lead = _client(proxy, branch, "lead")
        injected = lead.chat.completions.create(model="m", messages=[{"role": "user", "content": "weather in Paris"}])
        call = injected.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert json.loads(call.function.arguments) == {"q": "weather in Lyon"}
        assert call.id != seed["steps"][1]["tool_calls"][0]["id"] and call.id.startswith("call_")
        http.post(
            f"/runs/{branch}/tools",
            json={
                "name": "lookup",
                "arguments": {"q": "weather in Lyon"},
                "tool_call_id": call.id,
                "observation": "rain",
            },
        ).raise_for_status()
        live = _client(proxy, branch, "helper").chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "weather in Paris"},
                injected.choices[0].message.model_dump(exclude_none=True),  # type: ignore[list-item]
                {"role": "tool", "tool_call_id": call.id, "content": "rain"},
            ],
        )
        assert live.choices[0].message.content == "found: rain"
        out = http.post(f"/runs/{branch}/finish", json={}).json()["trajectory"]
        assert [s["phase"] for s in out["steps"]] == ["replayed", "injected", "live", "live"]
        assert out["parent_id"] == seed["id"] and out["branch_step"] == 1


def test_bad_input_is_refused_with_openai_style_errors_and_other_runs_go_on(servers):
    _, proxy = servers
    with httpx.Client(base_url=proxy.base_url) as http:
        run = _open(http, mode="record", task="weather in Paris", roster=ROSTER)
        chat = f"/runs/{run}/agents/lead/v1/chat/completions"
        cases = {
            "unknown run": http.post("/runs/nope/v1/chat/completions", json={"model": "m", "messages": []}),
            "no run named": http.post("/v1/chat/completions", json={"model": "m", "messages": []}),
            "unknown agent": http.post(
                f"/runs/{run}/agents/intruder/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            ),
            "malformed json": http.post(chat, content=b"{nope", headers={"content-type": "application/json"}),
            "wrong content type": http.post(
                chat, content=b"model=m", headers={"content-type": "application/x-www-form-urlencoded"}
            ),
            "oversized": http.post(
                chat, content=b"x" * (9 * 1024 * 1024), headers={"content-type": "application/json"}
            ),
            "responses api": http.post(f"/runs/{run}/agents/lead/v1/responses", json={"model": "m", "input": "hi"}),
            "bad run request": http.post("/runs", json={"mode": "replay"}),
            "unknown field": http.post("/runs", json={"mode": "record", "task": "t", "colour": "red"}),
        }
        statuses = {name: r.status_code for name, r in cases.items()}
        assert statuses == {
            "unknown run": 404,
            "no run named": 404,
            "unknown agent": 400,
            "malformed json": 400,
            "wrong content type": 415,
            "oversized": 413,
            "responses api": 400,
            "bad run request": 400,
            "unknown field": 400,
        }
        for name, response in cases.items():
            assert set(response.json()["error"]) >= {"message", "type", "code"}, name
        assert "intruder" in cases["unknown agent"].json()["error"]["message"]
        assert "chat_completions" in cases["responses api"].json()["error"]["message"]
        status = http.get(f"/runs/{run}").json()
        assert status["steps"] == 1 and status["failure"] is None, "nothing is recorded from a refused request"
        # the same run, and a header-addressed call, still work
        ok = http.post(
            "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "weather in Paris"}]},
            headers={"X-Failforge-Run": run, "X-Failforge-Agent": "lead"},
        )
        assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["tool_calls"]
        assert http.get(f"/runs/{run}").json()["steps"] == 2


def test_the_proxy_listens_on_loopback_only():
    assert require_loopback("127.0.0.1") == "127.0.0.1" and require_loopback("::1") == "::1"
    for host in ("0.0.0.0", "192.168.1.10", "example.com"):
        with pytest.raises(ConfigError, match="loopback only"):
            ProxyServer(Proxy(), host=host)
