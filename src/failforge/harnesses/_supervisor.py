"""The agent command's supervisor: a small process between failforge and the command, stdlib only.

Run as ``python _supervisor.py FAILFORGE_PID -- ARGV...`` (by path, so it starts without importing
failforge). It makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): every process the command
starts, a ``setsid`` double-forked daemon too, stays its descendant however it detaches, instead of
being re-parented to init. It then runs the command and ends every descendant, SIGTERM then SIGKILL
after :data:`GRACE` seconds, when any of these happens:

- the command exits (the supervisor then exits with the command's status: 128+N for a signal N);
- the supervisor is told to stop (SIGTERM, SIGINT, SIGHUP: failforge ending the run);
- failforge itself is gone, even SIGKILLed (its pid watched through a pidfd, and
  ``PR_SET_PDEATHSIG`` as a second line).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: Seconds between SIGTERM and SIGKILL for the descendants (less than the harness's own grace).
GRACE = 1.0
#: Exit status when the command could not be started.
NOT_STARTED = 127


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def descendants(root: int) -> list[int]:
    """Every live (non-zombie) process below ``root``, from /proc (parents before children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("latin-1")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) < 2 or fields[0] in ("Z", "X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _reap() -> list[tuple[int, int]]:
    """Collect every exited child (orphans re-parented here included): (pid, status) pairs."""
    done: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return done
        if pid == 0:
            return done
        done.append((pid, status))


def end_all(grace: float = GRACE) -> None:
    """SIGTERM every descendant, SIGKILL whatever is left after ``grace``; returns when none is left."""
    me = os.getpid()
    signalled: set[int] = set()
    end = time.monotonic() + grace
    sig = signal.SIGTERM
    while True:
        _reap()
        left = descendants(me)
        if not left:
            return
        if time.monotonic() >= end:
            sig = signal.SIGKILL
        for pid in left:
            if sig == signal.SIGKILL or pid not in signalled:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
                signalled.add(pid)
        time.sleep(0.02)


def _status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: _supervisor.py FAILFORGE_PID -- ARGV...", file=sys.stderr)
        return 2
    watched, command = int(argv[0]), argv[2:]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    with contextlib.suppress(OSError):
        _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    stop = False

    def on_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_stop)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the select below
    try:
        pidfd: int | None = os.pidfd_open(watched)
    except (OSError, AttributeError):  # failforge already gone, or no pidfd (then the parent pid is polled)
        pidfd = None
        if not _alive(watched):
            return NOT_STARTED
    try:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"failforge: agent command {command[0]!r} could not start: {exc.strerror or exc}", file=sys.stderr)
        return NOT_STARTED
    status: int | None = None
    watch = [wake_r] + ([pidfd] if pidfd is not None else [])
    while status is None and not stop:
        readable, _, _ = select.select(watch, [], [], 0.5)
        if wake_r in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 512)
        if (pidfd is not None and pidfd in readable) or (pidfd is None and not _alive(watched)):
            break  # failforge is gone: nothing may outlive it
        for pid, raw in _reap():
            if pid == child.pid:
                status = _status(raw)
                child.returncode = status  # reaped here, not by Popen
    end_all()
    return status if status is not None else 128 + signal.SIGTERM


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
