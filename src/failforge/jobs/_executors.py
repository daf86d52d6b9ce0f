"""Where jobs run: a bounded thread pool in this process (default), worker processes, or Ray tasks.

The one executor layer of campaigns and attribution runs: each executor takes a
:class:`~failforge.jobs._runner.JobRunner` (how to run one job of that kind here or in a worker) and the jobs,
and yields each result as it completes. Every executor only computes; results flow back to the driver, which
alone appends to the output files and the ledger, so executors never race on a file. Workers receive plain data
and open their own things (HTTP clients, a method) once, so the same job runs in a thread, a worker process or a
Ray worker on another machine. A third-party executor registers in :data:`failforge.plugins.executors` with the
same signature.
"""

from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, TypeVar

from failforge.jobs._runner import JobRunner, WorkerKind
from failforge.jobs._workers import drive, drive_processes, init_worker, leave_if_stopping, process_pool, start_ray
from failforge.plugins import executors

J = TypeVar("J")
R = TypeVar("R")

OnStart = Callable[[str], None]
#: Asked before each new job starts; True stops feeding the executor (jobs in flight finish).
ShouldStop = Callable[[], bool]


@executors.register("local", aliases=("thread",), description="a bounded thread pool in this process")
def run_local(
    runner: JobRunner[J, R],
    jobs: Sequence[J],
    concurrency: int,
    on_start: OnStart,
    should_stop: ShouldStop,
    *,
    address: str | None = None,
) -> Generator[R, None, None]:
    """``runner.here`` on ``concurrency`` threads, with the driver's own open things."""
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="failforge-job")
    try:
        yield from drive(
            jobs,
            lambda job: pool.submit(runner.here, job),
            concurrency,
            runner.key,
            on_start,
            should_stop,
            runner.crashed,
        )
    finally:
        # On a normal end nothing is running. When the driver stops early (Ctrl-C, the circuit breaker) the jobs
        # in flight are abandoned (the driver has put them back in the queue) or, if the runner says so, awaited.
        pool.shutdown(wait=runner.wait_in_flight, cancel_futures=True)
        runner.close_here()


#: A worker process's open things (what ``open_worker`` made), made once by :func:`_process_init`
#: (a process pool worker is a fresh interpreter; opening clients per job would cost a connection each time).
_WORKER_STATE: Any = None


def _process_init(open_worker: Callable[[Any, WorkerKind], Any], context: Any, driver_pid: int) -> None:
    """Once per worker process: the shared worker set-up (:func:`failforge.jobs.init_worker`: signals, pooled
    sandboxes closed at exit, leaving when the driver is gone), then its own open things."""
    global _WORKER_STATE
    init_worker(driver_pid)
    _WORKER_STATE = open_worker(context, "process")


def _process_job(run_in_worker: Callable[..., Any], *args: Any) -> Any:
    try:
        return run_in_worker(_WORKER_STATE, *args)
    finally:
        leave_if_stopping()  # told to stop during the job: leave now that it has unwound (its environments closed)


@executors.register(
    "process", description="a pool of worker processes, for CPU-bound environments (no GIL between jobs)"
)
def run_processes(
    runner: JobRunner[J, R],
    jobs: Sequence[J],
    concurrency: int,
    on_start: OnStart,
    should_stop: ShouldStop,
    *,
    address: str | None = None,
) -> Generator[R, None, None]:
    """``runner.run_in_worker`` in ``concurrency`` worker processes (forkserver: forking a threaded driver is
    unsafe). Workers inherit the environment, PYTHONHASHSEED included; only the driver writes."""
    shared: dict[str, Any] = {}

    def share(key: str, make: Callable[[], Any]) -> Any:
        if key not in shared:
            shared[key] = make()
        return shared[key]

    def submit_to(pool: ProcessPoolExecutor, job: J) -> Future[R]:
        return pool.submit(_process_job, runner.run_in_worker, *runner.args(job, share))

    yield from drive_processes(
        jobs,
        lambda: process_pool(concurrency, _process_init, (runner.open_worker, runner.context, os.getpid())),
        submit_to,
        concurrency,
        runner.key,
        on_start,
        should_stop,
        runner.crashed,
    )


#: A Ray worker's open things, by run (a Ray worker serves many tasks, of later runs too when the caller's cluster
#: outlives the run): the newest few kept, an older one closed.
_RAY_STATES: OrderedDict[str, Any] = OrderedDict()
_RAY_RUNS_KEPT = 4


def _ray_job(
    open_worker: Callable[[Any, WorkerKind], Any],
    run_in_worker: Callable[..., Any],
    close_worker: Callable[[Any], None],
    run: str,
    context: Any,
    *args: Any,
) -> Any:
    """Body of a Ray task: this worker's open things for the run (opened by its first task), then the job."""
    if run not in _RAY_STATES:
        _RAY_STATES[run] = open_worker(context, "ray")
        while len(_RAY_STATES) > _RAY_RUNS_KEPT:
            close_worker(_RAY_STATES.popitem(last=False)[1])
    _RAY_STATES.move_to_end(run)
    return run_in_worker(_RAY_STATES[run], *args)


@executors.register(
    "ray", requires=("ray",), description="Ray tasks (a local Ray instance, or ray_address for a cluster)"
)
def run_ray(
    runner: JobRunner[J, R],
    jobs: Sequence[J],
    concurrency: int,
    on_start: OnStart,
    should_stop: ShouldStop,
    *,
    address: str | None = None,
) -> Generator[R, None, None]:
    """Ray tasks, ``concurrency`` in flight: a local Ray instance started here (and shut down at the end), the one
    this process already started, or the cluster at ``address``. Shared data goes to the object store once."""
    ray, started_here = start_ray(address, concurrency)
    remote = ray.remote(num_cpus=1, max_retries=0)(_ray_job)
    try:
        context = ray.put(runner.context)  # in memory only: the workers need the real endpoint
        run = uuid.uuid4().hex
        refs: dict[str, Any] = {}

        def share(key: str, make: Callable[[], Any]) -> Any:
            if key not in refs:
                refs[key] = ray.put(make())
            return refs[key]

        def submit(job: J) -> Future[R]:
            args = runner.args(job, share)
            return remote.remote(  # type: ignore[no-any-return]
                runner.open_worker, runner.run_in_worker, runner.close_worker, run, context, *args
            ).future()

        yield from drive(jobs, submit, concurrency, runner.key, on_start, should_stop, runner.crashed)
    finally:
        if started_here:
            ray.shutdown()
