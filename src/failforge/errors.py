"""Typed errors.

Drift (the replayed world disagrees with the recording) and infrastructure failure (something
broke: a server died, a browser crashed) are different facts and are kept apart in the type tree,
as Temporal keeps ``Nondeterminism`` apart from ``Fatal``: a drift says the seed or the environment
is not reproducible, an infrastructure error says nothing about the seed and may be retried.
Every drift error carries where it happened (trajectory id, step) and what was expected and found,
so a user can open the seed at that step.
"""

from __future__ import annotations

from typing import Any


class FailforgeError(Exception):
    """Base of every error failforge raises on purpose."""


class ConfigError(FailforgeError):
    """A configuration value, flag or file is missing or invalid."""


class SeedFormatError(FailforgeError):
    """A trajectory record could not be parsed. Names the file, line and field."""

    def __init__(self, path: str, line: int, field: str, problem: str) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem
        super().__init__(f"{path}:{line}: field '{field}': {problem}")


class DriftError(FailforgeError):
    """Replay observed something other than what was recorded."""

    kind = "drift"

    def __init__(
        self,
        message: str,
        *,
        trajectory_id: str | None = None,
        step: int | None = None,
        expected: Any = None,
        actual: Any = None,
        diff: str = "",
        agent: str | None = None,
        nearest: list[dict[str, Any]] | None = None,
    ) -> None:
        self.trajectory_id = trajectory_id
        self.step = step
        self.expected = expected
        self.actual = actual
        self.diff = diff
        self.agent = agent
        self.nearest = list(nearest or [])
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = f"trajectory {self.trajectory_id or '?'} step {self.step if self.step is not None else '?'}"
        if self.agent:
            where += f" (agent {self.agent!r})"
        text = f"{type(self).__name__} at {where}: {self.message}"
        if self.nearest:
            text += "; nearest recorded requests: " + ", ".join(
                f"step {n['step']} of {n['agent']!r} ({n['similarity']:.0%} similar)" for n in self.nearest
            )
        if self.diff:
            text += "\n" + self.diff
        return text

    def locate(self, trajectory_id: str | None = None, step: int | None = None) -> DriftError:
        """Fill in the location once a caller higher up knows it; returns self for ``raise e.locate(..)``."""
        if trajectory_id is not None and self.trajectory_id is None:
            self.trajectory_id = trajectory_id
        if step is not None and self.step is None:
            self.step = step
        self.args = (self._render(),)
        return self

    def of_seed(self, seed_id: str) -> DriftError:
        """Name the seed rather than the branch being built from it: a prefix drift is the seed's fact."""
        self.trajectory_id = seed_id
        self.args = (self._render(),)
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": type(self).__name__,
            "trajectory_id": self.trajectory_id,
            "step": self.step,
            "agent": self.agent,
            "message": self.message,
            "nearest": self.nearest,
            "diff": self.diff,
        }


class PromptDrift(DriftError):
    """The agent's model request at a replayed step differs from the recorded one."""

    kind = "prompt"


class AgentDrift(DriftError):
    """A model call at a replayed step came from another agent than recorded (or with another purpose,
    or out of that agent's own order): the agents' interleaving differs from the recording.

    ``expected`` is the recorded agent, ``actual`` the one that called; the message names both.
    """

    kind = "agent"


class EnvironmentDrift(DriftError):
    """A stateful tool produced a different observation or state fingerprint than recorded."""

    kind = "environment"


class EnvStateDrift(EnvironmentDrift):
    """A structured environment state (e.g. AgentDojo's pydantic environment) differs."""

    kind = "env_state"


class DomDrift(EnvironmentDrift):
    """A browser page's normalised DOM differs."""

    kind = "dom"


class SandboxDrift(EnvironmentDrift):
    """A sandbox workspace or command output differs."""

    kind = "sandbox"


class SeedIntegrityError(DriftError):
    """A seed's recorded field disagrees with what replaying the seed's own recording produces.

    The model responses and tool observations replayed fine, but the step (or task record, or outcome)
    written in the seed says something else: the record was edited or corrupted after it was made.
    """

    kind = "record"


class RosterError(SeedIntegrityError):
    """A seed and its harness disagree about who the agents are: a step names an agent the harness does
    not have, an agent has an unknown role, or the recorded roster differs from the harness's."""

    kind = "roster"


class CacheMiss(DriftError):
    """A stateless tool call had no recording in replay mode. Lists the nearest recorded keys."""

    kind = "cache_miss"


class RecordingExhausted(DriftError):
    """Replay needed more recorded model responses than the seed holds; failforge never calls live instead."""

    kind = "recording_exhausted"


class InfrastructureError(FailforgeError):
    """Something outside the seed failed (model server down, browser crashed, container died).

    Never counted as drift and never as a rejected gold candidate.
    """


class ModelUnavailable(InfrastructureError):
    """The model endpoint could not be reached or kept failing after retries."""


class AttemptDeadlineExceeded(InfrastructureError):
    """An attempt ran past its per-attempt deadline (e.g. a model server that hangs)."""
