"""The model boundary: OpenAI-compatible clients, the recording/replaying transport, the local model."""

from failforge.llm._boundary import ModelBoundary, agent_step_from_response
from failforge.llm._client import BOUNDARY_BASE_URL, ModelEndpoint, boundary_client, surface_boundary_error
from failforge.llm._local import LOCAL_MODEL_NAME, LocalModelServer, local_model_path
from failforge.llm._request import canonical_request, request_hash
from failforge.llm._upstream import BoundedResponder, HttpUpstream, OracleResponder, Responder, chat_response, fixed_tool_calls

__all__ = [
    "BOUNDARY_BASE_URL",
    "BoundedResponder",
    "HttpUpstream",
    "LOCAL_MODEL_NAME",
    "LocalModelServer",
    "local_model_path",
    "ModelBoundary",
    "ModelEndpoint",
    "OracleResponder",
    "Responder",
    "agent_step_from_response",
    "boundary_client",
    "canonical_request",
    "chat_response",
    "fixed_tool_calls",
    "request_hash",
    "surface_boundary_error",
]
