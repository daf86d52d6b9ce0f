"""An environment's tools as an MCP server (the official ``mcp`` SDK, streamable HTTP), one path per run.

``/runs/{run}/mcp`` serves the run's tools: ``tools/list`` gives the environment's schemas (name,
description, input schema, as the environment states them), ``tools/call`` runs the call through the
run's tool boundary (:class:`failforge.environments._base.ToolBoundary`) on the run's own thread, so
it is observed, fingerprinted and, in replay, checked exactly as an in-process harness's call is. A
call whose arguments do not fit the tool's schema (or that names no tool of the run) is the agent's
own action: it is recorded as a tool step whose observation is the schema error, never run, and
answered as an MCP tool error (``isError``), which lets the agent's framework show it to the model.

The server is stateless (every request stands alone), so no MCP session can cross from one run's path
to another's, and JSON responses are used (no event streams are needed: failforge never calls back).
OpenTelemetry middleware is off: nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from failforge import __version__
from failforge.gateway._run import ServedRun

#: The ASGI scope key the gateway sets to the run a request belongs to (looked up before the MCP SDK sees it).
RUN_SCOPE_KEY = "failforge.run"


def _run_of(ctx: Any) -> ServedRun:
    request = getattr(ctx, "request", None)
    run = request.scope.get(RUN_SCOPE_KEY) if request is not None else None
    if not isinstance(run, ServedRun):  # the gateway routes only known runs here
        raise RuntimeError("an MCP request reached failforge's tool server without its run")
    return run


def tool_of(schema: dict[str, Any]) -> types.Tool:
    function = schema.get("function") or {}
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    if parameters.get("type") != "object":
        parameters = {"type": "object", **{k: v for k, v in parameters.items() if k != "type"}}
    return types.Tool(
        name=str(function.get("name", "")), description=str(function.get("description") or ""), input_schema=parameters
    )


def schema_problem(
    schemas: list[dict[str, Any]], name: str, arguments: dict[str, Any], validators: dict[str, Any] | None = None
) -> str | None:
    """Why ``arguments`` do not fit tool ``name``'s input schema (or why there is no such tool), or None.
    ``validators``: a cache of built validators by tool name (building one is the expensive part)."""
    validators = {} if validators is None else validators
    validator = validators.get(name)
    if validator is None:
        by_name = {str((s.get("function") or {}).get("name")): s for s in schemas}
        schema = by_name.get(name)
        if schema is None:
            return f"no tool named {name!r} (this run's tools: {', '.join(sorted(by_name)) or 'none'})"
        try:
            validator = validators[name] = Draft202012Validator(
                (schema.get("function") or {}).get("parameters") or {"type": "object"}
            )
        except SchemaError:
            return None  # an environment schema the validator cannot read: let the environment judge the call
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    except SchemaError:
        return None
    if not errors:
        return None
    first = errors[0]
    where = ".".join(str(p) for p in first.absolute_path) or "<arguments>"
    return f"Error: the arguments of {name!r} do not fit its input schema: {where}: {first.message}"


def mcp_server() -> Server[Any]:
    """The lowlevel MCP server whose handlers serve the run a request was routed to."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        run = _run_of(ctx)
        return types.ListToolsResult(tools=[tool_of(s) for s in run.schemas()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        run = _run_of(ctx)
        arguments = dict(params.arguments or {})
        problem = schema_problem(run.schemas(), params.name, arguments, run.validators)
        if run.owner is not None:  # executed by the run's own thread while this request awaits it
            text, is_error = await asyncio.wrap_future(run.submit_tool(params.name, arguments, problem))
        else:
            text, is_error = await anyio.to_thread.run_sync(
                run.call_tool, params.name, arguments, problem, abandon_on_cancel=True
            )
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=is_error)

    server: Server[Any] = Server("failforge", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware = []  # no OpenTelemetry spans
    return server


def session_manager(server: Server[Any], *, max_body: int) -> StreamableHTTPSessionManager:
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    return StreamableHTTPSessionManager(
        app=server, stateless=True, json_response=True, security_settings=security, max_request_body_size=max_body
    )


__all__ = ["RUN_SCOPE_KEY", "mcp_server", "schema_problem", "session_manager", "tool_of"]
