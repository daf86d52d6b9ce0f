"""RunLog and Plan: the ordered steps one run produces, and what the run does with each of them.

The harness never sees either. Both boundaries append to the same log, so steps land in the order the
events happened whatever agent loop is driving them, and in replay both boundaries read the seed's
step at the same index to know what they must reproduce. One RunLog per run; nothing global.

The run's :class:`Plan` is the only place the run mode is spelled (as vcrpy's cassette holds the record
mode): ``record`` (every call live), ``replay`` (the whole seed, or a prefix of it that ends at a model
call), ``branch`` (replay up to step t, a change or the live model at t, live after) and ``resume``
(serve what is recorded, then go live: a judge session that was interrupted). The boundaries ask the
plan what to do at an index (:meth:`Plan.action`) and nothing else decides it.

The log also knows the run's roster (who the agents are): as each step is appended it is addressed
(recipient) and placed in its round by :class:`failforge.roster.StepAddresser`, the same rule a
record's reader applies, so replay can check those fields like any other. And it holds the run's
first failure, whichever boundary met it (a drift, an exhausted recording, a dead endpoint): the first
one wins and is what the runner raises, so a framework that swallows an error cannot hide it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from failforge.canonical import readable_diff
from failforge.errors import FailforgeError, SeedIntegrityError
from failforge.roster import AgentProfile, StepAddresser, single_agent_roster
from failforge.trajectory import Phase, Step

Mode = Literal["record", "replay", "branch", "resume"]
PLAN_MODES: tuple[Mode, ...] = ("record", "replay", "branch", "resume")
#: What a boundary does with the event at one index: serve the recording, serve the branch's change,
#: end the run there (a prefix replay reached its end), call the live model, or refuse (nothing left).
Action = Literal["replay", "change", "stop", "live", "exhausted"]


@dataclass(frozen=True)
class Plan:
    """What a run does at each step index; build one with :meth:`record`, :meth:`replay`, :meth:`branch`
    or :meth:`resume`.

    ``until``: steps with a lower index are served from the recording and checked. ``stop``: the model
    call at ``until`` ends the run (a prefix replay) instead of being answered. ``changed``: step
    ``until`` of a branch is answered by the branch's change (an injected note, a fixed response)
    rather than by the live model. ``observation``: step ``until`` of a branch is a tool observation the
    environment serves changed (an injection vector filled with an attack), phase ``injected``; the model
    calls around it are replayed before and live after, as in any branch.
    """

    mode: Mode = "record"
    until: int = 0
    stop: bool = False
    changed: bool = False
    observation: bool = False

    @classmethod
    def record(cls) -> Plan:
        return cls("record")

    @classmethod
    def replay(cls, length: int, until: int | None = None) -> Plan:
        """The whole recording of ``length`` steps, or its prefix of ``until`` steps (ending at a model call)."""
        end = length if until is None else until
        return cls("replay", end, stop=end < length)

    @classmethod
    def branch(cls, t: int, *, changed: bool = True) -> Plan:
        return cls("branch", t, changed=changed)

    @classmethod
    def observe(cls, t: int) -> Plan:
        """A branch whose step ``t`` is a changed tool observation (the environment changes it, not the model)."""
        return cls("branch", t, changed=False, observation=True)

    @classmethod
    def resume(cls, recorded: int) -> Plan:
        return cls("resume", recorded)

    @property
    def live_allowed(self) -> bool:
        """Whether any call of this run may reach a live model."""
        return self.mode != "replay"

    @property
    def record_phase(self) -> Phase:
        """The phase of a step made live: ``live`` after a branch point, ``recorded`` otherwise."""
        return "live" if self.mode == "branch" else "recorded"

    def replaying(self, index: int) -> bool:
        return index < self.until

    def action(self, index: int) -> Action:
        if index < self.until:
            return "replay"
        if index == self.until and self.stop:
            return "stop"
        if index == self.until and self.mode == "branch" and self.changed:
            return "change"
        return "live" if self.live_allowed else "exhausted"

    def phase_for(self, index: int) -> Phase:
        if index == self.until and self.observation:
            return "injected"
        return "replayed" if index < self.until else self.record_phase

    def describe(self) -> dict[str, object]:
        """The plan as recorded in provenance (``observation`` only when set, so older records read the same)."""
        out: dict[str, object] = {"mode": self.mode, "until": self.until, "stop": self.stop, "changed": self.changed}
        if self.observation:
            out["observation"] = True
        return out


@dataclass
class RunLog:
    """Steps of one run plus, in replay, the seed steps it must reproduce, and the run's plan.

    ``seed_id``: the recording's own id, when the run replays one; an error at a replayed step is a
    fact about that recording and names it, not the run that found it.
    """

    trajectory_id: str
    expected: Sequence[Step] = ()
    plan: Plan = field(default_factory=Plan.record)
    seed_id: str | None = None
    steps: list[Step] = field(default_factory=list)
    drift_error: type[Exception] | None = None
    """The environment's typed drift error (set by the session), for boundaries that need to raise it."""
    roster: list[AgentProfile] = field(default_factory=single_agent_roster)
    """The run's agents (set by the session from the harness before the first step)."""
    open_roster: bool = True
    """Whether agents the roster does not declare may join mid-run (a harness that declares none)."""
    failure: FailforgeError | None = None
    """The first error either boundary met; the runner raises it whatever the harness made of it."""
    stopped: bool = False
    """A prefix replay reached its end (a model call at ``plan.until``): the run ends there, not a failure."""
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _addresser: StepAddresser | None = field(default=None, repr=False)

    @property
    def replay_until(self) -> int:
        return self.plan.until

    @property
    def record_phase(self) -> Phase:
        return self.plan.record_phase

    @property
    def error_id(self) -> str:
        """The id an error names: the recording's at a replayed step, else this run's."""
        return self.seed_id if self.seed_id is not None and self.replaying() else self.trajectory_id

    def fail(self, exc: FailforgeError) -> FailforgeError:
        """Keep ``exc`` as the run's failure unless an earlier one is kept; returns the kept one."""
        with self._lock:
            if self.failure is None:
                self.failure = exc
            return self.failure

    def set_roster(self, profiles: list[AgentProfile], *, open_roster: bool) -> None:
        if self.steps:
            raise RuntimeError("the roster is fixed once the run has steps")
        self.roster = list(profiles)
        self.open_roster = open_roster
        self._addresser = None

    def agent_names(self) -> list[str]:
        return [p.name for p in self.roster]

    def join(self, profile: AgentProfile) -> None:
        """An agent an open roster did not declare made a call: it joins the roster from now on."""
        with self._lock:
            self.roster.append(profile)
            if self._addresser is not None:
                self._addresser.add(profile)

    @property
    def next_index(self) -> int:
        return len(self.steps)

    def replaying(self, index: int | None = None) -> bool:
        return self.plan.replaying(self.next_index if index is None else index)

    def expected_step(self, index: int) -> Step | None:
        return self.expected[index] if index < len(self.expected) else None

    def phase_for(self, index: int) -> Phase:
        return self.plan.phase_for(index)

    def append(self, step: Step) -> Step:
        """Append ``step``; in replay, first check that it equals the seed's step field by field, then keep
        the seed's own step (only its phase says it was replayed).

        What replay rebuilt and what the seed recorded agree on every checked field, but not always byte
        for byte on the rest: a response hash the seed never had (older seeds have none), a request that
        differs only in canonicalised volatile ids. A branch's prefix is the seed's, so it is copied."""
        with self._lock:
            if self._addresser is None:
                self._addresser = StepAddresser(self.roster)
            recipient, round_, position = self._addresser.address(step)
            step = step.model_copy(
                update={"index": len(self.steps), "recipient": recipient, "round": round_, "position": position}
            )
            if self.plan.replaying(step.index):
                self._check_integrity(step)
                expected = self.expected_step(step.index)
                if expected is not None:
                    step = expected.model_copy(update={"phase": step.phase})
            self.steps.append(step)
            return step

    def _check_integrity(self, step: Step) -> None:
        """Every recorded field of a replayed step must be what replay produced from the seed's own
        recording; boundaries check requests, observations and fingerprints first, so what is left
        here is an edited record (a rewritten answer, a changed argument in the step but not the response)."""
        expected = self.expected_step(step.index)
        if expected is None:
            return
        want, got = expected.comparable(), step.comparable()
        if want == got:
            return
        fields = sorted(k for k in want if want[k] != got.get(k))
        raise SeedIntegrityError(
            f"the seed's step {step.index} ({expected.kind}) differs in {', '.join(fields)} from what replaying its own"
            " recording produced: the record was edited after it was made",
            trajectory_id=self.error_id,
            step=step.index,
            expected={k: want[k] for k in fields},
            actual={k: got.get(k) for k in fields},
            diff=readable_diff({k: want[k] for k in fields}, {k: got.get(k) for k in fields}),
        )


def addressed(steps: Sequence[Step], trajectory_id: str = "addressed") -> list[Step]:
    """``steps`` as a single-agent :class:`RunLog` writes them: recipient, round and position derived.

    Those three fields are derived, not recorded facts of a model; recordings written before they existed
    (judge call stores, schema-v1 records) are addressed this way on read so that replaying them checks
    only what was really recorded.
    """
    log = RunLog(trajectory_id=trajectory_id)
    for step in steps:
        log.append(step)
    return [s.model_copy(update={"phase": original.phase}) for s, original in zip(log.steps, steps, strict=True)]


__all__ = ["PLAN_MODES", "Action", "Mode", "Plan", "RunLog", "addressed"]
