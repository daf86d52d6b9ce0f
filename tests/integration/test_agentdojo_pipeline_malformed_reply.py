"""AgentDojo's own loop stops on a reply whose tool-call arguments are not JSON: the run ends there, recorded.

The embedded 135M model sometimes writes a raw control character inside a JSON string. AgentDojo's
``OpenAILLM`` raises ``JSONDecodeError`` on it; failforge keeps that behaviour as the run's end (no final
answer, the reason in the harness stats) instead of losing the whole recording, and a replay ends the same way.
"""

from __future__ import annotations

from typing import Any

import pytest

from failforge.harnesses import AgentDojoPipelineHarness
from failforge.replay import replay
from failforge.trajectory import ComponentSpec

pytestmark = pytest.mark.timeout(300)


class _Malformed:
    """A loopback model whose first reply is a tool call with a raw newline inside a JSON string."""

    name = "malformed-arguments"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_most_recent_transactions", "arguments": '{"n": "1\n0"}'},
        }
        return {
            "id": f"r{self.calls}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }


def test_a_reply_agentdojo_cannot_parse_ends_the_run_recorded_and_replays_identically() -> None:
    from _required import require

    require("agentdojo")
    from failforge.environments.agentdojo import env_spec
    from failforge.seeds import record

    model = _Malformed()
    seed = record(
        env_spec=env_spec("banking", "user_task_3"),
        harness=AgentDojoPipelineHarness(),
        model=ComponentSpec(name="m"),
        upstream=model,
    )
    assert model.calls == 1  # AgentDojo's loop stopped at the reply it could not parse
    assert [s.kind for s in seed.steps] == ["task", "agent"]
    assert seed.outcome is not None and seed.outcome.success is False
    assert "not JSON" in str(seed.provenance)
    report = replay(seed)  # no upstream: the recorded reply is served, and the loop stops at it again
    assert report.identical and report.outcome is not None and report.outcome.success is False
