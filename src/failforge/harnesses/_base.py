"""The harness contract as a base class: what a harness must say, and every optional part with its default.

Failforge calls each optional part unconditionally, so a harness states only what differs from the
default, and a reader finds the whole contract here instead of in ``getattr`` probes spread across
seeds, replay and the CLI. Registration is unchanged (``@harnesses.register`` and the
``failforge.harnesses`` entry point group); the registry refuses a class that does not derive from
:class:`Harness`, naming it.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, ClassVar, Self

import openai
from pydantic import BaseModel

from failforge.errors import ConfigError

if TYPE_CHECKING:
    from failforge.llm import AgentIdentity, Responder
    from failforge.roster import AgentProfile


class Harness(abc.ABC):
    """An agent loop failforge drives through its boundaries (register a subclass in ``failforge.plugins.harnesses``).

    Required: ``name``, a pydantic ``Config`` (recorded in every trajectory's ``harness.config``, so the
    exact loop can be rebuilt: ``cls(config)``) and :meth:`run`. The harness knows nothing of
    recording, replay or injection: those happen at the client and the toolbox it is given.

    Optional, with their defaults:

    - :meth:`roster`: ``None``, an open roster (its single agent is ``agent``; agents that identify
      themselves at the model boundary join as they first call).
    - :meth:`agent_resolver`: ``None`` every time, no in-process identity (each agent has its own
      client, route or header).
    - :attr:`label`: the harness's ``name`` (how seed ids name it).
    - :attr:`stats`: ``None`` (what the last run measured, kept in a seed's provenance).
    - :attr:`splits_tools` ``False``; a team harness sets it ``True`` and implements
      :meth:`for_environment` (its team from an environment's tool split) and :meth:`scripted_oracle`
      (the whole team played from a fixed tool-call sequence, for oracle seeds).
    """

    name: ClassVar[str]
    Config: ClassVar[type[BaseModel]]
    config: BaseModel
    #: A team harness: built with :meth:`for_environment` from an environment's ``tool_domains`` and
    #: played by :meth:`scripted_oracle` in oracle seeds. Single-agent harnesses leave it False.
    splits_tools: ClassVar[bool] = False
    #: What the last :meth:`run` measured (e.g. an external command's start and stop times); None: nothing.
    stats: dict[str, Any] | None = None

    def __init__(self, config: BaseModel | None = None) -> None:
        self.config = config if config is not None else self.Config()

    @abc.abstractmethod
    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        """Run the agent loop on ``instruction`` with ``client`` (the model boundary) and ``toolbox``
        (the tool boundary); return the final answer, or None when the loop ended without one."""

    @property
    def label(self) -> str:
        """How a seed id names this harness (an external agent names its framework); default: :attr:`name`."""
        return self.name

    def roster(self) -> list[AgentProfile] | None:
        """The agents this harness runs (names, roles, tools, whom they address); None: an open roster."""
        return None

    def agent_resolver(self) -> AgentIdentity | None:
        """Which agent is running now, for frameworks whose agents share one client; None: not known here.

        The model boundary asks on every call, after the call's explicit identity, route and header."""
        return None

    @classmethod
    def for_environment(
        cls, domains: dict[str, list[str]], *, budget: int = 12, max_tokens: int | None = 256, **overrides: Any
    ) -> Self:
        """The team for an environment's tool split (``domains``: domain -> tool names). Team harnesses only."""
        raise ConfigError(
            f"harness {cls.name!r} runs a single agent; it does not split an environment's tools among agents"
        )

    def scripted_oracle(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> Responder:
        """Every agent of the team played from a fixed tool-call sequence and answer. Team harnesses only."""
        raise ConfigError(
            f"harness {self.name!r} runs a single agent: its oracle seeds are played by the environment's oracle"
        )


__all__ = ["Harness"]
