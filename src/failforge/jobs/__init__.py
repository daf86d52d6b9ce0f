"""The job engine every long job runs on: campaigns (attempts and original arms) and attribution runs (sessions).

- ``Ledger`` (``ledger.sqlite``): every job's state, so a run resumes exactly once after any interruption; the driver
  appends a result line (fsynced) before it marks the job finished, and ``reconcile`` trusts the lines;
- ``FolderLock``: one driver per output folder;
- the worker machinery (``drive``, ``drive_processes``, ``process_pool``, ``init_worker``, ``start_ray``): the bounded
  in-flight loop, process pools that replace a dead worker, workers that leave when their driver is gone;
- the executors (``local`` alias ``thread``, ``process``, ``ray``, registered in :data:`failforge.plugins.executors`)
  that run any :class:`JobRunner` on that machinery: campaigns and attribution runs alike.

Nothing here knows what a job is: a caller's :class:`JobRunner` says how to run one (here, or in a worker from plain
data), its key, and what a job whose worker failed becomes.
"""

from failforge.jobs._ledger import Ledger, attempt_ids_in, drop_superseded_failures, repair_jsonl
from failforge.jobs._lock import LOCK_FILE, FolderLock
from failforge.jobs._runner import JobRunner, Shared, WorkerKind
from failforge.jobs._workers import (
    drive,
    drive_processes,
    init_worker,
    leave_if_stopping,
    process_pool,
    start_ray,
    stop_workers,
)

__all__ = [
    "LOCK_FILE",
    "FolderLock",
    "JobRunner",
    "Ledger",
    "attempt_ids_in",
    "drive",
    "drive_processes",
    "drop_superseded_failures",
    "init_worker",
    "leave_if_stopping",
    "process_pool",
    "Shared",
    "WorkerKind",
    "repair_jsonl",
    "start_ray",
    "stop_workers",
]
