"""What a kind of job tells the executors: how to run one here, and how a worker process or a Ray task runs one.

The executors (:mod:`failforge.jobs._executors`) know nothing of attempts or sessions; a campaign and an
attribution run each build one :class:`JobRunner` and hand it, with their jobs, to the executor their config
names. A worker process or a Ray worker receives only plain data and two module-level functions (picklable):
``open_worker`` makes the worker's own open things (model clients, a method) from the run's ``context`` once,
``run_in_worker`` runs one job with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

J = TypeVar("J")
R = TypeVar("R")

#: Where a worker runs: a process of this run's pool (it lives exactly as long as the run), or a Ray worker
#: (which may outlive the run, in a cluster the caller started).
WorkerKind = Literal["process", "ray"]
#: ``shared(key, make)``: the value to send for data many jobs share (a seed), made once per key; the process
#: executor sends the value itself, the Ray executor a reference to one copy in its object store.
Shared = Callable[[str, Callable[[], Any]], Any]


def _nothing(_state: Any) -> None:
    return None


def _no_close() -> None:
    return None


def _whole(job: Any, _shared: Shared) -> tuple[Any, ...]:
    return (job,)


@dataclass(frozen=True)
class JobRunner(Generic[J, R]):
    """One kind of job, as every executor runs it (thread, process or Ray); results go back to the driver."""

    #: The job's id (the ledger's attempt id): what ``on_start`` is told.
    key: Callable[[J], str]
    #: A job whose worker failed (raised past the job's own handling, or a process that died twice under it):
    #: its failed result, so nothing is lost.
    crashed: Callable[[J, BaseException], R]
    #: Runs one job in this process (the thread executor), with the driver's own open things.
    here: Callable[[J], R]
    #: Module-level: a worker's own open things from :attr:`context`, once per worker process (once per run in a
    #: Ray worker), told which kind of worker it is in.
    open_worker: Callable[[Any, WorkerKind], Any]
    #: Module-level: ``run_in_worker(state, *args(job))`` runs one job in a worker with what ``open_worker`` made.
    run_in_worker: Callable[..., R]
    #: Plain data every worker opens its own things from (model endpoints, config): sent once per worker.
    context: Any = None
    #: A job as plain arguments for :attr:`run_in_worker` (called in the driver each time a job is sent,
    #: a job sent again after its worker died included).
    args: Callable[[J, Shared], tuple[Any, ...]] = _whole
    #: Module-level: closes what ``open_worker`` made (a Ray worker's, when it makes room for another run's).
    close_worker: Callable[[Any], None] = _nothing
    #: Runs in the driver when the thread executor is done (closes the driver's open things).
    close_here: Callable[[], None] = _no_close
    #: Whether the thread executor waits for the jobs in flight when the driver stops early (a session adding
    #: calls to a file the next driver reads) or abandons them (an attempt the driver has put back in the queue).
    wait_in_flight: bool = False
