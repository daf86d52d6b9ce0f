"""The model boundary under streaming, async and the newer HTTP stack, and its refusal of the Responses API.

Real OpenAI clients (sync and async, legacy httpx and httpx2) over the real boundary; the model is
failforge's own TeamOracle (a scripted responder) or, for the live call off the event loop, the
loopback model server with a fixed latency.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx2
import openai
import pytest

from failforge.llm import (
    HttpUpstream,
    ModelBoundary,
    TeamOracle,
    UnsupportedAPI,
    boundary_client,
    completion_from_chunks,
    httpx2_async_transport,
    httpx2_transport,
    oracle_tool_call,
)
from failforge.roster import AgentProfile
from failforge.runlog import Plan, RunLog
from failforge.testing.model_servers import LoopbackModelServer
from failforge.trajectory import Step

ROSTER = [
    AgentProfile(name="lead", role="orchestrator"),
    AgentProfile(name="helper", role="worker", reports_to="lead", opens_rounds=False),
]
MESSAGES = [{"role": "user", "content": "look it up"}]


def _script(agent: str):
    def script(ordinal: int, body: dict, purpose: str | None):
        if ordinal == 0:
            return None, [
                oracle_tool_call(agent, ordinal, "lookup", {"q": agent}),
                oracle_tool_call(agent, 99, "lookup", {"q": "second"}),
            ]
        return f"{agent} says hello #{ordinal}", None

    return script


def _log(expected: list[Step] | None = None) -> RunLog:
    log = RunLog(
        trajectory_id="t", expected=expected or (), plan=Plan.replay(len(expected or ())) if expected else Plan.record()
    )
    log.set_roster(ROSTER, open_roster=False)
    log.append(Step(index=0, kind="task", agent="user", role="user", content="do it"))
    return log


def _record_boundary() -> ModelBoundary:
    return ModelBoundary(_log(), upstream=TeamOracle({"lead": _script("lead"), "helper": _script("helper")}))


def _stream(client: openai.OpenAI, usage: bool) -> list[dict]:
    extra = {"stream_options": {"include_usage": True}} if usage else {}
    return [c.model_dump() for c in client.chat.completions.create(model="m", messages=MESSAGES, stream=True, **extra)]  # type: ignore[call-overload]


def test_stream_serves_every_chunk_and_the_usage_chunk_only_when_asked():
    boundary = _record_boundary()
    client = boundary_client(boundary).for_agent("lead")
    with_usage = _stream(client, usage=True)
    assert with_usage[-1]["choices"] == [] and with_usage[-1]["usage"]["total_tokens"] == 0
    first = completion_from_chunks(with_usage)
    calls = first["choices"][0]["message"]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"q": "lead"}, {"q": "second"}]
    assert first["choices"][0]["finish_reason"] == "tool_calls"
    without = _stream(client, usage=False)
    assert all(c["choices"] for c in without), "no usage chunk unless stream_options.include_usage"
    assert completion_from_chunks(without)["choices"][0]["message"]["content"] == "lead says hello #1"
    # the log holds the whole completion, as for a non-streamed call
    assert [s.model_call.response["choices"][0]["message"].get("content") for s in boundary.log.steps[1:]] == [
        None,
        "lead says hello #1",
    ]


def test_replay_streams_the_same_chunks_and_serves_a_plain_recording_as_a_stream():
    boundary = _record_boundary()
    client = boundary_client(boundary).for_agent("lead")
    recorded = _stream(client, usage=True)
    plain = client.chat.completions.create(model="m", messages=MESSAGES)  # recorded without streaming
    replay = ModelBoundary(_log(boundary.log.steps), upstream=None)
    again = boundary_client(replay).for_agent("lead")
    assert _stream(again, usage=True) == recorded
    streamed = completion_from_chunks(_stream(again, usage=False))
    assert streamed["choices"][0]["message"]["content"] == plain.choices[0].message.content
    assert replay.failure is None and len(replay.log.steps) == 3


def test_async_client_records_and_replays_and_streams():
    boundary = _record_boundary()

    async def run(b: ModelBoundary) -> tuple[str | None, list[dict]]:
        client = boundary_client(b).async_client("helper")
        first = await client.chat.completions.create(model="m", messages=MESSAGES)
        stream = await client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = [c.model_dump() async for c in stream]
        return first.choices[0].message.tool_calls[0].function.arguments, chunks  # type: ignore[index]

    recorded = asyncio.run(run(boundary))
    assert json.loads(recorded[0] or "{}") == {"q": "helper"}
    assert [s.agent for s in boundary.log.steps[1:]] == ["helper", "helper"]
    replay = ModelBoundary(_log(boundary.log.steps), upstream=None)
    assert asyncio.run(run(replay)) == recorded
    assert replay.failure is None


def test_async_live_call_runs_off_the_event_loop():
    with LoopbackModelServer(latency=0.4) as server:
        boundary = ModelBoundary(_log(), upstream=HttpUpstream(server.base_url, api_key_env=None))
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        async def main() -> int:
            task = asyncio.create_task(ticker())
            await asyncio.sleep(0)
            await boundary_client(boundary).async_client("lead").chat.completions.create(model="m", messages=MESSAGES)
            during = len(ticks)
            task.cancel()
            return during

        during = asyncio.run(main())
    assert during >= 5, f"the event loop ticked only {during} times during a 0.4 s live call: the call blocked it"
    assert boundary.live_calls == 1


def test_httpx2_clients_sync_and_async_go_through_the_boundary():
    boundary = _record_boundary()
    from failforge.llm import AgentIdentity

    lead = AgentIdentity("lead")
    sync = openai.OpenAI(
        base_url="http://failforge.boundary/v1",
        api_key="x",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2_transport(boundary, lead)),
    )
    first = sync.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert first.choices[0].message.tool_calls and first.choices[0].message.tool_calls[0].id == "call_lead_0"

    async def second() -> str | None:
        client = openai.AsyncOpenAI(
            base_url="http://failforge.boundary/v1",
            api_key="x",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2_async_transport(boundary, lead)),
        )
        out = await client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
        return out.choices[0].message.content

    assert asyncio.run(second()) == "lead says hello #1"
    assert [s.model_call.ordinal for s in boundary.log.steps[1:]] == [0, 1]


def test_responses_api_is_refused_with_a_typed_explained_error_and_nothing_is_logged():
    boundary = _record_boundary()
    client = boundary_client(boundary).for_agent("lead")
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input="hello")
    assert isinstance(boundary.failure, UnsupportedAPI)
    assert "chat_completions" in str(boundary.failure) and "/responses" in str(boundary.failure)
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(boundary.log.steps) == 1


def test_a_body_that_is_not_json_is_a_typed_error_not_a_crash():
    boundary = _record_boundary()
    http = boundary_client(boundary).for_agent("lead")._client
    response = http.post(
        "http://failforge.boundary/v1/chat/completions",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400 and "not JSON" in response.json()["error"]["message"]
    assert len(boundary.log.steps) == 1
