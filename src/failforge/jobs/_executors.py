"""Where jobs run: a bounded thread pool in this process (default), worker processes, or Ray tasks.

Every executor only computes; results flow back to the driver, which alone appends to the output
files and the ledger, so executors never race on a file. Attempt functions receive plain data
(seed, spec, endpoints, config) and open their own HTTP clients, so the same function runs in a
thread or in a Ray worker on another machine. Each worker keeps the campaign's warm environments
(``[pools]``: sandboxes reset between attempts) for its own attempts, and every executor closes
them when it finishes.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from failforge.environments.sandbox import close_pooled_sandboxes, sandbox_pool
from failforge.errors import InfrastructureError
from failforge.gold import (
    ArmResult,
    AttemptResult,
    CampaignConfig,
    JobResult,
    JobSpec,
    Models,
    OriginalArm,
    Rejection,
    ResolvedModels,
    error_info,
    error_kind,
    parse_job,
    run_job,
)
from failforge.jobs._workers import drive, drive_processes, init_worker, leave_if_stopping, process_pool, start_ray
from failforge.plugins import executors
from failforge.trajectory import Trajectory

#: A job of any gold kind (an action attempt, an original arm, an environment's own kind), with its seed.
Work = tuple[Trajectory, JobSpec]
OnStart = Callable[[str], None]
#: Asked before each new attempt starts; True stops feeding the executor (attempts in flight finish).
ShouldStop = Callable[[], bool]


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
    return AttemptResult(
        "failed",
        Rejection(
            attempt_id=spec.attempt_id,
            seed_id=seed.id,
            step=spec.step,
            mode=spec.mode,
            sample=spec.sample,
            status="failed",
            stage="continuation",
            reasons=[f"{type(exc).__name__}: {exc}"],
            error=error_info(exc),
            error_kind=error_kind(exc),
            provenance=provenance,
        ),
    )


def _drive(
    work: Sequence[Work],
    submit: Callable[[Work], Future[JobResult]],
    concurrency: int,
    provenance: dict[str, Any],
    on_start: OnStart,
    should_stop: ShouldStop,
) -> Iterator[JobResult]:
    """:func:`failforge.jobs.drive` for campaign jobs (a job whose worker failed is :func:`_crashed`)."""
    return drive(
        work,
        submit,
        concurrency,
        _job_id,
        on_start,
        should_stop,
        lambda item, exc: _crashed(item[1], item[0], exc, provenance),
    )


def _job_id(item: Work) -> str:
    return item[1].attempt_id


@executors.register("local", description="a bounded thread pool in this process")
def run_local(
    work: Sequence[Work],
    resolved: ResolvedModels,
    config: CampaignConfig,
    provenance: dict[str, Any],
    on_start: OnStart,
    should_stop: ShouldStop,
) -> Iterator[JobResult]:
    models = Models(resolved)
    pool = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="failforge-attempt")
    try:
        yield from _drive(
            work,
            lambda item: pool.submit(job_in_pools, item[0], item[1], models, config, provenance),
            config.concurrency,
            provenance,
            on_start,
            should_stop,
        )
    finally:
        # On a normal end nothing is running; when the driver stops early (Ctrl-C, the circuit breaker)
        # the attempts in flight are abandoned, not waited for: the driver has put them back in the queue.
        pool.shutdown(wait=False, cancel_futures=True)
        models.close()
        close_pooled_sandboxes()


#: The worker process's open model clients, made once per process by _process_init (a process pool
#: worker is a fresh interpreter; opening clients per attempt would cost a connection each time).
_WORKER_MODELS: Models | None = None


def _process_init(resolved_json: str, driver_pid: int | None = None) -> None:
    """Once per worker process: the shared worker set-up (:func:`failforge.jobs.init_worker`:
    signals, pooled sandboxes closed at exit, leaving when the driver is gone), then its model clients."""
    global _WORKER_MODELS
    init_worker(driver_pid)
    _WORKER_MODELS = Models(ResolvedModels.model_validate_json(resolved_json))


@functools.lru_cache(maxsize=64)
def _seed(seed_json: str) -> Trajectory:
    """A seed parsed once per worker (a campaign makes many attempts per seed; the JSON is the same text)."""
    return Trajectory.model_validate_json(seed_json)


def _process_attempt(seed_json: str, spec_json: str, config_json: str, provenance: dict[str, Any]) -> JobResult:
    assert _WORKER_MODELS is not None, "process worker used before its initializer ran"
    try:
        # Shared between this worker's attempts as the thread pool shares seeds between threads: attempts only read
        # them.
        return job_in_pools(
            _seed(seed_json),
            parse_job(spec_json),
            _WORKER_MODELS,
            CampaignConfig.model_validate_json(config_json),
            provenance,
        )
    finally:
        leave_if_stopping()  # told to stop during the attempt: leave now that it has unwound (its environments closed)


@executors.register(
    "process", description="a pool of worker processes, for CPU-bound environments (no GIL between attempts)"
)
def run_processes(
    work: Sequence[Work],
    resolved: ResolvedModels,
    config: CampaignConfig,
    provenance: dict[str, Any],
    on_start: OnStart,
    should_stop: ShouldStop,
) -> Iterator[JobResult]:
    """The same attempt function in ``concurrency`` worker processes (forkserver: forking a threaded
    driver is unsafe). Workers inherit the environment, PYTHONHASHSEED included; only the driver writes."""
    config_json = config.model_dump_json()
    seed_json: dict[str, str] = {}

    def submit_to(pool: ProcessPoolExecutor, item: Work) -> Future[JobResult]:
        seed, spec = item
        if seed.id not in seed_json:
            seed_json[seed.id] = seed.model_dump_json()
        return pool.submit(_process_attempt, seed_json[seed.id], spec.model_dump_json(), config_json, provenance)

    yield from drive_processes(
        work,
        lambda: process_pool(config.concurrency, _process_init, (resolved.model_dump_json(), os.getpid())),
        submit_to,
        config.concurrency,
        _job_id,
        on_start,
        should_stop,
        lambda item, exc: _crashed(item[1], item[0], exc, provenance),
    )


def _ray_attempt(
    seed_json: str, spec_json: str, resolved_json: str, config_json: str, provenance: dict[str, Any]
) -> tuple[str, str]:
    """Body of the Ray task: rebuild everything from plain JSON, run, return JSON."""
    models = Models(ResolvedModels.model_validate_json(resolved_json))
    try:
        result = job_in_pools(
            Trajectory.model_validate_json(seed_json),
            parse_job(spec_json),
            models,
            CampaignConfig.model_validate_json(config_json),
            provenance,
        )
    finally:
        models.close()
    return result.status, result.record.model_dump_json()  # the status says which record: gold, rejected, failed or arm


@executors.register(
    "ray", requires=("ray",), description="Ray tasks (a local Ray instance, or ray_address for a cluster)"
)
def run_ray(
    work: Sequence[Work],
    resolved: ResolvedModels,
    config: CampaignConfig,
    provenance: dict[str, Any],
    on_start: OnStart,
    should_stop: ShouldStop,
) -> Iterator[JobResult]:
    ray, started_here = start_ray(config.ray_address, config.concurrency)
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_attempt)
    try:
        resolved_json = resolved.model_dump_json()  # in memory only: the workers need the real endpoint
        config_json = config.model_dump_json()
        seed_refs: dict[str, Any] = {}
        queue = iter(work)
        running: dict[Any, Work] = {}

        def top_up() -> None:
            while len(running) < config.concurrency and not should_stop():
                item = next(queue, None)
                if item is None:
                    return
                seed, spec = item
                if seed.id not in seed_refs:
                    seed_refs[seed.id] = ray.put(seed.model_dump_json())
                on_start(spec.attempt_id)
                running[
                    remote.remote(seed_refs[seed.id], spec.model_dump_json(), resolved_json, config_json, provenance)
                ] = item

        top_up()
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                seed, spec = running.pop(ref)
                try:
                    status, payload = ray.get(ref)
                    if status == "arm":
                        yield ArmResult(OriginalArm.model_validate_json(payload))
                    else:
                        yield AttemptResult(
                            status,
                            (
                                Trajectory.model_validate_json(payload)
                                if status == "gold"
                                else Rejection.model_validate_json(payload)
                            ),
                        )
                except Exception as exc:
                    yield _crashed(spec, seed, exc, provenance)
            top_up()
    finally:
        if started_here:
            ray.shutdown()
