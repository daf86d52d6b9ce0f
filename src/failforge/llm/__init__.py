"""The model boundary: OpenAI-compatible clients, the recording/replaying transport, the local model."""

from failforge.llm._boundary import Injector, ModelBoundary, Reply, UnsupportedAPI, agent_step_from_response
from failforge.llm._client import BOUNDARY_BASE_URL, AsyncBoundaryClient, BoundaryClient, ModelEndpoint, boundary_client, surface_boundary_error
from failforge.llm._doctor import campaign_ready, diagnose
from failforge.llm._identity import AGENT_HEADER, PURPOSE_HEADER, AgentIdentity, AgentResolver, agent_route, valid_name
from failforge.llm._local import LOCAL_MODEL_NAME, LocalModelServer, default_threads, local_model_path
from failforge.llm._request import canonical_request, request_hash
from failforge.llm._stream import SSE_CONTENT_TYPE, completion_chunks, completion_from_chunks, sse_body, wants_usage
from failforge.llm._structured import (
    Mechanism,
    StructuredSupport,
    as_fields,
    asked_as_recorded,
    is_probe,
    last_complete_block,
    mechanism_of_requests,
    probe_structured,
    read_structured,
    render_fields,
    response_format,
    with_structured,
)
from failforge.llm._transports import AgentTransport, AsyncAgentTransport, httpx2_async_transport, httpx2_transport
from failforge.llm._upstream import (
    AgentScript,
    BoundedResponder,
    HttpUpstream,
    OracleResponder,
    Responder,
    TeamOracle,
    chat_response,
    fixed_tool_calls,
    oracle_tool_call,
)

__all__ = [ "StructuredSupport", "mechanism_of_requests", "probe_structured", "campaign_ready", "diagnose", "default_threads", "SSE_CONTENT_TYPE", "wants_usage", "Mechanism", "as_fields", "asked_as_recorded", "is_probe", "last_complete_block", "read_structured", "render_fields", "response_format", "with_structured", "Injector", "valid_name",
    "AgentTransport",
    "AsyncAgentTransport",
    "AsyncBoundaryClient",
    "Reply",
    "UnsupportedAPI",
    "completion_chunks",
    "completion_from_chunks",
    "httpx2_async_transport",
    "httpx2_transport",
    "sse_body",
    "AGENT_HEADER",
    "BOUNDARY_BASE_URL",
    "PURPOSE_HEADER",
    "AgentIdentity",
    "AgentResolver",
    "AgentScript",
    "BoundaryClient",
    "agent_route",
    "BoundedResponder",
    "HttpUpstream",
    "LOCAL_MODEL_NAME",
    "LocalModelServer",
    "local_model_path",
    "ModelBoundary",
    "ModelEndpoint",
    "OracleResponder",
    "Responder",
    "TeamOracle",
    "agent_step_from_response",
    "boundary_client",
    "canonical_request",
    "chat_response",
    "fixed_tool_calls",
    "oracle_tool_call",
    "request_hash",
    "surface_boundary_error",
]
