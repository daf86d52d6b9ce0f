"""Where attempts run: a bounded thread pool in this process (default), worker processes, or Ray tasks.

Every executor only computes; results flow back to the driver, which alone appends to the output
files and the ledger, so executors never race on a file. Attempt functions receive plain data
(seed, spec, endpoints, config) and open their own HTTP clients, so the same function runs in a
thread or in a Ray worker on another machine. Each worker keeps the campaign's warm environments
(``[pools]``: sandboxes reset between attempts) for its own attempts, and every executor closes
them when it finishes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from failforge.campaign._arms import ArmResult, ArmSpec, OriginalArm, parse_job, run_original_arm
from failforge.campaign._attempt import AttemptResult, Rejection, error_kind, run_attempt
from failforge.campaign._config import CampaignConfig
from failforge.campaign._inject import InjectionJob, run_injection_job
from failforge.campaign._models import Models, ResolvedModels
from failforge.environments.sandbox import close_pooled_sandboxes, sandbox_pool
from failforge.errors import ConfigError, InfrastructureError
from failforge.injection import AttemptSpec
from failforge.plugins import executors
from failforge.trajectory import Trajectory

#: A job: an attempt, an injection job ([plan.injections]), or the original arm of a point (run before that point's attempts, shared by them).
Job = AttemptSpec | ArmSpec | InjectionJob
Work = tuple[Trajectory, Job]
JobResult = AttemptResult | ArmResult
OnStart = Callable[[str], None]
#: Asked before each new attempt starts; True stops feeding the executor (attempts in flight finish).
ShouldStop = Callable[[], bool]
#: Given an attempt whose worker failed under it and the error, a new future for it, or None to record it failed.
Resubmit = Callable[[Work, BaseException], "Future[JobResult] | None"]


def attempt_in_pools(seed: Trajectory, spec: Job, models: Models, config: CampaignConfig, provenance: dict[str, Any]) -> JobResult:
    """:func:`run_attempt` (or an original arm) with this worker's warm environments sized as the campaign file says."""
    with sandbox_pool(config.pools.sandboxes):
        if isinstance(spec, ArmSpec):
            return ArmResult(run_original_arm(seed, spec, models, config))
        if not isinstance(spec, AttemptSpec):  # an environment-side injection, a refusal or a compliance job
            return run_injection_job(seed, spec, models, config, provenance)
        return run_attempt(seed, spec, models, config, provenance)


def _crashed(spec: Job, seed: Trajectory, exc: BaseException, provenance: dict[str, Any]) -> AttemptResult:
    """A worker died or raised past run_attempt's own handling: failed, with the error, never lost.

    A dead worker process is the machine's failure, not the seed's: infrastructure, retried on the next run.
    """
    if isinstance(exc, BrokenProcessPool):
        exc = InfrastructureError(f"the worker process running this attempt died twice ({exc})")
    return AttemptResult(
        "failed",
        Rejection(
            attempt_id=spec.attempt_id, seed_id=seed.id, step=spec.step, mode=spec.mode, sample=spec.sample,
            status="failed", stage="continuation", reasons=[f"{type(exc).__name__}: {exc}"],
            error={"type": type(exc).__name__, "message": str(exc)}, error_kind=error_kind(exc), provenance=provenance,
        ),
    )


def _drive(
    work: Sequence[Work],
    submit: Callable[[Work], Future[JobResult]],
    concurrency: int,
    provenance: dict[str, Any],
    on_start: OnStart,
    should_stop: ShouldStop,
    resubmit: Resubmit | None = None,
) -> Iterator[JobResult]:
    """Keep ``concurrency`` attempts in flight and yield each result as it completes (the local and the
    process executors differ only in where ``submit`` runs an attempt, and in what ``resubmit`` does
    when the worker under an attempt fails rather than the attempt)."""
    queue = iter(work)
    running: dict[Future[JobResult], Work] = {}

    def top_up() -> None:
        while len(running) < concurrency and not should_stop():
            item = next(queue, None)
            if item is None:
                return
            on_start(item[1].attempt_id)
            running[submit(item)] = item

    top_up()
    while running:
        finished, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in finished:
            item = running.pop(future)
            try:
                yield future.result()
            except Exception as exc:
                again = resubmit(item, exc) if resubmit is not None else None
                if again is not None:
                    running[again] = item
                else:
                    yield _crashed(item[1], item[0], exc, provenance)
        top_up()


@executors.register("local", description="a bounded thread pool in this process")
def run_local(
    work: Sequence[Work], resolved: ResolvedModels, config: CampaignConfig, provenance: dict[str, Any], on_start: OnStart, should_stop: ShouldStop
) -> Iterator[JobResult]:
    models = Models(resolved)
    pool = ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="failforge-attempt")
    try:
        yield from _drive(work, lambda item: pool.submit(attempt_in_pools, item[0], item[1], models, config, provenance), config.concurrency, provenance, on_start, should_stop)
    finally:
        # On a normal end nothing is running; when the driver stops early (Ctrl-C, the circuit breaker)
        # the attempts in flight are abandoned, not waited for: the driver has put them back in the queue.
        pool.shutdown(wait=False, cancel_futures=True)
        models.close()
        close_pooled_sandboxes()


#: The worker process's open model clients, made once per process by _process_init (a process pool
#: worker is a fresh interpreter; opening clients per attempt would cost a connection each time).
_WORKER_MODELS: Models | None = None


#: Seconds a worker told to stop (SIGTERM) has to unwind its attempt and close its environments.
_WORKER_STOP_GRACE_S = 20.0
#: Set in a worker once it has been told to stop: the attempt it was running ends it on the way out.
_STOPPING = False


def _process_init(resolved_json: str, driver_pid: int | None = None) -> None:
    """Once per worker process: its model clients; Ctrl-C left to the driver; SIGTERM ends it cleanly; its
    warm environments closed at its end; it leaves when the driver is gone (:func:`_watch_driver`).

    A terminal's Ctrl-C reaches the whole process group. A worker that took it would die, break
    the pool, and turn the attempts in flight into failures; ignored here, the driver alone stops
    the campaign and puts them back in the queue, as with the thread pool. An interrupted driver
    then leaves at once (``os._exit``: threads may be inside abandoned attempts), without the
    stop messages a process pool sends its idle workers, and a worker holds both ends of its own
    work queue: it would wait for work forever, and keep the forkserver alive with it. So the
    driver sends its workers SIGTERM (:func:`_stop_workers`), which ends a worker as an exception
    (its attempt's environments closed on the way out) and, whatever the attempt does with it,
    by ``os._exit`` after a grace period. Worker processes end without running ``atexit``; a
    multiprocessing finaliser closes their pooled sandboxes instead.
    """
    import multiprocessing.util

    global _WORKER_MODELS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_stop)
    _WORKER_MODELS = Models(ResolvedModels.model_validate_json(resolved_json))
    multiprocessing.util.Finalize(None, close_pooled_sandboxes, exitpriority=10)
    if driver_pid is not None:
        _watch_driver(driver_pid)


#: Seconds between two looks at the driver where the kernel cannot tell a worker it is gone (no pidfd).
_DRIVER_POLL_S = 0.5


def _watch_driver(driver_pid: int) -> None:
    """End this worker as SIGTERM would (its attempt unwound, its environments closed) once the driver is gone.

    A SIGKILLed driver sends nothing: a worker is the forkserver's child, not the driver's (so neither
    ``getppid`` nor ``PR_SET_PDEATHSIG`` says the driver died), and it holds both ends of its own work
    queue and the forkserver's and resource tracker's pipes, so it would wait for work forever and keep
    both of those alive with it (measured: all four processes still there minutes later). A pidfd of the
    driver becomes readable the moment it exits, whoever its parent is; where there is none, the
    driver's pid is polled.
    """
    import select
    import threading
    import time

    try:
        pidfd: int | None = os.pidfd_open(driver_pid)
    except ProcessLookupError:  # gone already
        os.kill(os.getpid(), signal.SIGTERM)
        return
    except (AttributeError, OSError):
        pidfd = None

    def watch() -> None:
        if pidfd is not None:
            select.select([pidfd], [], [])
        else:
            while _alive(driver_pid):
                time.sleep(_DRIVER_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="failforge-driver-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _worker_stop(signum: int, frame: object) -> None:
    import threading

    global _STOPPING
    _STOPPING = True
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once is enough; a second one must not cut the unwinding short
    deadline = threading.Timer(_WORKER_STOP_GRACE_S, _exit_now, args=(128 + signum,))
    deadline.daemon = True
    deadline.start()
    raise SystemExit(128 + signum)


def _exit_now(code: int) -> None:
    """The grace period is over (the attempt swallowed the SystemExit, or is stuck): close the idle pools, leave."""
    with contextlib.suppress(Exception):
        close_pooled_sandboxes()
    os._exit(code)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM to the pool's live worker processes (their pids, taken from the pool before it forgets them)."""
    processes = dict(getattr(pool, "_processes", None) or {})
    for process in processes.values():
        if process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                process.terminate()


@functools.lru_cache(maxsize=64)
def _seed(seed_json: str) -> Trajectory:
    """A seed parsed once per worker (a campaign makes many attempts per seed; the JSON is the same text)."""
    return Trajectory.model_validate_json(seed_json)


def _process_attempt(seed_json: str, spec_json: str, config_json: str, provenance: dict[str, Any]) -> JobResult:
    from failforge.campaign._config import CampaignConfig as _Config

    assert _WORKER_MODELS is not None, "process worker used before its initializer ran"
    try:
        # Shared between this worker's attempts as the thread pool shares seeds between threads: attempts only read them.
        return attempt_in_pools(_seed(seed_json), parse_job(spec_json), _WORKER_MODELS, _Config.model_validate_json(config_json), provenance)
    finally:
        # Told to stop during the attempt: the pool's worker loop would take the SystemExit for the attempt's
        # result and wait for more work; leave now that the attempt has unwound (its environments closed).
        if _STOPPING:
            _exit_now(128 + signal.SIGTERM)


@executors.register("process", description="a pool of worker processes, for CPU-bound environments (no GIL between attempts)")
def run_processes(
    work: Sequence[Work], resolved: ResolvedModels, config: CampaignConfig, provenance: dict[str, Any], on_start: OnStart, should_stop: ShouldStop
) -> Iterator[JobResult]:
    """The same attempt function in ``concurrency`` worker processes (forkserver: forking a threaded
    driver is unsafe). Workers inherit the environment, PYTHONHASHSEED included; only the driver writes."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")

    def new_pool() -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=config.concurrency, mp_context=context, initializer=_process_init, initargs=(resolved.model_dump_json(), os.getpid()),
        )

    pools = [new_pool()]
    config_json = config.model_dump_json()
    seed_json: dict[str, str] = {}
    broken_under: Counter[str] = Counter()

    def submit(item: Work) -> Future[JobResult]:
        seed, spec = item
        if seed.id not in seed_json:
            seed_json[seed.id] = seed.model_dump_json()
        try:
            return pools[-1].submit(_process_attempt, seed_json[seed.id], spec.model_dump_json(), config_json, provenance)
        except BrokenProcessPool:  # broken by an attempt that has not been collected yet: a new pool takes over
            pools.append(new_pool())
            return pools[-1].submit(_process_attempt, seed_json[seed.id], spec.model_dump_json(), config_json, provenance)

    def resubmit(item: Work, exc: BaseException) -> Future[JobResult] | None:
        """A worker process died (killed, out of memory, a crash in native code): every attempt in flight
        in that pool fails with it, though only one was running in the dead worker. Each is run again in
        a new pool; one that was in flight at two deaths is taken for the cause and recorded failed, as
        an infrastructure failure (retried on the next run, like a crashed browser)."""
        if not isinstance(exc, BrokenProcessPool):
            return None
        attempt_id = item[1].attempt_id
        broken_under[attempt_id] += 1
        if broken_under[attempt_id] >= 2:
            return None
        return submit(item)  # into a new pool when this one is broken

    try:
        yield from _drive(work, submit, config.concurrency, provenance, on_start, should_stop, resubmit)
    except BaseException:  # interrupted (KeyboardInterrupt, or the consumer closed us): the driver may leave at once
        for pool in pools:
            _stop_workers(pool)
        raise
    finally:
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)


def _ray_attempt(seed_json: str, spec_json: str, resolved_json: str, config_json: str, provenance: dict[str, Any]) -> tuple[str, str]:
    """Body of the Ray task: rebuild everything from plain JSON, run, return JSON."""
    from failforge.campaign._config import CampaignConfig as _Config

    models = Models(ResolvedModels.model_validate_json(resolved_json))
    try:
        result = attempt_in_pools(
            Trajectory.model_validate_json(seed_json), parse_job(spec_json), models, _Config.model_validate_json(config_json), provenance
        )
    finally:
        models.close()
    return result.status, result.record.model_dump_json()  # the status says which record: gold, rejected, failed or arm


@executors.register("ray", requires=("ray",), description="Ray tasks (a local Ray instance, or ray_address for a cluster)")
def run_ray(
    work: Sequence[Work], resolved: ResolvedModels, config: CampaignConfig, provenance: dict[str, Any], on_start: OnStart, should_stop: ShouldStop
) -> Iterator[JobResult]:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("the Ray executor needs Ray: pip install 'failforge[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        env_vars = {k: os.environ[k] for k in ("PYTHONHASHSEED",) if k in os.environ}
        cpus: dict[str, Any] = {} if config.ray_address else {"num_cpus": max(config.concurrency, os.cpu_count() or 1)}
        ray.init(
            address=config.ray_address, include_dashboard=False, log_to_driver=False, configure_logging=False,
            runtime_env={"env_vars": env_vars} if env_vars else None,
            **cpus,
        )
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
                running[remote.remote(seed_refs[seed.id], spec.model_dump_json(), resolved_json, config_json, provenance)] = item

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
                        yield AttemptResult(status, Trajectory.model_validate_json(payload) if status == "gold" else Rejection.model_validate_json(payload))
                except Exception as exc:
                    yield _crashed(spec, seed, exc, provenance)
            top_up()
    finally:
        if started_here:
            ray.shutdown()

