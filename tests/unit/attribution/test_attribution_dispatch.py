"""The pure parts of running attribution sessions at scale: the progress line, the shared in-flight loop,
the call store's whole-line appends, and a thread run through :func:`dispatch` with a baseline."""

from __future__ import annotations

import json
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from failforge.attribution import summarise
from failforge.attribution._calls import CallStore
from failforge.attribution._run import AttributeConfig, run_attribution
from failforge.cli._app import ProgressLine
from failforge.errors import ConfigError
from failforge.jobs import drive
from failforge.plugins import importers
from failforge.trajectory import Step

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "attribution"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_progress_line_counts_this_runs_rate_and_the_time_left() -> None:
    clock = Clock()
    line = ProgressLine(total=1000, every=10.0, clock=clock)
    clock.now += 20.0
    # 400 were done before this run; 50 now in 20 s: 2.5/s, 550 left -> 220 s
    assert line.update(400, 50, "failed 0") == "450/1000 · 2.50/s · ETA 3m40s · failed 0"
    assert line.due()  # 20 s since the start, every 10 s
    clock.now += 5.0
    line.update(400, 60)
    assert not line.due()
    clock.now += 1.0
    line.update(400, 600)
    assert line.due()  # the last one is always printed


def test_drive_keeps_n_in_flight_and_turns_a_failed_job_into_its_crash() -> None:
    started: list[str] = []

    def submit(job: str) -> Future[str]:
        future: Future[str] = Future()
        if job == "bad":
            future.set_exception(RuntimeError("boom"))
        else:
            future.set_result(job.upper())
        return future

    out = list(
        drive(
            ["a", "bad", "c"],
            submit,
            2,
            str,
            started.append,
            lambda: False,
            lambda job, exc: f"{job}:{type(exc).__name__}",
        )
    )
    assert sorted(out) == ["A", "C", "bad:RuntimeError"] and started == ["a", "bad", "c"]


def test_drive_resubmits_a_job_whose_worker_died_once() -> None:
    tries: dict[str, int] = {}

    def submit(job: str) -> Future[str]:
        tries[job] = tries.get(job, 0) + 1
        future: Future[str] = Future()
        future.set_exception(BrokenProcessPool("dead")) if tries[job] == 1 else future.set_result(job)
        return future

    def resubmit(job: str, exc: BaseException) -> Future[str] | None:
        return submit(job) if isinstance(exc, BrokenProcessPool) else None

    assert list(drive(["x"], submit, 1, str, lambda _a: None, lambda: False, lambda j, e: "crashed", resubmit)) == [
        "x"
    ] and tries == {"x": 2}


def test_the_call_store_appends_whole_lines(tmp_path: Path) -> None:
    store = CallStore(tmp_path / "calls.jsonl")
    for i in range(3):
        store.append(
            "m::r1", Step(index=i, kind="agent", agent="judge", role="assistant", content="x" * 70_000)
        )  # past any pipe buffer
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"]["index"] for line in lines] == [0, 1, 2]
    assert [s.index for s in CallStore.load(tmp_path / "calls.jsonl")["m::r1"]] == [0, 1, 2]


def test_a_baseline_run_is_the_same_in_one_thread_and_in_a_pool(tmp_path: Path) -> None:
    records, _ = summarise(importers.get("whowhen")(FIXTURES / "who_and_when" / "Algorithm-Generated"))
    one = run_attribution(records, AttributeConfig(method="random", seed=3), tmp_path / "one")
    many = run_attribution(records, AttributeConfig(method="random", seed=3, concurrency=3), tmp_path / "many")
    assert one.predicted == many.predicted == len(records)
    first = sorted((tmp_path / "one" / "predictions.jsonl").read_text().splitlines())
    second = sorted((tmp_path / "many" / "predictions.jsonl").read_text().splitlines())
    strip = [json.dumps({k: v for k, v in json.loads(line).items() if k != "seconds"}) for line in first]
    assert strip == [json.dumps({k: v for k, v in json.loads(line).items() if k != "seconds"}) for line in second]


def test_a_likelihood_method_refuses_worker_processes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--executor thread"):
        run_attribution([], AttributeConfig(method="incremental", executor="process"), tmp_path / "x")
