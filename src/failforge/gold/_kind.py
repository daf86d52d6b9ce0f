"""The gold-kind contract: what one kind of change contributes to the attempt pipeline.

A gold kind is one way of changing exactly one thing in a successful run (an agent's action steered into an error
mode, an observation carrying injected content, a refusal served at a benign task, ...). Every kind is run by the
same engine (:func:`failforge.gold.run_job`): the kind *branches* (replays the seed, makes its change, continues
live), the registered *filters* it names judge the candidate, and the kind *labels* what passed. So a kind says
only what is its own; drift, infrastructure errors, verdict bookkeeping and the result records are the engine's.

Kinds are plugins (:data:`failforge.plugins.gold_kinds`, one registry, one decorator), found by their spec's
``job`` field: an environment may contribute its own kinds (AgentDojo's observation, compliance and refusal kinds
live with it), and the campaign plans and runs them without naming any benchmark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from failforge.gold._filtering import FilterContext
from failforge.gold._result import AttemptResult
from failforge.trajectory import GoldLabel, Trajectory

if TYPE_CHECKING:
    from failforge.gold._arms import ArmResult
    from failforge.gold._config import CampaignConfig
    from failforge.gold._engine import JobContext


class JobSpec(BaseModel, frozen=True):
    """What every planned job says: which kind runs it (``job``: the kind's registry name), on which seed, at
    which step, which sample. A kind's spec adds its own fields, its ``mode`` (a field or a property: the ledger's
    mode column and the label's ``mode_code``) and its ``attempt_id`` (the job's name in the ledger)."""

    job: str
    seed_id: str
    step: int
    sample: int = 0

    @property
    def attempt_id(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} does not say its attempt id")


@dataclass
class Planned:
    """A kind's plan over a campaign's seeds: the jobs, and one line per seed or step it left out and why."""

    jobs: list[tuple[Trajectory, JobSpec]] = field(default_factory=list)
    not_planned: list[str] = field(default_factory=list)


@dataclass
class Candidate:
    """A changed run, ready for the filters: the run, where its change is, and what the kind learnt making it.

    ``facts`` is what the kind's filters and its label read (the mode, the steering note, the stage-2 request,
    the injected text, the twin, the derived target and chains); ``note`` is kept on a rejection.
    """

    trajectory: Trajectory
    step: int
    facts: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    reference: Trajectory | None = None
    """The run the change is measured against (prefix identity, differs): the seed, or for a change made on a
    run that was itself changed (a compliance flip of a run under attack) that run."""


class GoldKind(ABC):
    """Base of every gold kind. Required: ``name``, ``spec``, :meth:`branch` and :meth:`label`; the rest has
    defaults (no plan of its own, the filters its spec lists)."""

    name: ClassVar[str] = ""
    """The registry name; a job whose spec's ``job`` field says it is run by this kind."""
    spec: ClassVar[type[BaseModel]]
    """The pydantic model of this kind's jobs (what the ledger plans and an executor ships)."""
    family: ClassVar[str] = ""
    """The label's ``mode_family`` for this kind's gold ("" for the action kind, whose family is its mode's)."""

    def plan(self, seeds: Sequence[Trajectory], config: CampaignConfig) -> Planned:
        """The jobs this kind plans over ``seeds`` under the campaign's plan (default: none)."""
        return Planned()

    def base(self, seed: Trajectory, spec: Any, ctx: JobContext) -> dict[str, Any]:
        """What every record of the job carries (a rejection's fields): its ids, mode, sample and provenance."""
        provenance = {**ctx.provenance, "attempt_id": spec.attempt_id}
        return {
            "attempt_id": spec.attempt_id,
            "seed_id": seed.id,
            "step": spec.step,
            "mode": spec.mode,
            "sample": spec.sample,
            "provenance": provenance,
        }

    def failure_provenance(self, seed: Trajectory, exc: BaseException) -> dict[str, Any]:
        """What a failed job of this kind adds to its record's provenance (default: nothing)."""
        return {}

    @abstractmethod
    def branch(self, seed: Trajectory, spec: JobSpec, ctx: JobContext) -> Candidate | AttemptResult | ArmResult:
        """Replay ``seed``, make this kind's change, continue live: the candidate, or a result settled before any
        candidate (rejected at planning or by the guide, a point that does not decide the outcome, or a job that
        makes no candidate). Drift and infrastructure errors are raised: the engine records them once."""

    @abstractmethod
    def filters(self, config: CampaignConfig) -> list[str]:
        """The registered filters that judge this kind's candidates, in the order their verdicts are reported."""

    def filter_context(self, seed: Trajectory, spec: JobSpec, candidate: Candidate, ctx: JobContext) -> FilterContext:
        """What this kind's filters see (default: the seed, the run, the changed step, the kind's facts)."""
        return FilterContext(
            seed=seed,
            branch=candidate.trajectory,
            step=candidate.step,
            spec=spec,
            job=ctx,
            facts=candidate.facts,
            reference=candidate.reference,
            note=candidate.note or "",
        )

    @abstractmethod
    def label(
        self, seed: Trajectory, spec: JobSpec, candidate: Candidate, verdicts: list[Any], ctx: JobContext
    ) -> GoldLabel | str:
        """The gold label of a candidate every filter passed, or why no label can be made (a rejection)."""


__all__ = ["Candidate", "GoldKind", "JobSpec", "Planned"]
