"""Where attribution sessions run: a thread pool in the driver, worker processes, or Ray tasks.

One session is one (method, record) conversation (:func:`run_session`). Every executor only computes
and yields ``(attempt, Prediction | error)`` back to the driver, which alone writes predictions.jsonl,
failed.jsonl and the ledger. The one file a worker writes is calls.jsonl, because a judge call must be
recorded (fsync) before its reply is used, wherever the session runs (:class:`~failforge.attribution._calls.CallStore`
appends under an flock). The executors are the campaign's (:mod:`failforge.jobs`, given the :class:`JobRunner`
built in :func:`dispatch`): the bounded in-flight loop, a new pool when a worker dies, workers that leave when the
driver is SIGKILLed, SIGTERM to the workers when the driver is interrupted.

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
from failforge.jobs import JobRunner, Shared, WorkerKind
from failforge.llm import Mechanism, ModelEndpoint, Responder
from failforge.plugins import executors
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

    ``worker`` is the driver's own (its open upstream serves the thread executor); worker processes and Ray
    tasks receive its :class:`SessionEnv` and each opens its own from the endpoint. The executors are the
    campaign's (:mod:`failforge.jobs`; ``thread`` is the ``local`` executor)."""
    if executor not in EXECUTORS:
        raise ConfigError(f"unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")
    env = worker.env
    if executor != "thread" and env.calls is not None and worker.method.kind == "judge" and env.endpoint is None:
        raise ConfigError(
            f"--executor {executor} needs the judge endpoint (--base-url and --model) so each worker opens its own"
            " client"
        )
    sent: set[str] = set()

    def args(job: Job, _shared: Shared) -> Job:
        # A session sent again after its worker died may have recorded live calls before the worker died: it must
        # replay them, not ask them again (the driver's list is from the start of the run).
        if job[0] in sent and env.calls is not None:
            job = (job[0], job[1], CallStore.load(env.calls).get(job[0], []))
        sent.add(job[0])
        return job

    runner: JobRunner[Job, tuple[str, Result]] = JobRunner(
        key=_key,
        crashed=_crashed,
        here=lambda job: (job[0], run_session(worker, *job)),
        open_worker=_open_worker,
        run_in_worker=_run_in_worker,
        context=env,
        args=args,
        close_worker=_close_worker,
        # wait for the sessions in flight: the folder (and its lock) is released only after their last call
        wait_in_flight=True,
    )
    run: Callable[..., Generator[tuple[str, Result], None, None]] = executors.get(executor)
    # a session run has no circuit breaker: every record is attempted
    return run(runner, jobs, workers, on_start, lambda: False, address=ray_address)


def _open_worker(env: SessionEnv, where: WorkerKind) -> tuple[Worker, WorkerKind]:
    """A worker's method, judge client and call store. A worker process holds the workers lock for its whole
    life; a Ray worker, which may outlive the run in a caller's cluster, for each session only
    (:func:`_run_in_worker`): a later driver of the folder waits for a session still adding calls, never for an
    idle worker."""
    if where == "process" and env.calls is not None:
        _hold_workers_lock(env.calls.parent)
    return Worker.opened(env), where


def _run_in_worker(
    opened: tuple[Worker, WorkerKind], attempt: str, record: LabelledFailure, recorded: list[Step]
) -> tuple[str, Result]:
    worker, where = opened
    calls = worker.env.calls
    fd = _take_workers_lock(calls.parent) if where == "ray" and calls is not None else None
    try:
        return attempt, run_session(worker, attempt, record, recorded)
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases its flock


def _close_worker(opened: tuple[Worker, WorkerKind]) -> None:
    opened[0].close()


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
