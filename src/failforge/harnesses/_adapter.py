"""The base every in-process framework adapter subclasses, and the one bridge from a tool schema to a tool.

All four adapters run the same team (a lead handing one subtask at a time to a worker per tool
domain), so everything but the framework's own vocabulary lives here once: the plugin surface
(``__init__``, ``Config``, ``roster``, ``for_environment``, ``scripted_policy``, ``scripted_oracle``),
the check that the framework is installed, and ``run``, which turns every worker's environment tools
into :class:`BoundaryTool` objects and hands them, in the framework's tool type, to the framework's
own loop. An adapter says only:

- how its framework **spells a delegation and a final answer** — :attr:`FrameworkAdapter.spelling`
  (the roster is built from it) and :attr:`FrameworkAdapter.Policy` (the scripted team that writes
  them);
- its **tool type** — :meth:`FrameworkAdapter.tool` (or :meth:`FrameworkAdapter.worker_tools` for a
  framework that takes a worker's tools as one object, AutoGen's workbench);
- how it **builds and runs its team** — :meth:`FrameworkAdapter.run_team`.

The calling agent is never guessed here: ``run_team`` gives each agent its own client
(``member_client``, ``client.async_client(name)``) or, for a framework that shares one client, the
adapter supplies ``agent_resolver`` reading the framework's own context (docs/FRAMEWORKS.md).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar

import openai

from failforge.harnesses._base import Harness
from failforge.harnesses._frameworks import (
    FrameworkTeamConfig,
    TeamPolicy,
    need_workers,
    require_framework,
    team_config,
    team_roster,
    tool_schemas,
)
from failforge.llm import TeamOracle
from failforge.roster import AgentProfile

T = TypeVar("T")

_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class BoundaryTool:
    """One environment tool as every framework needs it: its name, description and JSON-schema
    parameters, and a call that goes through failforge's tool boundary (recorded as a tool step,
    checked in replay) and returns the observation text. Framework-neutral: an adapter only wraps it
    in its framework's tool type."""

    name: str
    description: str
    parameters: dict[str, Any]
    toolbox: Any = field(repr=False)

    def call(self, arguments: Mapping[str, Any] | str, call_id: str | None = None) -> str:
        """Run the tool on ``arguments``: a mapping (serialised as JSON), or the framework's own JSON
        text, passed on verbatim so a malformed call earns the environment's own error."""
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        return str(self.toolbox.call(self.name, text, call_id))

    async def acall(self, arguments: Mapping[str, Any] | str, call_id: str | None = None) -> str:
        """:meth:`call` for async frameworks, in a worker thread: the environment never blocks the loop."""
        return await asyncio.to_thread(self.call, arguments, call_id)


def boundary_tools(toolbox: Any, names: list[str], agent: str) -> list[BoundaryTool]:
    """``agent``'s tools ``names`` from ``toolbox`` (a ConfigError names any the environment lacks)."""
    tools = []
    for schema in tool_schemas(toolbox, names, agent):
        function = schema["function"]
        tools.append(
            BoundaryTool(
                name=function["name"],
                description=str(function.get("description") or function["name"]),
                parameters=function.get("parameters") or dict(_NO_PARAMETERS),
                toolbox=toolbox,
            )
        )
    return tools


@dataclass(frozen=True)
class Spelling:
    """How a framework's team addresses its members, as the roster records it.

    ``delegation``: the lead's tool that hands a worker its subtask, ``{worker}`` standing for the
    worker's name (``"{worker}"``: a tool named after the worker; ``"transfer_to_{worker}"``); a name
    without ``{worker}`` is one tool for every worker, whose argument ``addressed_by`` names it
    (AutoGen's ``assign(worker, instruction)``). ``final_answer``: the tool whose call is a final
    answer — the lead's to the user, a worker's report to the lead — or None when an answer is plain
    text. ``hand_back``: the tool a worker returns the conversation to the lead with (``{lead}``
    standing for the lead's name), for handoff frameworks whose workers transfer back themselves.
    """

    delegation: str = "{worker}"
    addressed_by: str | None = None
    final_answer: str | None = None
    hand_back: str | None = None


class FrameworkAdapter(Harness):
    """A framework adapter: the team failforge runs in one framework (subclass it; see the module doc).

    Class attributes name the plugin (``name``), its config (``Config``), its scripted team
    (``Policy``), the module its ``run`` imports and the failforge extra that installs it
    (``framework``, ``extra``), the lead's name and role, and the framework's :class:`Spelling`.
    """

    name: ClassVar[str]
    Config: ClassVar[type[FrameworkTeamConfig]] = FrameworkTeamConfig
    Policy: ClassVar[type[TeamPolicy]]
    #: the module ``run`` needs (imported first, so a missing framework is a ConfigError naming ``extra``)
    framework: ClassVar[str]
    #: the ``pip install 'failforge[extra]'`` that installs it
    extra: ClassVar[str]
    lead_name: ClassVar[str] = "manager"
    lead_role: ClassVar[str] = "manager"
    spelling: ClassVar[Spelling] = Spelling()
    config: FrameworkTeamConfig
    splits_tools = True

    def __init__(self, config: FrameworkTeamConfig | None = None) -> None:
        self.config = config or self.Config()

    # --- the plugin surface (shared) -------------------------------------------------------------

    @classmethod
    def for_environment(
        cls, domains: dict[str, list[str]], *, budget: int = 12, max_tokens: int | None = 256, **overrides: Any
    ) -> Self:
        """The team for an environment's tool split: a worker per domain; ``overrides`` replace config
        fields, the adapter's own (``delegation``) included."""
        shared = {k: v for k, v in overrides.items() if k in FrameworkTeamConfig.model_fields}
        own = {k: v for k, v in overrides.items() if k not in shared}
        base = team_config(
            domains,
            lead_name=cls.lead_name,
            lead_role=cls.lead_role,
            budget=budget,
            max_tokens=max_tokens,
            overrides=shared,
        )
        return cls(
            base
            if cls.Config is FrameworkTeamConfig and not own
            else cls.Config.model_validate({**base.model_dump(), **own})
        )

    def roster(self) -> list[AgentProfile]:
        """The lead, the framework's own agents (:meth:`members`), then the workers, addressed as :meth:`spelled`."""
        s = self.spelled()
        return team_roster(
            self.config,
            handoff_tool=s.delegation,
            report_tool=s.final_answer,
            addressed_by=s.addressed_by,
            hand_back=s.hand_back,
            members=self.members(),
        )

    def spelled(self) -> Spelling:
        """This team's spelling: :attr:`spelling`, unless the config chooses another (the Agents SDK's handoffs)."""
        return self.spelling

    def members(self) -> list[AgentProfile]:
        """Agents the framework adds to the lead and its workers (AutoGen's speaker selector); none by default."""
        return []

    def scripted_policy(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> TeamPolicy:
        """The deterministic team for one task, spelled as this framework spells it."""
        return self.Policy(self.config, calls, final)

    def scripted_oracle(self, calls: list[tuple[str, dict[str, Any]]], final: str) -> TeamOracle:
        return self.scripted_policy(calls, final).oracle(self.name)

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        """Check the framework is there, bridge every worker's tools, and run the framework's team."""
        require_framework(self.name, self.framework, self.extra)
        need_workers(self.name, self.config)
        tools = {w.name: self.worker_tools(boundary_tools(toolbox, w.tools, w.name)) for w in self.config.workers}
        return self.run_team(client, model, instruction, tools)

    # --- the framework's part ----------------------------------------------------------------------

    def tool(self, tool: BoundaryTool) -> Any:
        """``tool`` as the framework's tool type (called inside ``run``, so the framework may be imported here)."""
        raise NotImplementedError(
            f"{type(self).__name__} must say how its framework spells a tool (tool or worker_tools)"
        )

    def worker_tools(self, tools: list[BoundaryTool]) -> Any:
        """A worker's tools as the framework takes them: by default a list of :meth:`tool`."""
        return [self.tool(t) for t in tools]

    def run_team(self, client: openai.OpenAI, model: str, instruction: str, tools: dict[str, Any]) -> str | None:
        """Build the team in the framework (``tools``: each worker's, by name, from :meth:`worker_tools`),
        run it on ``instruction`` and return the lead's final answer."""
        raise NotImplementedError(
            f"{type(self).__name__} must say how its framework builds and runs its team (run_team)"
        )


__all__ = ["run_async", "BoundaryTool", "FrameworkAdapter", "Spelling", "boundary_tools"]


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run an async framework's coroutine to its end from synchronous code, in any thread.

    ``asyncio.run`` refuses to start where an event loop is already running in this thread — a
    notebook, or a worker thread that drove a MiniWoB++ page (Playwright's sync API keeps its loop
    marked running in the thread that opened the browser). There the coroutine runs on a fresh loop in
    a thread of its own, which is waited for; the framework's tool calls go to failforge's tool boundary
    through ``asyncio.to_thread`` either way.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, Any] = {}

    def main() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=main, name="failforge-framework-loop")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
