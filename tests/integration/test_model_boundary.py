"""The model boundary with the real local model: record, replay without a model, drift, exhaustion."""

from __future__ import annotations

import json

import pytest

from failforge.environments.agentdojo import env_spec
from failforge.errors import PromptDrift
from failforge.harnesses import AgentDojoPipelineHarness, ToolCallingAgent
from failforge.llm import ModelBoundary, ModelEndpoint, boundary_client, canonical_request, request_hash
from failforge.replay import replay
from failforge.runlog import RunLog
from failforge.seeds import record
from failforge.trajectory import ComponentSpec, Trajectory

pytestmark = pytest.mark.local_model


def test_tool_call_ids_are_canonicalised_but_content_is_not():
    def body(call_id: str, text: str) -> dict:
        return {
            "model": "m",
            "messages": [
                {"role": "user", "content": text},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": call_id, "content": "ok"},
            ],
            "stream": False,
        }

    assert request_hash(body("call_abc", "hi")) == request_hash(body("call_xyz_123", "hi"))
    assert request_hash(body("call_abc", "hi")) != request_hash(body("call_abc", "hi!"))
    assert canonical_request(body("zz", "hi"))["messages"][2]["tool_call_id"] == "call_0"
    assert "stream" not in canonical_request(body("zz", "hi"))


@pytest.fixture(scope="module")
def endpoint(local_model) -> ModelEndpoint:
    return ModelEndpoint(base_url=local_model.base_url, model="smollm2-135m-instruct", api_key_env=None)


@pytest.mark.parametrize(
    "harness", [ToolCallingAgent(), AgentDojoPipelineHarness()], ids=["builtin", "agentdojo-pipeline"]
)
def test_record_with_local_model_then_replay_without_any_model(endpoint, harness):
    upstream = endpoint.upstream()
    seed = record(
        env_spec=env_spec("banking", "user_task_3"),
        harness=harness,
        model=ComponentSpec(name=endpoint.model),
        upstream=upstream,
    )
    agent_steps = seed.agent_steps()
    assert agent_steps and all(s.model_call.source == "model" and s.model_call.response["choices"] for s in agent_steps)
    assert seed.outcome is not None and seed.outcome.success is not None
    report = replay(seed)  # no upstream at all: any live call would raise
    assert report.identical and report.outcome.success == seed.outcome.success
    # The recorded request is exactly what a replaying harness sends again.
    again = Trajectory.model_validate_json(seed.model_dump_json())
    again.steps[agent_steps[0].index].model_call.request["tools"] = again.steps[
        agent_steps[0].index
    ].model_call.request["tools"][:-1]
    with pytest.raises(PromptDrift) as info:
        replay(again)
    assert info.value.step == agent_steps[0].index


def test_boundary_forwards_live_calls_and_keeps_the_raw_response(endpoint):
    log = RunLog(trajectory_id="t")
    log.append(
        __import__("failforge.trajectory", fromlist=["Step"]).Step(
            index=0, kind="task", agent="user", role="user", content="hi"
        )
    )
    boundary = ModelBoundary(log, upstream=endpoint.upstream())
    client = boundary_client(boundary)
    canary = "sk-canary-boundary-0123456789"
    out = client.chat.completions.create(
        model=endpoint.model,
        messages=[{"role": "user", "content": "Say hello."}],
        max_tokens=8,
        temperature=0,
        extra_body={"api_key": canary},
    )
    assert out.choices[0].message.content is not None
    step = log.steps[1]
    assert step.kind == "agent" and step.phase == "recorded" and step.model_call.ordinal == 0
    assert step.model_call.response["choices"][0]["message"]["content"] == out.choices[0].message.content
    stored = json.dumps(step.model_call.request)
    assert '"api_key"' not in stored and canary not in stored  # a key sent in the body is dropped before storing
