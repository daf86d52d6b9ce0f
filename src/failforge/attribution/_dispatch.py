"""Where attribution sessions run: a thread pool in the driver, worker processes, or Ray tasks.

One session is one (method, record) conversation (:func:`run_session`). Every executor only computes
and yields ``(attempt, Prediction | error)`` back to the driver, which alone writes predictions.jsonl,
failed.jsonl and the ledger. The one file a worker writes is calls.jsonl, because a judge call must be
recorded (fsync) before its reply is used, wherever the session runs (:class:`~failforge.attribution._calls.CallStore`
appends under an flock). The process and Ray executors reuse the campaign's worker machinery
(:mod:`failforge.jobs`): the bounded in-flight loop, a new pool when a worker dies, workers
that leave when the driver is SIGKILLed, SIGTERM to the workers when the driver is interrupted.

A worker of a killed driver may still be finishing a call when the run is restarted; it holds a shared
``flock`` on ``.workers.lock`` (a process worker for its whole life; a Ray worker, which may outlive the run in
a caller's cluster, for each session), and a new driver takes that lock exclusively before it
reads the recording (:func:`wait_for_old_workers`), so it never replays a session that an old worker is
still adding a call to.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from failforge.attribution._calls import CallStore
from failforge.attribution._judge import JudgeSession
from failforge.attribution._methods import DatasetFacts, MethodContext, methods
from failforge.attribution._predictions import Prediction
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure
from failforge.errors import ConfigError, FailforgeError, InfrastructureError
from failforge.jobs import drive, drive_processes, init_worker, leave_if_stopping, process_pool, start_ray
from failforge.llm import Mechanism, ModelEndpoint, Responder
from failforge.trajectory import Step

Executor = Literal["thread", "process", "ray"]
EXECUTORS: tuple[Executor, ...] = ("thread", "process", "ray")
WORKERS_LOCK = ".workers.lock"
#: A session's result: its prediction, or the error that ended it (type, message, the error's own fields).
Result = Prediction | dict[str, Any]
#: One session to run: its attempt id, its record, the calls already recorded for it.
Job = tuple[str, LabelledFailure, list[Step]]


@dataclass(frozen=True)
class SessionEnv:
    """What every session of a run needs, as plain data a worker process or a Ray task can receive."""

    method: str
    key: str
    prompt: PromptConfig
    seed: int
    judge_model: str
    max_tokens: int
    facts: DatasetFacts
    #: calls.jsonl to record live calls in; None when every call comes from a recording.
    calls: Path | None
    #: the judge endpoint a worker opens its own client to; None without a live judge.
    endpoint: ModelEndpoint | None = None
    #: how the judge is asked for a structured answer (probed once per endpoint, or the recording's).
    structured: Mechanism = "none"


@dataclass
class Worker:
    """A process's open things for :class:`SessionEnv`: the method, its judge client, the call store."""

    env: SessionEnv
    upstream: Responder | None = None
    scorer: Any = None
    method: Any = field(init=False)
    store: CallStore | None = field(init=False)

    def __post_init__(self) -> None:
        self.method = methods.get(self.env.method)()
        self.store = CallStore(self.env.calls) if self.env.calls is not None else None

    @classmethod
    def opened(cls, env: SessionEnv) -> Worker:
        return cls(
            env, upstream=env.endpoint.upstream() if env.endpoint is not None and env.calls is not None else None
        )

    def close(self) -> None:
        close = getattr(self.upstream, "close", None)
        if callable(close):
            close()


def error_of(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    to_dict = getattr(exc, "to_dict", None)
    if callable(to_dict):
        out.update(to_dict())
    return out


def run_session(worker: Worker, attempt: str, record: LabelledFailure, recorded: Sequence[Step]) -> Result:
    """One session: the method's prediction with the session's cost, or the error that ended it (a
    FailforgeError: infrastructure, a drift, an exhausted recording). Other exceptions propagate: the
    executor records them as a crashed session."""
    env = worker.env
    t0 = time.perf_counter()
    judge = None
    if worker.method.kind == "judge":
        judge = JudgeSession(
            attempt,
            env.judge_model,
            upstream=worker.upstream,
            recorded=recorded,
            on_call=worker.store.append if worker.store is not None else None,
            max_tokens=env.max_tokens,
            seed=env.seed,
            structured=env.structured,
        )
    try:
        outcome = worker.method.predict(
            MethodContext(
                record=record, prompt=env.prompt, seed=env.seed, judge=judge, dataset=env.facts, scorer=worker.scorer
            )
        )
    except FailforgeError as exc:
        return error_of(exc)
    finally:
        if judge is not None:
            judge.close()
    return Prediction(
        attempt_id=attempt,
        record_id=record.id,
        method=env.key,
        agent=outcome.agent,
        step=outcome.step,
        mode=outcome.mode,
        step_text=outcome.step_text,
        description=outcome.description,
        reply=outcome.reply,
        replies=list(judge.replies) if judge else [],
        problems=outcome.problems,
        step_scores=outcome.step_scores,
        ranking=outcome.ranking,
        attack_chain=outcome.attack_chain,
        execution_chain=outcome.execution_chain,
        chain_threshold=outcome.chain_threshold,
        audit=outcome.audit,
        calls=judge.calls if judge else 0,
        live_calls=judge.live_calls if judge else 0,
        prompt_tokens=judge.prompt_tokens if judge else 0,
        completion_tokens=judge.completion_tokens if judge else 0,
        seconds=round(time.perf_counter() - t0, 3),
    )


def _crashed(job: Job, exc: BaseException) -> tuple[str, Result]:
    """A session whose worker died twice under it, or that raised past the method: failed, never lost.
    A dead worker process is the machine's failure, not the record's: infrastructure."""
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(exc, BrokenProcessPool):
        exc = InfrastructureError(f"the worker process running this session died twice ({exc})")
    return job[0], error_of(exc)


def _key(job: Job) -> str:
    return job[0]


def dispatch(
    executor: Executor,
    jobs: Sequence[Job],
    worker: Worker,
    workers: int,
    on_start: Callable[[str], None],
    *,
    ray_address: str | None = None,
) -> Generator[tuple[str, Result], None, None]:
    """Run ``jobs`` with ``executor`` (``workers`` sessions in flight), yielding each result as it completes.

    ``worker`` is the driver's own (its open upstream serves the thread pool); the process and Ray
    executors send its :class:`SessionEnv` and each worker opens its own from the endpoint."""
    stop = lambda: False  # noqa: E731 - a session run has no circuit breaker: every record is attempted
    if executor == "thread":
        if workers <= 1:
            for job in jobs:
                on_start(job[0])
                try:
                    yield job[0], run_session(worker, *job)
                except Exception as exc:
                    yield _crashed(job, exc)
            return
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="failforge-judge")
        try:
            yield from drive(
                jobs, lambda job: pool.submit(_tagged, worker, job), workers, _key, on_start, stop, _crashed
            )
        finally:
            # wait for the sessions in flight: the folder (and its lock) is released only after their last call
            pool.shutdown(wait=True, cancel_futures=True)
        return
    env = worker.env
    if env.calls is not None and worker.method.kind == "judge" and env.endpoint is None:
        raise ConfigError(
            f"--executor {executor} needs the judge endpoint (--base-url and --model) so each worker opens its own"
            " client"
        )
    if executor == "process":
        submitted: set[str] = set()

        def submit_to(pool: ProcessPoolExecutor, job: Job) -> Future[tuple[str, Result]]:
            # A session run again after its pool broke may have recorded live calls before the worker died:
            # it must replay them, not ask them again (the driver's list is from the start of the run).
            if job[0] in submitted and env.calls is not None:
                job = (job[0], job[1], CallStore.load(env.calls).get(job[0], []))
            submitted.add(job[0])
            return pool.submit(_process_session, *job)

        yield from drive_processes(
            jobs,
            lambda: process_pool(workers, _process_init, (env, os.getpid())),
            submit_to,
            workers,
            _key,
            on_start,
            stop,
            _crashed,
        )
        return
    if executor == "ray":
        ray, started_here = start_ray(ray_address, workers)
        remote = ray.remote(num_cpus=1, max_retries=0)(_ray_session)
        env_ref = ray.put(env)
        try:
            yield from drive(
                jobs, lambda job: remote.remote(env_ref, *job).future(), workers, _key, on_start, stop, _crashed
            )
        finally:
            if started_here:
                ray.shutdown()
        return
    raise ConfigError(f"unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")


def _tagged(worker: Worker, job: Job) -> tuple[str, Result]:
    return job[0], run_session(worker, *job)


#: The worker process's open env (method, judge client, call store), made once by _process_init.
_WORKER: Worker | None = None


def _process_init(env: SessionEnv, driver_pid: int) -> None:
    global _WORKER
    init_worker(driver_pid)
    if env.calls is not None:
        _hold_workers_lock(env.calls.parent)
    _WORKER = Worker.opened(env)


def _process_session(attempt: str, record: LabelledFailure, recorded: list[Step]) -> tuple[str, Result]:
    assert _WORKER is not None, "process worker used before its initializer ran"
    try:
        return attempt, run_session(_WORKER, attempt, record, recorded)
    finally:
        leave_if_stopping()


#: A Ray worker process's open envs, by run (a Ray worker serves many tasks; one judge client per run).
_RAY_WORKERS: dict[tuple[str, str, str, str], Worker] = {}


def _ray_session(env: SessionEnv, attempt: str, record: LabelledFailure, recorded: list[Step]) -> tuple[str, Result]:
    """A Ray worker may outlive the run (a cluster the caller started with its own ``ray.init()``), so it holds
    the workers lock for each session only, not for its life: a later driver of the folder waits for a session
    still adding calls, never for an idle worker."""
    run = (env.key, str(env.calls), env.judge_model, repr(env.endpoint))
    if run not in _RAY_WORKERS:
        _RAY_WORKERS[run] = Worker.opened(env)
    fd = _take_workers_lock(env.calls.parent) if env.calls is not None else None
    try:
        return attempt, run_session(_RAY_WORKERS[run], attempt, record, recorded)
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases its flock


def _take_workers_lock(folder: Path) -> int:
    """A shared lock on the run folder's workers lock; held while the returned descriptor is open."""
    fd = os.open(folder / WORKERS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def _hold_workers_lock(folder: Path) -> None:
    """A shared lock on the run folder's workers lock, held until this (worker) process ends (the fd is never
    closed)."""
    _take_workers_lock(folder)


def wait_for_old_workers(folder: Path, timeout: float = 60.0) -> None:
    """Wait until no worker of an earlier driver of this folder is alive (they leave within their stop grace
    once their driver is gone); a worker still there after ``timeout`` seconds is one line of error."""
    fd = os.open(folder / WORKERS_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(
                        f"{folder}: worker processes of an earlier run still hold {WORKERS_LOCK} after {timeout:.0f}s;"
                        " stop them and rerun"
                    ) from None
                time.sleep(0.1)
    finally:
        os.close(fd)
