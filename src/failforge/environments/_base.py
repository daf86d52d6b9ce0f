"""The stateful tool boundary, shared by every environment.

A stateful tool always runs live (record, replay and branch alike); what replay adds is the check:
after the call, the observation and the environment's state fingerprint must equal the seed's at the
same step, else the environment's drift error is raised with a readable diff. Environments supply
only "run this call" and "fingerprint yourself"; the comparison lives here once, and so does the
keeping of the run's first failure (on the run log, shared with the model boundary).

:class:`ToolBoundary` is what a harness is handed as its toolbox: the environment's own toolbox, every
call observed, plus :meth:`ToolBoundary.refuse` (a call whose arguments do not fit the tool's schema is
the agent's action: recorded, with the schema error as its observation, and never run) and the run's
deadline. Tools served over MCP and tools an outside process reports (the proxy) go through the same
:func:`observe_tool_call`.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from failforge.canonical import canonical_hash, readable_diff
from failforge.errors import EnvironmentDrift, FailforgeError
from failforge.runlog import RunLog
from failforge.trajectory import ComponentSpec, Outcome, Step, Task, Trajectory

if TYPE_CHECKING:
    from failforge.llm import Responder


@dataclass(frozen=True)
class Fingerprint:
    """A state hash plus per-part hashes, so a drift can say which part of the state changed."""

    digest: str
    parts: dict[str, str]


@dataclass(frozen=True)
class ToolResult:
    content: str
    error: str | None = None
    images: tuple[str, ...] = ()  # sha256 of images the observation comes with (screenshots), part of the step


class Toolbox(Protocol):
    """What a harness needs from an environment: tool schemas and a way to call one.

    Every ``call`` goes through :func:`observe_tool_call`, so the observation and the state
    fingerprint after it are recorded (and, in replay, asserted) whatever loop made the call.
    """

    def schemas(self) -> list[dict[str, Any]]: ...

    def call(self, name: str, arguments: str, call_id: str | None) -> str: ...


@runtime_checkable
class Episode(Protocol):
    """One run of one task in a fresh environment instance. A context manager: leaving it releases
    everything the run held (a browser context, a container, a frozen clock)."""

    def instruction(self) -> str:
        """The task as the agent reads it (step 0 of every trajectory)."""
        ...

    def task_record(self) -> Task:
        """The task as recorded in a trajectory (benchmark, id, instruction, gold answer)."""
        ...

    def toolbox(self, log: RunLog) -> Toolbox:
        """The tools, bound to ``log`` so every call is observed through :func:`observe_tool_call`."""
        ...

    def fingerprint(self) -> Fingerprint:
        """The environment's state now: what replay compares after every tool call."""
        ...

    def evaluate(self, final_output: str | None, steps: list[Step]) -> Outcome:
        """The benchmark's own evaluator on the finished run."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Episode: ...

    def __exit__(self, *exc: object) -> None: ...


class NoOptions(BaseModel):
    """The options of an environment that takes none (the default ``Options``)."""

    model_config = ConfigDict(extra="forbid")


#: A fixed tool-call sequence and final answer that solve one task (an environment's ground truth).
GroundTruth = tuple[list[tuple[str, dict[str, Any]]], str]


class Environment(abc.ABC):
    """An environment plugin: subclass it and register the subclass in :data:`failforge.plugins.environments`.

    It knows how to name its tasks, describe one task run as a recorded spec and rebuild an episode
    from that spec; the rest is optional, each part with a documented default, and failforge calls
    every part unconditionally (no probing for what a plugin happens to define). It never imports
    harnesses, seeds, replay or anything above it: the default harness is named as data (a
    :class:`ComponentSpec`), and seeds are recorded by :mod:`failforge.seeds` from what this contract
    exposes. The registry refuses a class that does not derive from it, naming the class.

    Required: ``name``, :meth:`tasks`, :meth:`spec`, :meth:`open`. Optional, with their defaults:
    ``drift_error`` (:class:`~failforge.errors.EnvironmentDrift`), ``Options`` (:class:`NoOptions`),
    :meth:`oracle` (None: no oracle seeds), :meth:`ground_truth` (None: no team oracle),
    :meth:`tool_domains` (None: team harnesses refuse it), :meth:`default_harness`
    (``failforge.tool_calling`` with its defaults), :meth:`stored_spec` (the spec itself),
    :meth:`seed_name` (``<name>-<hash of the spec's config>-oracle``), :meth:`doctor` (works),
    :meth:`demo` (the first six tasks with default options: what ``failforge demo --environment NAME`` records).
    """

    name: ClassVar[str]
    #: The typed error a fidelity check of this environment raises (a subclass of EnvironmentDrift).
    drift_error: ClassVar[type[EnvironmentDrift]] = EnvironmentDrift
    #: What ``failforge seeds/record`` accept for this environment (e.g. suite, sandbox backend, cache dir).
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Whether its runs get the five-outcome adjudication from its evaluator's evidence (utility, and a security or a
    #: policy check): AgentDojo and tau2 say; elsewhere a failed run is only a failure.
    adjudicates: ClassVar[bool] = False
    #: Which agent steps a plan may take as decisive by default: ``all``, or ``paper`` (Who&When Pro's: never the first
    #: agent step, never the final answer); a campaign's ``[plan] step_policy`` overrides it.
    step_policy: ClassVar[str] = "all"

    def policy_evidence(self, trajectory: Trajectory) -> dict[str, Any] | None:
        """What the benchmark itself says about writes in one run with no injection (the writes its gold makes, those
        the agent made, its DB check), which the five-outcome adjudication reads; None: it says nothing (tau2 says)."""
        return None

    def wrong_argument(self, trajectory: Trajectory, t: int, rng: Any) -> dict[str, Any] | str | None:
        """A.2 in this environment's own terms at step t: the derivation of a plausible wrong argument (``tool``,
        ``argument``, ``original``, ``value``, ``source``, ...) or why there is none; None: the generic rule applies
        (TextWorld: another thing of the same kind the game has shown, not a misspelt one)."""
        return None

    def changed_argument(
        self, trajectory: Trajectory, t: int, old: dict[str, Any], new: dict[str, Any]
    ) -> tuple[bool, str] | None:
        """Whether ã_t's changed arguments are this environment's A.2 (exhibited, reason); None: any changed argument
        is."""
        return None

    @abc.abstractmethod
    def tasks(self, options: BaseModel) -> list[str]:
        """Every task id the options select, in a stable order."""

    @abc.abstractmethod
    def spec(self, task_id: str, options: BaseModel) -> ComponentSpec:
        """The environment spec a trajectory of ``task_id`` records; :meth:`open` rebuilds the same episode from it."""

    @abc.abstractmethod
    def open(self, spec: ComponentSpec) -> Episode:
        """A fresh episode rebuilt from a recorded spec (raise ConfigError naming the bad field)."""

    def oracle(self, spec: ComponentSpec) -> Responder | None:
        """A scripted policy that plays the model for oracle / demonstration seeds; default None (there is none:
        ``failforge seeds`` says so, and seeds are recorded from a model with ``failforge record``)."""
        return None

    def ground_truth(self, spec: ComponentSpec) -> GroundTruth | None:
        """The task solved as a fixed tool-call sequence and answer, which a team harness's scripted oracle
        hands out agent by agent; default None (team oracle seeds are refused with a one-line error)."""
        return None

    def tool_domains(self, spec: ComponentSpec) -> dict[str, list[str]] | None:
        """The tools split by domain (domain -> tool names), one worker each in a team harness; default None
        (the tools cannot be split, and team harnesses refuse this environment with a one-line error)."""
        return None

    def default_harness(self, spec: ComponentSpec) -> ComponentSpec:
        """The harness (name + config) seeds of this environment are recorded with; default failforge's own
        function-calling loop with its default config."""
        return ComponentSpec(name="failforge.tool_calling", config={})

    def stored_spec(self, spec: ComponentSpec) -> ComponentSpec:
        """The spec a finished recording keeps (e.g. a page cache switched from record to replay mode); default the spec
        itself."""
        return spec

    def seed_name(self, spec: ComponentSpec) -> str:
        """A stable, readable id for the oracle seed of ``spec`` (e.g. ``agentdojo-banking-user_task_3-oracle``);
        default the environment's name and a hash of the spec's config, stable across runs."""
        return f"{self.name}-{canonical_hash(spec.config)[:12]}-oracle"

    def demo(self, output: Path) -> tuple[list[str], dict[str, Any]]:
        """The tasks and options ``failforge demo --environment NAME`` records oracle seeds of (``output`` is the
        demo's folder, for caches it may keep there); default the first six tasks with default options. An
        environment whose oracle is slow on some tasks names quick ones here, so a demo stays a demo."""
        return self.tasks(self.Options())[:6], {}

    def demo_harness(self) -> dict[str, Any]:
        """Config fields of the default harness that the demo's seeds are recorded with, replacing the default's;
        default none. A demo continues every branch live on the embedded 135M model, where each call of a long
        benchmark prompt costs seconds to minutes: an environment sizes its live continuations (turns, tokens per
        call) here so a demo attempt ends within its deadline. Recorded in the seeds' harness config, like any
        other setting."""
        return {}

    def doctor(self) -> tuple[bool, str]:
        """Whether this environment can run here, and why not; default: it can (nothing to check)."""
        return True, f"{self.name}: no check of its own"


def parse_tool_arguments(arguments: str) -> dict[str, Any] | None:
    """A tool call's JSON argument text as a dict; None when it is not a JSON object (the tool then
    reports the error to the agent, which is what a malformed call earns in any real harness)."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def fingerprint_of(state: dict[str, Any]) -> Fingerprint:
    """A state given as parts (JSON values): one hash per part, and the digest of the parts."""
    parts = {key: canonical_hash(value) for key, value in sorted(state.items())}
    return Fingerprint(digest=canonical_hash(parts), parts=parts)


def observe_tool_call(
    log: RunLog,
    *,
    name: str,
    arguments: dict[str, Any] | None,
    call_id: str | None,
    run: Callable[[], ToolResult],
    fingerprint: Callable[[], Fingerprint],
    drift: type[EnvironmentDrift] = EnvironmentDrift,
) -> Step:
    """Run one stateful tool call live, fingerprint the state, append the step, and assert it in replay.

    A drift is kept as the run's failure before it is raised: a framework that catches the tool's
    exception and carries on cannot hide it."""
    try:
        return _observe(
            log, name=name, arguments=arguments, call_id=call_id, run=run, fingerprint=fingerprint, drift=drift
        )
    except FailforgeError as exc:
        log.fail(exc)
        raise


def _observe(
    log: RunLog,
    *,
    name: str,
    arguments: dict[str, Any] | None,
    call_id: str | None,
    run: Callable[[], ToolResult],
    fingerprint: Callable[[], Fingerprint],
    drift: type[EnvironmentDrift],
) -> Step:
    if log.failure is not None:
        raise log.failure
    index = log.next_index
    result = run()
    fp = fingerprint()
    step = Step(
        index=index,
        kind="tool",
        agent="environment",
        role="tool",
        content=result.content,
        tool_call_id=call_id,
        tool_name=name,
        tool_arguments=arguments,
        state_fingerprint=fp.digest,
        state_parts=fp.parts,
        error=result.error,
        images=list(result.images),
        phase=log.phase_for(index),
    )
    if log.replaying(index):
        assert_tool_step(log, step, drift)
    return log.append(step)


def assert_tool_step(log: RunLog, step: Step, drift: type[EnvironmentDrift]) -> None:
    index = step.index
    expected = log.expected_step(index)
    where: dict[str, Any] = {"trajectory_id": log.error_id, "step": index}
    if expected is None or expected.kind != "tool":
        what = "nothing" if expected is None else f"a {expected.kind} step"
        raise drift(
            f"the harness called tool {step.tool_name!r} where the seed has {what}",
            expected=what,
            actual=step.tool_name,
            **where,
        )
    if (expected.tool_name, expected.tool_arguments) != (step.tool_name, step.tool_arguments):
        raise drift(
            "the tool call differs from the recorded one",
            expected={"tool": expected.tool_name, "arguments": expected.tool_arguments},
            actual={"tool": step.tool_name, "arguments": step.tool_arguments},
            diff=readable_diff(
                {"tool": expected.tool_name, "arguments": expected.tool_arguments},
                {"tool": step.tool_name, "arguments": step.tool_arguments},
            ),
            **where,
        )
    if (expected.content, expected.error) != (step.content, step.error):
        raise drift(
            f"tool {step.tool_name!r} returned a different observation than recorded",
            expected=expected.content,
            actual=step.content,
            diff=readable_diff(f"{expected.content}\n{expected.error or ''}", f"{step.content}\n{step.error or ''}"),
            **where,
        )
    if expected.state_fingerprint != step.state_fingerprint:
        changed = sorted(
            k
            for k in set(expected.state_parts or {}) | set(step.state_parts or {})
            if (expected.state_parts or {}).get(k) != (step.state_parts or {}).get(k)
        )
        raise drift(
            f"state fingerprint after tool {step.tool_name!r} differs from the recorded one; changed parts:"
            f" {', '.join(changed) or 'unknown'}",
            expected=expected.state_fingerprint,
            actual=step.state_fingerprint,
            diff="\n".join(
                f"  part {k}: recorded {(expected.state_parts or {}).get(k)} replayed {(step.state_parts or {}).get(k)}"
                for k in changed
            ),
            **where,
        )


class ToolBoundary:
    """The tool side of one run, as a harness is handed it: the environment's toolbox with every call
    observed, the agent's malformed calls recorded as its own actions, the run's first failure kept.

    ``deadline`` (a ``time.monotonic()`` instant, or None) is when the run must be over: a harness
    that waits on something outside (an agent process) bounds its wait by it.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        log: RunLog,
        *,
        fingerprint: Callable[[], Fingerprint],
        drift: type[EnvironmentDrift] = EnvironmentDrift,
        deadline: float | None = None,
    ) -> None:
        self.inner = toolbox
        self.log = log
        self.fingerprint = fingerprint
        self.drift = drift
        self.deadline = deadline

    def schemas(self) -> list[dict[str, Any]]:
        return self.inner.schemas()

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        """One call through the environment's own toolbox (which observes it); a failforge error it meets
        (a drift, a crashed browser) becomes the run's failure before it is raised."""
        if self.log.failure is not None:
            raise self.log.failure
        try:
            return self.inner.call(name, arguments, call_id)
        except FailforgeError as exc:
            self.log.fail(exc)
            raise

    def refuse(self, name: str, arguments: dict[str, Any] | None, call_id: str | None, error: str) -> Step:
        """Record a call that was not run (its arguments do not fit the tool's schema): a tool step whose
        observation is ``error`` and whose state is the environment's, unchanged, checked in replay."""
        return observe_tool_call(
            self.log,
            name=name,
            arguments=arguments,
            call_id=call_id,
            run=lambda: ToolResult(content="", error=error),
            fingerprint=self.fingerprint,
            drift=self.drift,
        )

    def last_step(self) -> Step | None:
        return self.log.steps[-1] if self.log.steps else None

    def __getattr__(self, name: str) -> Any:
        # What an environment's toolbox offers beyond the protocol (AgentDojo's runtime() for its own
        # pipeline) stays reachable; those calls go through observe_tool_call too.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
