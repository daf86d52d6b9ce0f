"""OpenAI clients: one for live endpoints, one wired to a :class:`ModelBoundary`.

Frameworks accept an ``openai.OpenAI`` client; giving them one whose ``http_client`` is the boundary
puts every model call of theirs under failforge's control without touching their code. Retries are
off in the boundary client because the boundary's own upstream retries live calls, and a replayed
call must never be retried.
"""

from __future__ import annotations

import os

import httpx
import openai
from pydantic import BaseModel, Field

from failforge.errors import FailforgeError, InfrastructureError
from failforge.llm._boundary import ModelBoundary
from failforge.llm._upstream import HttpUpstream

BOUNDARY_BASE_URL = "http://failforge.boundary/v1"


class ModelEndpoint(BaseModel):
    """An OpenAI-compatible endpoint. The key is read from ``api_key_env`` and never stored."""

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = Field(default=180.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)

    def upstream(self, *, override_model: bool = True) -> HttpUpstream:
        return HttpUpstream(
            self.base_url,
            api_key_env=self.api_key_env,
            model=self.model if override_model else None,
            timeout=self.timeout,
            max_attempts=self.max_attempts,
        )

    def client(self) -> openai.OpenAI:
        """A plain OpenAI client for this endpoint, with the SDK's own retries on 429/5xx/timeouts."""
        key = (os.environ.get(self.api_key_env) if self.api_key_env else None) or "sk-no-key"
        return openai.OpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_attempts - 1)


def boundary_client(boundary: ModelBoundary) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=BOUNDARY_BASE_URL,
        api_key="failforge-boundary",
        max_retries=0,
        http_client=httpx.Client(transport=boundary),
    )


def surface_boundary_error(boundary: ModelBoundary, exc: BaseException) -> BaseException:
    """The typed failforge error behind an SDK exception, if the boundary raised one."""
    if boundary.failure is not None:
        return boundary.failure
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, FailforgeError):
            return cause
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, (openai.APIError, httpx.HTTPError)):
        return InfrastructureError(f"model call failed: {type(exc).__name__}: {exc}")
    return exc
