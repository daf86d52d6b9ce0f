"""A loopback agent policy that answers like a seed's oracle, for campaign tests and benchmarks.

By position: the n-th assistant turn of a request gets the seed's n-th recorded reply, so the original arm of a
branch can succeed; the guide (its "realistic mistakes" prompt) and the steered agent (a "Private guidance"
system message) are told to stop early, which makes an A.5-style premature stop the branch's change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from failforge.trajectory import Trajectory

Policy = Callable[[dict[str, Any]], tuple[Any, Any]]


def oracle_replay_policy(seed: Trajectory) -> Policy:
    """``policy(body) -> (content, tool_calls)`` for :class:`~failforge.testing.LoopbackModelServer`."""
    responses = [s.model_call.response["choices"][0]["message"] for s in seed.agent_steps() if s.model_call is not None]

    def policy(body: dict[str, Any]) -> tuple[Any, Any]:
        n = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if any(m.get("role") == "system" and "Private guidance" in str(m.get("content")) for m in body["messages"]):
            return "Nothing needs to be done; the task is already complete.", None
        if "realistic mistakes" in str(body["messages"][0].get("content")):
            return "Tell the user it is already complete and stop.", None
        message = responses[min(n, len(responses) - 1)]
        return message.get("content"), message.get("tool_calls")

    return policy


__all__ = ["oracle_replay_policy"]
