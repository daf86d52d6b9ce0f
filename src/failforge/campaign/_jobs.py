"""A campaign's jobs as the executors run them: :func:`failforge.gold.run_job` with the worker's model clients and
warm environments, and what a job whose worker failed becomes (failed, never lost).

The executor named by the campaign file (``local``, ``process``, ``ray``: :mod:`failforge.jobs`) gets the
:class:`~failforge.jobs.JobRunner` built here. Each worker keeps the campaign's warm environments (``[pools]``:
sandboxes reset between attempts) for its own attempts; the thread executor closes the driver's at its end.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from failforge.environments.sandbox import close_pooled_sandboxes, sandbox_pool
from failforge.errors import InfrastructureError
from failforge.gold import (
    AttemptResult,
    CampaignConfig,
    JobResult,
    JobSpec,
    Models,
    ResolvedModels,
    failed,
    parse_job,
    run_job,
)
from failforge.jobs import JobRunner, Shared, WorkerKind
from failforge.plugins import executors
from failforge.trajectory import Trajectory

#: A job of any gold kind (an action attempt, an original arm, an environment's own kind), with its seed.
Work = tuple[Trajectory, JobSpec]
#: What a worker opens a campaign's jobs with: its model clients, the config, the run's provenance.
_Opened = tuple[Models, CampaignConfig, dict[str, Any]]


def job_in_pools(
    seed: Trajectory, spec: JobSpec, models: Models, config: CampaignConfig, provenance: dict[str, Any]
) -> JobResult:
    """:func:`failforge.gold.run_job` with this worker's warm environments sized as the campaign file says."""
    with sandbox_pool(config.pools.sandboxes):
        return run_job(seed, spec, models, config, provenance)


def _crashed(spec: Any, seed: Trajectory, exc: BaseException, provenance: dict[str, Any]) -> AttemptResult:
    """A worker died or raised past run_job's own handling: failed, with the error, never lost.

    A dead worker process is the machine's failure, not the seed's: infrastructure, retried on the next run.
    """
    if isinstance(exc, BrokenProcessPool):
        exc = InfrastructureError(f"the worker process running this attempt died twice ({exc})")
    fields = {"attempt_id": spec.attempt_id, "seed_id": seed.id, "step": spec.step, "mode": spec.mode}
    return failed({**fields, "sample": spec.sample, "provenance": provenance}, "continuation", exc)


def _open_worker(context: tuple[str, str, dict[str, Any]], where: WorkerKind) -> _Opened:
    """A worker's model clients (opened once: one connection per worker, not per attempt) and the config."""
    resolved_json, config_json, provenance = context
    return (
        Models(ResolvedModels.model_validate_json(resolved_json)),
        CampaignConfig.model_validate_json(config_json),
        provenance,
    )


@functools.lru_cache(maxsize=64)
def _seed(seed_json: str) -> Trajectory:
    """A seed parsed once per worker (a campaign makes many attempts per seed; the JSON is the same text).
    Shared between this worker's attempts as the thread pool shares seeds between threads: attempts only read it."""
    return Trajectory.model_validate_json(seed_json)


def _run_in_worker(opened: _Opened, seed_json: str, spec_json: str) -> JobResult:
    models, config, provenance = opened
    return job_in_pools(_seed(seed_json), parse_job(spec_json), models, config, provenance)


def _close_worker(opened: _Opened) -> None:
    opened[0].close()


def _args(item: Work, shared: Shared) -> tuple[Any, ...]:
    seed, spec = item
    return shared(seed.id, seed.model_dump_json), spec.model_dump_json()


class _Driver:
    """The thread executor's side: the driver's model clients, opened by its first job (the other executors'
    workers open their own), closed with the driver's warm environments at the end."""

    def __init__(self, resolved: ResolvedModels, config: CampaignConfig, provenance: dict[str, Any]) -> None:
        self.resolved, self.config, self.provenance = resolved, config, provenance
        self._models: Models | None = None
        self._lock = threading.Lock()

    def run(self, item: Work) -> JobResult:
        with self._lock:
            if self._models is None:
                self._models = Models(self.resolved)
        return job_in_pools(item[0], item[1], self._models, self.config, self.provenance)

    def close(self) -> None:
        if self._models is not None:
            self._models.close()
        close_pooled_sandboxes()


def run_jobs(
    work: Sequence[Work],
    resolved: ResolvedModels,
    config: CampaignConfig,
    provenance: dict[str, Any],
    on_start: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> Generator[JobResult, None, None]:
    """``work`` on the campaign file's executor, ``config.concurrency`` jobs in flight; each result as it completes.
    ``should_stop`` is asked before each new job starts (True: jobs in flight finish, no new one starts)."""
    here = _Driver(resolved, config, provenance)
    runner: JobRunner[Work, JobResult] = JobRunner(
        key=lambda item: item[1].attempt_id,
        crashed=lambda item, exc: _crashed(item[1], item[0], exc, provenance),
        here=here.run,
        open_worker=_open_worker,
        run_in_worker=_run_in_worker,
        # in memory only: the workers need the real endpoint
        context=(resolved.model_dump_json(), config.model_dump_json(), provenance),
        args=_args,
        close_worker=_close_worker,
        close_here=here.close,
    )
    run: Callable[..., Generator[JobResult, None, None]] = executors.get(config.executor)
    return run(runner, work, config.concurrency, on_start, should_stop, address=config.ray_address)
