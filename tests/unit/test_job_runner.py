"""The one executor layer (failforge.jobs): any JobRunner on the thread executor, its name for both callers.

The process and Ray executors run the same runner in real worker processes and Ray workers: they are
tested in tests/integration (test_pools_process_executor.py, test_attribution_executors.py, test_campaign.py).
"""

from __future__ import annotations

import threading

from failforge.jobs import JobRunner
from failforge.plugins import executors


def _runner(closed: list[str], *, stop_after: int | None = None) -> JobRunner[int, str]:
    def here(job: int) -> str:
        if job == 3:
            raise RuntimeError("boom")
        return f"ran {job} on {threading.current_thread().name.split('_')[0]}"

    return JobRunner(
        key=lambda job: f"job-{job}",
        crashed=lambda job, exc: f"crashed {job}: {type(exc).__name__}: {exc}",
        here=here,
        open_worker=lambda context, where: None,
        run_in_worker=lambda state, job: "never here",
        close_here=lambda: closed.append("closed"),
    )


def test_the_thread_executor_runs_every_job_here_and_a_job_that_raises_becomes_its_crash() -> None:
    closed: list[str] = []
    started: list[str] = []
    results = list(executors.get("local")(_runner(closed), [1, 2, 3, 4], 2, started.append, lambda: False))
    assert sorted(results) == [
        "crashed 3: RuntimeError: boom",
        "ran 1 on failforge-job",
        "ran 2 on failforge-job",
        "ran 4 on failforge-job",
    ]
    assert started == ["job-1", "job-2", "job-3", "job-4"] and closed == ["closed"]


def test_should_stop_stops_feeding_and_the_runner_is_closed_all_the_same() -> None:
    closed: list[str] = []
    started: list[str] = []
    results = list(executors.get("local")(_runner(closed), [1, 2, 4, 5], 1, started.append, lambda: len(started) >= 2))
    assert len(results) == 2 and started == ["job-1", "job-2"] and closed == ["closed"]


def test_attributions_thread_is_the_campaigns_local_executor() -> None:
    assert executors.canonical("thread") == "local" and executors.get("thread") is executors.get("local")
    assert {"local", "process", "ray"} <= set(executors.names())
