"""Serving a chat completion as a server-sent-event stream, exactly as an OpenAI server would.

Frameworks switch requests to ``stream=True`` on their own (LangGraph under ``stream_mode="messages"``,
any streaming callback); answering such a request with a plain JSON body makes the SDK yield zero
chunks and no error. So a streaming request is served from the same completion the boundary
records or replays (one response, one hash, whatever the transport), cut into chunks: the role, the
text, each tool call (id, name and arguments in one delta, which every client accumulates), the
finish reason, and, when the request asked for ``stream_options.include_usage``, the final chunk
with empty ``choices`` and the usage. Replay therefore streams byte-identical chunks to recording.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

SSE_CONTENT_TYPE = "text/event-stream"


def wants_stream(body: dict[str, Any]) -> bool:
    return body.get("stream") is True


def wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def completion_chunks(response: dict[str, Any], *, include_usage: bool) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects that stream ``response`` (a ``chat.completion``)."""
    head = {
        "id": response.get("id", "chatcmpl-failforge"),
        "object": "chat.completion.chunk",
        "created": response.get("created", 0),
        "model": response.get("model", ""),
    }
    if "system_fingerprint" in response:
        head["system_fingerprint"] = response["system_fingerprint"]
    for choice in response.get("choices") or []:
        index = choice.get("index", 0)
        message = choice.get("message") or {}

        def chunk(delta: dict[str, Any], finish: str | None = None, index: int = index) -> dict[str, Any]:
            return {**head, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        first_content = None if message.get("tool_calls") and not message.get("content") else ""
        yield chunk({"role": message.get("role", "assistant"), "content": first_content})
        if message.get("content"):
            yield chunk({"content": message["content"]})
        if message.get("refusal"):
            yield chunk({"refusal": message["refusal"]})
        for i, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call.get("id"),
                            "type": call.get("type", "function"),
                            "function": {
                                "name": function.get("name", ""),
                                "arguments": function.get("arguments") or "",
                            },
                        }
                    ]
                }
            )
        yield chunk({}, choice.get("finish_reason") or "stop")
    if include_usage:
        yield {
            **head,
            "choices": [],
            "usage": response.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


def sse_body(response: dict[str, Any], *, include_usage: bool) -> bytes:
    """The whole event stream, ``data: [DONE]`` included (the boundary answers in one piece)."""
    events = [
        f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n"
        for chunk in completion_chunks(response, include_usage=include_usage)
    ]
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def completion_from_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The inverse, for a streaming upstream: accumulate chunks back into one ``chat.completion``."""
    if not chunks:
        raise ValueError("an empty event stream has no completion")
    head = chunks[0]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                message["content"] = (message["content"] or "") + delta["content"]
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(
                    int(part.get("index", 0)),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                call["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out = {
        "id": head.get("id"),
        "object": "chat.completion",
        "created": head.get("created", 0),
        "model": head.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish or "stop", "logprobs": None}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


__all__ = ["SSE_CONTENT_TYPE", "completion_chunks", "completion_from_chunks", "sse_body", "wants_stream", "wants_usage"]
