"""Canonical form of a chat-completions request, used for the request hash at record and replay.

Provider-generated ids (tool-call ids) differ between a recording and a replay even when nothing
meaningful changed, so they are renamed to their order of first appearance (``call_0``, ``call_1``,
...). Transport-only fields (``stream``, ``user``, ``stream_options``) are dropped. Everything else
the harness sends (model, messages, tools, sampling parameters) is significant.
"""

from __future__ import annotations

import copy
from typing import Any

from failforge.canonical import canonical_hash
from failforge.images import canonical_parts

#: Request fields that never change what the model is asked.
TRANSPORT_FIELDS = frozenset({"stream", "stream_options", "user", "extra_headers", "metadata", "store"})


def canonical_request(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``body`` with tool-call ids renamed by order of first appearance and transport fields dropped.

    Only what is changed is copied (the messages and their tool calls); the rest, the tool schemas
    above all, is shared with ``body``, which is never modified: hashing a request with twenty tool
    schemas need not copy them."""
    out = {k: v for k, v in canonical_parts(body).items() if k not in TRANSPORT_FIELDS}  # images by their sha256
    if isinstance(out.get("messages"), list):
        out["messages"] = [_message_copy(m) for m in out["messages"]]
    renames: dict[str, str] = {}

    def rename(old: str | None) -> str | None:
        if old is None:
            return None
        if old not in renames:
            renames[old] = f"call_{len(renames)}"
        return renames[old]

    for message in out.get("messages", []) or []:
        if not isinstance(message, dict):
            continue
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and "id" in call:
                call["id"] = rename(call["id"])
        if message.get("tool_call_id") is not None:
            message["tool_call_id"] = rename(message["tool_call_id"])
        # Some clients send content=None and others omit it; treat both as absent.
        if message.get("content") is None:
            message.pop("content", None)
        if message.get("tool_calls") == []:
            message.pop("tool_calls")
    return out


def _message_copy(message: Any) -> Any:
    if not isinstance(message, dict):
        return copy.deepcopy(message)
    out = dict(message)
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [dict(c) if isinstance(c, dict) else copy.deepcopy(c) for c in calls]
    return out


def request_hash(body: dict[str, Any]) -> str:
    return canonical_hash(canonical_request(body))
