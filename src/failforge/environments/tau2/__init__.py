"""tau2-bench (airline, retail, telecom) as a failforge environment: a conversation with a simulated user.

Tools run live against tau2's own environment (``env.get_response(ToolCall)``), agent tools with
requestor ``assistant`` and telecom's user-side device tools with requestor ``user``. After every call
the state is fingerprinted one part per DB table (``db.<table>``, telecom also ``user_db.<part>``), so
a drift names the table. The evaluator is tau2's own ``evaluate_simulation(..., EvaluationType.ALL)``
with the task's reward basis, on the trajectory rebuilt as tau2 messages; it builds its environments
from a parsed DB template shared per process (see ``_package``). Telecom's uuid4 bill ids come from a
stream seeded per episode (``id_seed`` in the spec).

The user simulator is not inside the environment: it is the ``customer`` member of the
``failforge.conversation`` harness, whose model calls go through failforge's model boundary like the
agent's. What the harness needs from the episode (policy, the user's scenario, user tools) is offered
by the toolbox's :meth:`Tau2Toolbox.conversation`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.canonical import canonical_hash
from failforge.environments._base import Environment, Fingerprint, ToolResult, observe_tool_call, parse_tool_arguments
from failforge.environments.tau2 import _package as pkg
from failforge.environments.tau2._oracle import CONFIRM, STOP, confirmation_request, final_message, opening
from failforge.environments.tau2._package import AGENT, CUSTOMER, task, write_tools
from failforge.errors import ConfigError, EnvironmentDrift, EnvStateDrift
from failforge.plugins import environments
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory

if TYPE_CHECKING:
    from failforge.llm import Responder

NORMALISER_VERSION = "tau2-state/1"
GREETING = "Hi! How can I help you today?"


class Tau2Options(BaseModel):
    """What ``failforge seeds tau2`` / ``record --env tau2`` accept."""

    model_config = ConfigDict(extra="forbid")

    domain: Literal["airline", "retail", "telecom"] | None = Field(
        default=None,
        description="tau2 domain: airline, retail or telecom (default: all three, task ids then DOMAIN/ID)",
    )
    split: str = Field(default="base", description="task split (base, test, train; telecom also small, full)")
    id_seed: int = Field(default=0, description="seed of telecom's bill-id stream (uuid4)")


def _tool_schema(tool: Any) -> dict[str, Any]:
    return json.loads(json.dumps(tool.openai_schema))  # type: ignore[no-any-return]


def state_fingerprint(env: Any) -> Fingerprint:
    """One hash per agent-DB table (and per user-DB part in telecom) plus their digest."""
    parts: dict[str, str] = {}
    for side, toolkit in (("db", env.tools), ("user_db", env.user_tools)):
        db = getattr(toolkit, "db", None) if toolkit is not None else None
        if db is None:
            continue
        for key, value in db.model_dump(mode="json").items():
            parts[f"{side}.{key}"] = canonical_hash(value)
    return Fingerprint(digest=canonical_hash(parts), parts=parts)


class Tau2Toolbox:
    """Agent tools (and telecom's user tools) of one episode, each call through the stateful tool boundary."""

    def __init__(self, episode: Tau2Episode, log: RunLog) -> None:
        self.episode = episode
        self.log = log
        env = episode.env
        self._agent = {t.name: t for t in env.get_tools()}
        self._user = {t.name: t for t in env.get_user_tools()} if env.user_tools is not None else {}

    def schemas(self) -> list[dict[str, Any]]:
        return [_tool_schema(t) for t in self._agent.values()]

    def user_schemas(self) -> list[dict[str, Any]]:
        return [_tool_schema(t) for t in self._user.values()]

    def conversation(self) -> dict[str, Any]:
        """What a conversation harness needs: the agent's policy, the user's scenario and tools, tau2's greeting."""
        return {
            "domain": self.episode.domain,
            "policy": self.episode.env.get_policy(),
            "user_scenario": self.episode.instruction(),
            "user_tools": self.user_schemas(),
            "greeting": GREETING,
        }

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        from tau2.data_model.message import ToolCall

        parsed = parse_tool_arguments(arguments)
        requestor = "user" if name in self._user else "assistant"
        holder: dict[str, str] = {}

        def run() -> ToolResult:
            if parsed is None:
                holder["content"] = f"Error: tool arguments are not a JSON object: {arguments!r}"
                return ToolResult(content=holder["content"], error=holder["content"])
            with self.episode.ids():
                message = self.episode.env.get_response(
                    ToolCall(id=call_id or "", name=name, arguments=parsed, requestor=requestor)
                )
            holder["content"] = str(message.content)
            return ToolResult(content=holder["content"], error=holder["content"] if message.error else None)

        observe_tool_call(
            self.log,
            name=name,
            arguments=parsed,
            call_id=call_id,
            run=run,
            fingerprint=lambda: state_fingerprint(self.episode.env),
            drift=EnvStateDrift,
        )
        return holder["content"]


class Tau2Episode:
    """One task of one domain in a fresh tau2 environment (set to the task's initial state)."""

    def __init__(self, domain: str, split: str, task_id: str, *, id_seed: int = 0) -> None:
        self.domain = pkg.check_domain(domain)
        self.split = split
        self.task_id = task_id
        self.id_seed = id_seed
        self.task = pkg.task(domain, split, task_id)
        self._ids = pkg.seeded_ids(id_seed)
        self._reset = self._ids.__enter__()
        self.env = self._fresh_environment()

    def _fresh_environment(self) -> Any:
        self._reset()
        env = pkg.constructor(self.domain)()
        state = self.task.initial_state
        if state is not None:
            env.set_state(
                initialization_data=state.initialization_data,
                initialization_actions=state.initialization_actions,
                message_history=state.message_history or [],
            )
        return env

    def ids(self) -> Any:
        import contextlib

        return contextlib.nullcontext()

    def __enter__(self) -> Tau2Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._ids is not None:
            self._ids.__exit__(None, None, None)
            self._ids = None  # type: ignore[assignment]

    def instruction(self) -> str:
        """The user's scenario (what the simulated user is told; the agent never sees it)."""
        return str(self.task.user_scenario)

    def task_record(self) -> Task:
        criteria = self.task.evaluation_criteria
        return Task(
            benchmark="tau2",
            suite=self.domain,
            task_id=self.task_id,
            instruction=self.instruction(),
            gold_answer=None,
            metadata={
                "split": self.split,
                "reward_basis": [str(b.value) for b in criteria.reward_basis] if criteria else [],
            },
        )

    def toolbox(self, log: RunLog) -> Tau2Toolbox:
        return Tau2Toolbox(self, log)

    def fingerprint(self) -> Fingerprint:
        return state_fingerprint(self.env)

    def messages(self, steps: list[Step]) -> tuple[list[Any], bool]:
        """The run as tau2 messages (tau2's greeting first) and whether the user ended it (tau2's stop tokens)."""
        from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage
        from tau2.user.user_simulator import UserSimulator

        out: list[Any] = [AssistantMessage(role="assistant", content=GREETING)]
        requestors: dict[str, str] = {}
        stopped = False
        for step in steps:
            if step.kind == "agent":
                requestor = "user" if step.agent == CUSTOMER else "assistant"
                calls = []
                for call in step.tool_calls:
                    args = call.parsed_arguments()
                    calls.append(
                        ToolCall(
                            id=call.id, name=call.name, arguments=args if args is not None else {}, requestor=requestor
                        )
                    )
                    requestors[call.id] = requestor
                cls = UserMessage if requestor == "user" else AssistantMessage
                message = cls(
                    role=requestor,
                    content=step.content if not calls else (step.content or None),
                    tool_calls=calls or None,
                )
                out.append(message)
                if requestor == "user" and not calls and message.content and UserSimulator.is_stop(message):
                    stopped = True
            elif step.kind == "tool" and step.tool_call_id in requestors:
                out.append(
                    ToolMessage(
                        id=step.tool_call_id,
                        role="tool",
                        content=step.content or "",
                        requestor=requestors[step.tool_call_id],
                        error=step.error is not None,
                    )
                )
        return out, stopped

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """tau2's own ``evaluate_simulation`` (EvaluationType.ALL, the task's reward basis)."""
        from failforge.environments.tau2._evaluate import evaluate

        messages, stopped = self.messages(steps)
        return evaluate(self, messages, stopped)


@environments.register(
    "tau2", requires=("tau2",), description="tau2-bench conversations (airline, retail, telecom) with a simulated user"
)
class Tau2Environment(Environment):
    """tau2-bench as an environment plugin: task ids are tau2's own ids within the options' domain and split."""

    name: ClassVar[str] = "tau2"
    drift_error: ClassVar[type[EnvironmentDrift]] = EnvStateDrift
    Options: ClassVar[type[BaseModel]] = Tau2Options

    adjudicates: ClassVar[bool] = True

    def policy_evidence(self, trajectory: Trajectory) -> dict[str, Any] | None:
        """What tau2 itself says about writes in one run: the tools it types ``WRITE`` that its gold actions call
        (the task's ``evaluation_criteria.actions``: none means tau2's gold leaves the DB as it was, e.g. a request
        the domain policy says to turn down) and those the agent called; and tau2's DB check from the breakdown.
        None for a run tau2's own evaluation did not judge."""
        if trajectory.outcome is None or trajectory.outcome.evaluator != "tau2.evaluate_simulation":
            return None
        cfg = trajectory.environment.config
        domain, split, task_id = str(cfg["domain"]), str(cfg.get("split", "base")), str(cfg["task_id"])
        writes = pkg.write_tools(domain)
        criteria = pkg.task(domain, split, task_id).evaluation_criteria
        expected = [a.name for a in ((criteria.actions or []) if criteria else []) if a.name in writes]
        agent = [
            c.name
            for s in trajectory.steps
            if s.kind == "agent" and s.agent != CUSTOMER
            for c in s.tool_calls
            if c.name in writes
        ]
        breakdown = (trajectory.outcome.details or {}).get("reward_breakdown") or {}
        return {
            "expected_writes": expected,
            "agent_writes": agent,
            "db_check": breakdown.get("DB"),
            "reward_breakdown": breakdown,
        }

    def _opts(self, options: BaseModel) -> Tau2Options:
        return Tau2Options.model_validate(options.model_dump())

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """Six telecom tasks: its evaluator takes ~0.03 s where airline's reloads a 7 MB database (~10 s)."""
        return self.tasks(Tau2Options(domain="telecom"))[:6], {"domain": "telecom"}

    def demo_harness(self) -> dict[str, Any]:
        """Live continuations a demo can afford on the embedded model. Each live call carries tau2's real
        prompts (telecom, measured: 6,887 prompt tokens for the agent, its policy and tools; ~700 for the
        customer), and a machine with a load of 9 on its 2 cores evaluated 15-45 prompt tokens a second (the
        agent's call took 389 s). The demo's seeds end in their third exchange: four turns leave two live
        exchanges after the agent's last step, a turn at most three calls (the seeds need three), a reply 128
        tokens (the 135M model otherwise rambles to the 512-token cap). A run that reaches the turn limit ends
        as tau2's ``max_steps`` termination (reward 0), the benchmark's own rule; the 135M customer wrote no
        ``###STOP###`` in the runs measured, so with the default 30 turns they would end the same way, minutes later."""
        return {
            "max_turns": 4,
            "max_calls_per_turn": 3,
            "sampling": {"temperature": 0.0, "max_tokens": 128, "seed": 0},
        }

    def tasks(self, options: BaseModel) -> list[str]:
        """The options' domain's task ids; with no domain, every domain's, as ``DOMAIN/ID``."""
        opts = self._opts(options)
        if opts.domain is None:
            return [f"{domain}/{task}" for domain in pkg.DOMAINS for task in pkg.tasks(domain, opts.split)]
        return list(pkg.tasks(opts.domain, opts.split))

    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        opts = self._opts(options)
        domain, _, own = task_id.partition("/") if "/" in task_id else (opts.domain, "", task_id)
        if domain is None:
            raise ConfigError(
                f"tau2 task {task_id!r} names no domain: give --domain, or the task as DOMAIN/ID (e.g."
                f" airline/{task_id})"
            )
        if opts.domain is not None and domain != opts.domain:
            raise ConfigError(f"tau2 task {task_id!r} is not in --domain {opts.domain}")
        task_id = own
        pkg.task(domain, opts.split, task_id)
        return ComponentSpec(
            name="tau2",
            version=pkg.tau2_version(),
            config={
                "domain": domain,
                "split": opts.split,
                "task_id": task_id,
                "id_seed": opts.id_seed,
                "normaliser": NORMALISER_VERSION,
            },
        )

    def open(self, spec: ComponentSpec) -> Tau2Episode:
        cfg = spec.config
        try:
            return Tau2Episode(
                cfg["domain"], cfg.get("split", "base"), cfg["task_id"], id_seed=int(cfg.get("id_seed", 0))
            )
        except KeyError as exc:
            raise ConfigError(f"environment spec for tau2 lacks {exc.args[0]!r}: {cfg}") from exc

    def oracle(self, spec: ComponentSpec) -> Responder:
        from failforge.environments.tau2._oracle import conversation_oracle

        cfg = spec.config
        return conversation_oracle(
            pkg.task(cfg["domain"], cfg.get("split", "base"), cfg["task_id"]), pkg.write_tools(cfg["domain"])
        )

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        cfg = spec.config
        task = pkg.task(cfg["domain"], cfg.get("split", "base"), cfg["task_id"])
        actions = len((task.evaluation_criteria.actions or []) if task.evaluation_criteria else [])
        return ComponentSpec(
            name="failforge.conversation",
            config={"max_turns": max(30, 4 * actions + 10), "max_calls_per_turn": max(10, actions + 4)},
        )

    def seed_name(self, spec: ComponentSpec) -> str:
        cfg = spec.config
        return f"tau2-{cfg['domain']}-{canonical_hash(cfg['task_id'])[:10]}-oracle"

    def doctor(self) -> tuple[bool, str]:
        try:
            return True, f"tau2-bench {pkg.tau2_version()}: {', '.join(pkg.DOMAINS)}"
        except ConfigError as exc:
            return False, str(exc)


__all__ = [
    "AGENT",
    "CONFIRM",
    "CUSTOMER",
    "GREETING",
    "NORMALISER_VERSION",
    "STOP",
    "Tau2Environment",
    "Tau2Episode",
    "Tau2Options",
    "Tau2Toolbox",
    "confirmation_request",
    "final_message",
    "opening",
    "state_fingerprint",
    "task",
    "write_tools",
]
