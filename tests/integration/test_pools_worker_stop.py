"""A process-executor worker told to stop (SIGTERM from an interrupted driver) ends, whatever it is doing.

An idle worker blocks reading its work queue; the signal turns into SystemExit there and it leaves.
A worker inside an attempt that swallows the SystemExit (a broad ``except BaseException``, a stuck
call) still leaves, by ``os._exit`` once the grace period is over. Real processes and real signals
(an integration test only because importing the worker module takes seconds).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

pytestmark = pytest.mark.timeout(60)

_CHILD = textwrap.dedent("""
    import os, signal, sys
    import failforge.jobs._workers as executors
    executors._WORKER_STOP_GRACE_S = float(sys.argv[2])
    signal.signal(signal.SIGTERM, executors._worker_stop)
    read, write = os.pipe()
    print("ready", flush=True)
    if sys.argv[1] == "idle":
        os.read(read, 1)  # as a worker waiting for work: SystemExit is raised here
    else:
        while True:  # as an attempt that swallows the SystemExit and goes on
            try:
                os.read(read, 1)
            except BaseException:
                print("swallowed", flush=True)
    """)


def _start(mode: str, grace: float) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", _CHILD, mode, str(grace)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    return child


def test_an_idle_worker_leaves_on_sigterm() -> None:
    child = _start("idle", grace=30.0)
    child.terminate()
    assert child.wait(timeout=20) == 128 + 15


def test_a_worker_that_swallows_the_exit_still_leaves_after_the_grace_period() -> None:
    child = _start("swallow", grace=0.5)
    child.terminate()
    code = child.wait(timeout=20)
    # It went on after swallowing the exit (a swallowed SystemExit alone never ends it): the grace timer did.
    assert child.stdout is not None and "swallowed" in child.stdout.read()
    assert code == 128 + 15


def test_a_second_sigterm_does_not_cut_the_unwinding_short() -> None:
    child = _start("swallow", grace=1.0)
    child.terminate()
    time.sleep(0.2)
    child.terminate()  # ignored once the first one is being handled
    assert child.wait(timeout=20) == 128 + 15
