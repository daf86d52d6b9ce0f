"""The run gateway: runs served over HTTP on loopback, models behind OpenAI routes and tools behind MCP.

An agent in another process reaches a run's model boundary at ``/runs/{run}/agents/{agent}/v1`` and its
tools at ``/runs/{run}/mcp`` (an MCP server of the official SDK, streamable HTTP), both answered by the
run's own boundaries. The external harness serves its runs here; the proxy adds its run API on the same
app. See :mod:`failforge.gateway._app`.
"""

from failforge.gateway._app import (
    DEFAULT_MAX_BODY,
    RUN_HEADER,
    TOKEN_HEADER,
    Gateway,
    HTTPRefusal,
    RunUrls,
    error_reply,
    json_reply,
    read_body,
    response_of,
    shared_gateway,
    token_matches,
    token_of,
    unknown_run,
)
from failforge.gateway._guard import MAX_JSON_DEPTH, quoted
from failforge.gateway._mcp import schema_problem, tool_of
from failforge.gateway._run import OwnerThread, RoutedRequest, ServedRun, pending_call_id
from failforge.gateway._server import LoopbackServer, require_loopback

__all__ = [
    "DEFAULT_MAX_BODY",
    "MAX_JSON_DEPTH",
    "RUN_HEADER",
    "TOKEN_HEADER",
    "Gateway",
    "HTTPRefusal",
    "LoopbackServer",
    "OwnerThread",
    "RoutedRequest",
    "RunUrls",
    "ServedRun",
    "error_reply",
    "json_reply",
    "pending_call_id",
    "quoted",
    "read_body",
    "require_loopback",
    "response_of",
    "schema_problem",
    "shared_gateway",
    "token_matches",
    "token_of",
    "tool_of",
    "unknown_run",
]
