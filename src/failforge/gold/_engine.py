"""One job, any kind: branch, filters, label. What every executor runs, in a thread, a worker process or a Ray task.

Pure: no files, no ledger. The driver alone writes what :func:`run_job` returns. The walk of one job is the same for
every gold kind:

1. the kind is looked up by the spec's ``job`` field (one registry: :data:`failforge.plugins.gold_kinds`);
2. the kind **branches**: replays the seed, makes its change, continues live (or settles the job before any run:
   a plan it cannot make, a guide with nothing to ask for, a point that does not decide the outcome);
3. the registered **filters** the kind names judge the candidate (:func:`failforge.gold.run_filters`), every
   verdict kept;
4. the kind **labels** a candidate every filter passed.

Drift and infrastructure errors are caught here, once: a drift is the seed's (failed, kind ``drift``), a dead
endpoint the world's (failed, ``infrastructure``, retried on the next run), anything else a bug (failed, ``error``,
with its traceback). None of them is ever a rejection.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from failforge.errors import ConfigError, DriftError
from failforge.gold._arms import ArmResult
from failforge.gold._config import CampaignConfig
from failforge.gold._filtering import FilterFailed, run_filters
from failforge.gold._kind import Candidate, GoldKind, JobSpec
from failforge.gold._models import Models
from failforge.gold._result import AttemptResult, Stage, failed, rejected, rejected_by
from failforge.plugins import gold_kinds
from failforge.trajectory import Trajectory

#: What a job hands back: an attempt's result, or an original arm (the action kind's shared pre-run).
JobResult = AttemptResult | ArmResult


@dataclass
class JobContext:
    """What a running job has: the campaign's models and config, the provenance every record carries, its deadline.

    ``stage`` is where the job is (the kind moves it on: ``guide`` while a guide writes, ``replay`` while a branch
    runs); a failure is reported at it. ``drift_seed`` names the run a drift belongs to when it is not the seed (a
    compliance flip replays its run under attack)."""

    models: Models
    config: CampaignConfig
    provenance: dict[str, Any]
    deadline: float
    stage: Stage = "replay"
    drift_seed: str | None = None
    base: dict[str, Any] | None = None
    """The fields every record of the job carries (:meth:`GoldKind.base`), made once; a kind may add to its
    provenance."""
    note: str | None = None
    """The steering note once written: kept on a failure after it (so a failed attempt shows what it was asked)."""


def job_kind(spec: JobSpec) -> GoldKind:
    """The kind that runs ``spec`` (by its ``job`` field)."""
    return gold_kinds.get(spec.job)()


def parse_job(spec_json: str) -> JobSpec:
    """A job's spec from its JSON (what the process and Ray executors receive): the kind named by ``job`` parses it."""
    data = json.loads(spec_json)
    job = data.get("job") if isinstance(data, dict) else None
    if not isinstance(job, str):
        raise ConfigError(f"a job spec names no kind (field 'job'): {spec_json[:120]}")
    return gold_kinds.get(job).spec.model_validate(data)


def run_job(
    seed: Trajectory, spec: JobSpec, models: Models, config: CampaignConfig, provenance: dict[str, Any] | None = None
) -> JobResult:
    """Run one job of any kind to its result; never raises for a bad candidate, a drift or a dead endpoint.

    Every result says what it cost (``provenance["cost"]``, an original arm's ``cost``): its wall seconds, and its
    live model calls and tokens by role, counted on a meter of the job's own."""
    started = time.monotonic()
    metered = models.metered()
    result = _run(seed, spec, metered, config, provenance)
    cost = {"seconds": round(time.monotonic() - started, 3), "models": metered.meter.summary() if metered.meter else {}}
    if isinstance(result, ArmResult):
        result.record.cost = cost
    else:
        result.record.provenance = {**result.record.provenance, "cost": cost}
    return result


def _run(
    seed: Trajectory, spec: JobSpec, models: Models, config: CampaignConfig, provenance: dict[str, Any] | None
) -> JobResult:
    kind = job_kind(spec)
    ctx = JobContext(
        models=models,
        config=config,
        provenance=dict(provenance or {}),
        deadline=time.monotonic() + config.attempt_deadline,
    )
    base = ctx.base = kind.base(seed, spec, ctx)
    try:
        made = kind.branch(seed, spec, ctx)
        if not isinstance(made, Candidate):
            return made
        ctx.stage = "filters"
        verdicts = _judge(kind, seed, spec, made, ctx)
    except FilterFailed as exc:
        return failed(_failing(kind, seed, base, exc.cause), exc.stage, exc.cause, ctx.note)  # type: ignore[arg-type]
    except DriftError as exc:
        if ctx.stage in ("replay", "continuation"):
            drift = exc.of_seed(ctx.drift_seed or seed.id)
            return failed(_failing(kind, seed, base, drift), "replay", drift, ctx.note)
        return failed(_failing(kind, seed, base, exc), ctx.stage, exc, ctx.note)
    except Exception as exc:  # infrastructure or a bug: failed with its error; the campaign goes on
        return failed(
            _failing(kind, seed, base, exc), "continuation" if ctx.stage == "replay" else ctx.stage, exc, ctx.note
        )
    note, trajectory = made.note, made.trajectory
    if not all(v.passed for v in verdicts):
        return rejected_by(base, verdicts, note=note, trajectory=trajectory)
    label = kind.label(seed, spec, made, verdicts, ctx)
    if isinstance(label, str):
        return rejected(base, "filters", [label], verdicts=verdicts, note=note, trajectory=trajectory)
    trajectory.label = label
    return AttemptResult("gold", trajectory)


def _failing(kind: GoldKind, seed: Trajectory, base: dict[str, Any], exc: BaseException) -> dict[str, Any]:
    """A failed job's fields, with what its kind adds to a failure's provenance."""
    extra = kind.failure_provenance(seed, exc)
    return {**base, "provenance": {**base["provenance"], **extra}} if extra else base


def _judge(kind: GoldKind, seed: Trajectory, spec: JobSpec, candidate: Candidate, ctx: JobContext) -> list[Any]:
    names = kind.filters(ctx.config)
    fctx = kind.filter_context(seed, spec, candidate, ctx)
    verdicts = run_filters(fctx, names)
    candidate.trajectory.provenance.update(fctx.evidence)
    return verdicts


__all__ = ["JobContext", "JobResult", "job_kind", "parse_job", "run_job"]
