"""OpenAI clients: one for live endpoints, one wired to a :class:`ModelBoundary`.

Frameworks accept an ``openai.OpenAI`` client; giving them one whose ``http_client`` is the boundary
puts every model call of theirs under failforge's control without touching their code. Retries are
off in the boundary client because the boundary's own upstream retries live calls, and a replayed
call must never be retried.

:class:`BoundaryClient` is that client; ``client.for_agent(name, purpose=...)`` makes an explicit
per-agent client over the same boundary (the first and strongest identity source), which is what a
multi-agent harness hands each of its agents.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

import httpx
import openai
from pydantic import BaseModel, Field, field_validator

from failforge.errors import FailforgeError, InfrastructureError
from failforge.llm._boundary import ModelBoundary
from failforge.llm._identity import AgentIdentity, valid_name
from failforge.llm._transports import AgentTransport, AsyncAgentTransport
from failforge.llm._upstream import HttpUpstream
from failforge.secrets import remember, remember_env, strip_userinfo, userinfo_secrets

BOUNDARY_BASE_URL = "http://failforge.boundary/v1"


class ModelEndpoint(BaseModel):
    """An OpenAI-compatible endpoint. The key is read from ``api_key_env`` and never stored."""

    base_url: str
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = Field(default=180.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        # Checked here, before anything runs: "notaurl" would otherwise be tried (and retried) by every attempt.
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            parts = parts._replace(netloc="")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"{strip_userinfo(value)!r} is not an http(s) URL of a model endpoint, e.g. http://127.0.0.1:8080/v1"
            )
        return value

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
        given = os.environ.get(self.api_key_env) if self.api_key_env else None
        remember([given, *userinfo_secrets(self.base_url)])  # never shown to a user, whatever an error quotes
        remember_env([self.api_key_env])  # never inherited by an agent command
        key = given or "sk-no-key"
        return openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=self.max_attempts - 1
        )


class _BoundaryHTTP(httpx.Client):
    """The HTTP client under a :class:`BoundaryClient`: carries the boundary and the identity, so a copy
    of the OpenAI client (``with_options``, which frameworks call) keeps both."""

    def __init__(self, boundary: ModelBoundary, identity: AgentIdentity | None) -> None:
        super().__init__(transport=AgentTransport(boundary, identity))
        self.boundary = boundary
        self.identity = identity


class BoundaryClient(openai.OpenAI):
    """An OpenAI client whose every call goes through a :class:`ModelBoundary`."""

    def __init__(
        self, boundary: ModelBoundary | None = None, identity: AgentIdentity | None = None, **options: Any
    ) -> None:
        if boundary is None:  # openai's copy() / with_options(): the same HTTP client, other options
            http = options.get("http_client")
            if not isinstance(http, _BoundaryHTTP):
                raise TypeError("a BoundaryClient is made from a ModelBoundary (or copied from another BoundaryClient)")
            super().__init__(**options)
            boundary, identity = http.boundary, http.identity
        else:
            super().__init__(
                base_url=BOUNDARY_BASE_URL,
                api_key="failforge-boundary",
                max_retries=0,
                http_client=_BoundaryHTTP(boundary, identity),  # type: ignore[arg-type]
            )  # type: ignore[arg-type]  # openai types its own HTTP client; an httpx.Client is accepted
        self.boundary = boundary
        self.identity = identity
        self._agent_clients: list[BoundaryClient] = []
        self._async_clients: list[AsyncBoundaryClient] = []

    def for_agent(self, agent: str, purpose: str | None = None) -> BoundaryClient:
        """A client whose calls belong to ``agent`` (with ``purpose`` when they are not its turn proper)."""
        client = BoundaryClient(self.boundary, AgentIdentity(valid_name(agent), purpose, "explicit"))
        self._agent_clients.append(client)
        return client

    def async_client(self, agent: str | None = None, purpose: str | None = None) -> AsyncBoundaryClient:
        """An ``openai.AsyncOpenAI`` over the same boundary, for async frameworks: unattributed, or
        explicitly ``agent``'s (default: this client's own identity)."""
        identity = self.identity if agent is None else AgentIdentity(valid_name(agent), purpose, "explicit")
        client = AsyncBoundaryClient(self.boundary, identity)
        self._async_clients.append(client)
        return client

    def close(self) -> None:
        for client in self._agent_clients:
            client.close()
        self._agent_clients.clear()
        for async_client in self._async_clients:
            async_client.close_sync()
        self._async_clients.clear()
        super().close()


class _AsyncBoundaryHTTP(httpx.AsyncClient):
    """The async HTTP client under an :class:`AsyncBoundaryClient` (kept through ``with_options`` copies)."""

    def __init__(self, boundary: ModelBoundary, identity: AgentIdentity | None) -> None:
        super().__init__(transport=AsyncAgentTransport(boundary, identity))
        self.boundary = boundary
        self.identity = identity


class AsyncBoundaryClient(openai.AsyncOpenAI):
    """An async OpenAI client whose every call goes through a :class:`ModelBoundary` (off the event loop)."""

    def __init__(
        self, boundary: ModelBoundary | None = None, identity: AgentIdentity | None = None, **options: Any
    ) -> None:
        if boundary is None:
            http = options.get("http_client")
            if not isinstance(http, _AsyncBoundaryHTTP):
                raise TypeError(
                    "an AsyncBoundaryClient is made from a ModelBoundary (or copied from another AsyncBoundaryClient)"
                )
            super().__init__(**options)
            boundary, identity = http.boundary, http.identity
        else:
            super().__init__(
                base_url=BOUNDARY_BASE_URL,
                api_key="failforge-boundary",
                max_retries=0,
                http_client=_AsyncBoundaryHTTP(boundary, identity),  # type: ignore[arg-type]
            )  # type: ignore[arg-type]  # legacy httpx, accepted at runtime
        self.boundary = boundary
        self.identity = identity

    def for_agent(self, agent: str, purpose: str | None = None) -> AsyncBoundaryClient:
        return AsyncBoundaryClient(self.boundary, AgentIdentity(valid_name(agent), purpose, "explicit"))

    def close_sync(self) -> None:
        """Nothing to release but the transport object: the boundary holds no sockets."""


def boundary_client(boundary: ModelBoundary, agent: str | None = None, purpose: str | None = None) -> BoundaryClient:
    """The client a harness gets: unattributed (the boundary resolves each call), or explicitly ``agent``'s."""
    return BoundaryClient(boundary, None if agent is None else AgentIdentity(valid_name(agent), purpose, "explicit"))


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
