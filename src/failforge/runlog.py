"""RunLog: the ordered steps one run produces, shared by the model boundary and the tool boundary.

The harness never sees it. Both boundaries append to the same log, so steps land in the order the
events happened whatever agent loop is driving them, and in replay both boundaries read the seed's
step at the same index to know what they must reproduce. One RunLog per run; nothing global.

The log also knows the run's roster (who the agents are): as each step is appended it is addressed
(recipient) and placed in its round by :class:`failforge.roster.StepAddresser`, the same rule a
record's reader applies, so replay can check those fields like any other.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from failforge.canonical import readable_diff
from failforge.errors import SeedIntegrityError
from failforge.roster import AgentProfile, StepAddresser, single_agent_roster
from failforge.trajectory import Phase, Step


@dataclass
class RunLog:
    """Steps of one run plus, in replay, the seed steps it must reproduce.

    ``replay_until``: steps with index < replay_until are replayed from ``expected`` and asserted;
    the step at ``replay_until`` is the branch point (injected when an injector is set); later
    steps are live. In record mode ``expected`` is empty and ``replay_until`` is 0.
    """

    trajectory_id: str
    expected: Sequence[Step] = ()
    replay_until: int = 0
    record_phase: Phase = "recorded"
    steps: list[Step] = field(default_factory=list)
    drift_error: type[Exception] | None = None
    """The environment's typed drift error (set by the episode), for boundaries that need to raise it."""
    roster: list[AgentProfile] = field(default_factory=single_agent_roster)
    """The run's agents (set by the episode from the harness before the first step)."""
    open_roster: bool = True
    """Whether agents the roster does not declare may join mid-run (a harness that declares none)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _addresser: StepAddresser | None = field(default=None, repr=False)

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
        i = self.next_index if index is None else index
        return i < self.replay_until

    def expected_step(self, index: int) -> Step | None:
        return self.expected[index] if index < len(self.expected) else None

    def phase_for(self, index: int) -> Phase:
        if index < self.replay_until:
            return "replayed"
        return self.record_phase

    def append(self, step: Step) -> Step:
        """Append ``step``; in replay, first check that it equals the seed's step field by field."""
        with self._lock:
            if self._addresser is None:
                self._addresser = StepAddresser(self.roster)
            recipient, round_, position = self._addresser.address(step)
            step = step.model_copy(update={"index": len(self.steps), "recipient": recipient, "round": round_, "position": position})
            if step.index < self.replay_until:
                self._check_integrity(step)
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
            f"the seed's step {step.index} ({expected.kind}) differs in {', '.join(fields)} from what replaying its own "
            "recording produced: the record was edited after it was made",
            trajectory_id=self.trajectory_id,
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
    log = RunLog(trajectory_id=trajectory_id, record_phase="recorded")
    for step in steps:
        log.append(step)
    return [s.model_copy(update={"phase": original.phase}) for s, original in zip(log.steps, steps, strict=True)]
