"""Worker processes any driver can use: the bounded in-flight loop, process pools that survive a dead worker,
workers that leave when their driver is gone, and the Ray start-up.

Shared by the campaign's executors (:mod:`failforge.jobs._executors`) and the attribution runner's
(:mod:`failforge.attribution._dispatch`), so a session and an attempt are run, stopped and recovered the
same way. Nothing here knows what a job is: a caller gives how to submit one, its key (an attempt id),
and what a job whose worker failed becomes.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from failforge.environments.sandbox import close_pooled_sandboxes
from failforge.errors import ConfigError

W = TypeVar("W")
R = TypeVar("R")

#: Seconds a worker told to stop (SIGTERM) has to unwind its job and close its environments.
_WORKER_STOP_GRACE_S = 20.0
#: Set in a worker once it has been told to stop: the job it was running ends it on the way out.
_STOPPING = False
#: Seconds between two looks at the driver where the kernel cannot tell a worker it is gone (no pidfd).
_DRIVER_POLL_S = 0.5
#: Seconds a worker whose driver is gone has to unwind before it leaves regardless.
_ORPHAN_GRACE_S = 3.0


def drive(
    work: Sequence[W],
    submit: Callable[[W], Future[R]],
    concurrency: int,
    key: Callable[[W], str],
    on_start: Callable[[str], None],
    should_stop: Callable[[], bool],
    crashed: Callable[[W, BaseException], R],
    resubmit: Callable[[W, BaseException], Future[R] | None] | None = None,
) -> Iterator[R]:
    """Keep ``concurrency`` jobs in flight and yield each result as it completes (executors differ only in
    where ``submit`` runs a job, and in what ``resubmit`` does when the worker under a job fails rather
    than the job). A job whose future raises becomes ``crashed(job, error)``: failed, never lost."""
    queue = iter(work)
    running: dict[Future[R], W] = {}

    def top_up() -> None:
        while len(running) < concurrency and not should_stop():
            item = next(queue, None)
            if item is None:
                return
            on_start(key(item))
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
                    yield crashed(item, exc)
        top_up()


def drive_processes(
    work: Sequence[W],
    new_pool: Callable[[], ProcessPoolExecutor],
    submit_to: Callable[[ProcessPoolExecutor, W], Future[R]],
    concurrency: int,
    key: Callable[[W], str],
    on_start: Callable[[str], None],
    should_stop: Callable[[], bool],
    crashed: Callable[[W, BaseException], R],
) -> Iterator[R]:
    """:func:`drive` over worker processes. A worker process that dies (killed, out of memory, a crash in
    native code) breaks its pool: every job in flight there fails with it, though only one was running in
    the dead worker. Each is run again in a new pool; one that was in flight at two deaths is taken for
    the cause and becomes ``crashed`` (with :class:`BrokenProcessPool`). An interrupted driver (Ctrl-C,
    the consumer closing this generator) sends its workers SIGTERM before it leaves."""
    pools = [new_pool()]
    broken_under: Counter[str] = Counter()

    def submit(item: W) -> Future[R]:
        try:
            return submit_to(pools[-1], item)
        except BrokenProcessPool:  # broken by a job that has not been collected yet: a new pool takes over
            pools.append(new_pool())
            return submit_to(pools[-1], item)

    def resubmit(item: W, exc: BaseException) -> Future[R] | None:
        if not isinstance(exc, BrokenProcessPool):
            return None
        broken_under[key(item)] += 1
        if broken_under[key(item)] >= 2:
            return None
        return submit(item)  # into a new pool when this one is broken

    try:
        yield from drive(work, submit, concurrency, key, on_start, should_stop, crashed, resubmit)
    except BaseException:  # interrupted (KeyboardInterrupt, or the consumer closed us): the driver may leave at once
        for pool in pools:
            stop_workers(pool)
        raise
    finally:
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)


def process_pool(workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> ProcessPoolExecutor:
    """``workers`` forkserver processes (forking a threaded driver is unsafe). Workers inherit the
    environment, PYTHONHASHSEED included; ``initializer`` must call :func:`init_worker` with the driver's pid."""
    import multiprocessing

    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=initializer,
        initargs=initargs,
    )


def init_worker(driver_pid: int | None) -> None:
    """Once per worker process: Ctrl-C left to the driver; SIGTERM ends it cleanly; its warm environments
    closed at its end; it leaves when the driver is gone (:func:`_watch_driver`).

    A terminal's Ctrl-C reaches the whole process group. A worker that took it would die, break
    the pool, and turn the jobs in flight into failures; ignored here, the driver alone stops
    the run and puts them back in the queue, as with the thread pool. An interrupted driver
    then leaves at once (``os._exit``: threads may be inside abandoned jobs), without the
    stop messages a process pool sends its idle workers, and a worker holds both ends of its own
    work queue: it would wait for work forever, and keep the forkserver alive with it. So the
    driver sends its workers SIGTERM (:func:`stop_workers`), which ends a worker as an exception
    (its job's environments closed on the way out) and, whatever the job does with it,
    by ``os._exit`` after a grace period. Worker processes end without running ``atexit``; a
    multiprocessing finaliser closes their pooled sandboxes instead.
    """
    import multiprocessing.util

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_stop)
    multiprocessing.util.Finalize(None, close_pooled_sandboxes, exitpriority=10)
    if driver_pid is not None:
        _watch_driver(driver_pid)


def _watch_driver(driver_pid: int) -> None:
    """End this worker as SIGTERM would (its job unwound, its environments closed) once the driver is gone.

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
        # nobody waits for this worker's result: a job that swallows the SystemExit, or a main thread that
        # never runs the handler, must not keep it (and the resource tracker) alive for the stop grace
        time.sleep(_ORPHAN_GRACE_S)
        _exit_now(128 + signal.SIGTERM)

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
    """The grace period is over (the job swallowed the SystemExit, or is stuck): close the idle pools, leave."""
    with contextlib.suppress(Exception):
        close_pooled_sandboxes()
    os._exit(code)


def leave_if_stopping() -> None:
    """Call on the way out of every job a worker runs: told to stop during the job, the pool's worker loop
    would take the SystemExit for the job's result and wait for more work; leave now that it has unwound."""
    if _STOPPING:
        _exit_now(128 + signal.SIGTERM)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM to the pool's live worker processes (their pids, taken from the pool before it forgets them)."""
    processes = dict(getattr(pool, "_processes", None) or {})
    for process in processes.values():
        if process.is_alive():
            with contextlib.suppress(OSError, ValueError):
                process.terminate()


def start_ray(address: str | None, concurrency: int) -> tuple[Any, bool]:
    """Ray, initialised here unless it already is (a local instance with ``concurrency`` CPUs at least, or the
    cluster at ``address``); returns the module and whether this call started it (then the caller shuts it down)."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("the Ray executor needs Ray: pip install 'failforge[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        env_vars = {k: os.environ[k] for k in ("PYTHONHASHSEED",) if k in os.environ}
        cpus: dict[str, Any] = {} if address else {"num_cpus": max(concurrency, os.cpu_count() or 1)}
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env={"env_vars": env_vars} if env_vars else None,
            **cpus,
        )
    return ray, started_here
