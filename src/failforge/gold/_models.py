"""The campaign's live models: resolved endpoints (picklable, for any executor) and per-process clients."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from failforge.llm import BoundedResponder, CallMeter, ModelEndpoint
from failforge.secrets import strip_userinfo
from failforge.trajectory import ComponentSpec


class ResolvedModels(BaseModel):
    """Concrete endpoints for agent and guide; what a Ray task receives instead of open clients."""

    agent: ModelEndpoint
    guide: ModelEndpoint

    def agent_spec(self) -> ComponentSpec:
        return ComponentSpec(
            name=self.agent.model, config={"base_url": strip_userinfo(self.agent.base_url), "role": "agent"}
        )

    def guide_spec(self) -> ComponentSpec:
        return ComponentSpec(
            name=self.guide.model, config={"base_url": strip_userinfo(self.guide.base_url), "role": "guide"}
        )


class Models:
    """Open HTTP clients for one process (thread-safe), with per-attempt deadline-bounded views."""

    def __init__(self, resolved: ResolvedModels) -> None:
        self.resolved = resolved
        self.agent_spec = resolved.agent_spec()
        self.guide_spec = resolved.guide_spec()
        self._agent = resolved.agent.upstream()
        self._guide = resolved.guide.upstream()
        self.meter: CallMeter | None = None

    def metered(self) -> Models:
        """A view for one job: the same clients, every call and its tokens counted on a meter of its own (what the
        job's record says it cost; a build's pilot projects from it). Closing the view is closing nothing."""
        view = copy.copy(self)
        view.meter = CallMeter()
        return view

    def agent(
        self, *, deadline: float | None = None, temperature: float | None = None, seed: int | None = None
    ) -> BoundedResponder:
        return BoundedResponder(
            self._agent, deadline=deadline, temperature=temperature, seed=seed, meter=self.meter, role="agent"
        )

    def guide(self, *, deadline: float | None = None) -> BoundedResponder:
        return BoundedResponder(self._guide, deadline=deadline, meter=self.meter, role="guide")

    def close(self) -> None:
        self._agent.close()
        self._guide.close()


class open_models:  # noqa: N801 - used as a function: ``with open_models(agent, guide) as resolved``
    """Resolve the endpoints; start the embedded local model (for the duration) when one is missing.

    ``warm``: a request whose prompt the embedded model evaluates once before anything runs
    (:meth:`LocalModelServer.warm`; ``warmed_seconds`` says how long it took), so the agent's long fixed prompt is
    not paid inside the first attempt's deadline. Ignored for a configured endpoint."""

    def __init__(
        self,
        agent: ModelEndpoint | None,
        guide: ModelEndpoint | None,
        *,
        n_ctx: int | None = None,
        warm: dict[str, Any] | None = None,
    ) -> None:
        self.agent = agent
        self.guide = guide
        self.n_ctx = n_ctx
        self.warm = warm
        self.warmed_seconds: float | None = None
        self.server: Any = None

    def __enter__(self) -> ResolvedModels:
        from failforge.llm import LOCAL_MODEL_NAME, LOCAL_N_CTX, LocalModelServer

        agent, guide = self.agent, self.guide
        if agent is None:
            self.server = LocalModelServer(n_ctx=self.n_ctx or LOCAL_N_CTX).start()
            if self.warm is not None:
                try:
                    self.warmed_seconds = self.server.warm(self.warm)
                except BaseException:
                    self.server.stop()
                    raise
            agent = ModelEndpoint(base_url=self.server.base_url, model=LOCAL_MODEL_NAME, api_key_env=None)
        return ResolvedModels(agent=agent, guide=guide or agent)

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()
