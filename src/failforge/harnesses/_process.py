"""An agent command run in a process group of its own, and stopped with everything it started.

The command runs under a small supervisor (:mod:`failforge.harnesses._supervisor`, started in a new
session, its own process group) that is a child subreaper: a process the command detaches with
``setsid`` and a double fork stays the supervisor's descendant, and the supervisor ends every
descendant when the command exits, when it is told to stop, and when failforge itself is gone (even
SIGKILLed: it watches failforge's pid). Stopping the command is SIGTERM to the group, a short grace,
then SIGKILL. :func:`group_alive` reads ``/proc`` to say whether any member of the group is still
running (a zombie waiting for its reaper is not running).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from failforge.errors import InfrastructureError

#: Seconds between SIGTERM and SIGKILL when a group is stopped (the supervisor's own grace is shorter).
GRACE = 2.0
#: The supervisor script, run by path (it imports nothing of failforge).
SUPERVISOR = Path(__file__).with_name("_supervisor.py")
#: The environment variable that marks every process of one command (see :func:`stop_group`).
MARK_VARIABLE = "FAILFORGE_AGENT_MARK"
_marks: dict[int, str] = {}


def spawn(
    command: list[str], *, env: dict[str, str], cwd: str | None, stdout: Path, stderr: Path
) -> subprocess.Popen[bytes]:
    """Start ``command`` in a new process group with its output going to files; a missing or
    unrunnable command is an :class:`InfrastructureError` naming it."""
    # -I -S: the supervisor is stdlib only, and the agent's PYTHONPATH is not its own
    supervised = [sys.executable, "-I", "-S", str(SUPERVISOR), str(os.getpid()), "--", *command]
    mark = os.urandom(12).hex()
    try:
        _check_runnable(command, env, cwd)
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            process = subprocess.Popen(
                supervised,
                env={**env, MARK_VARIABLE: mark},
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            _marks[process.pid] = mark
            return process
    except FileNotFoundError:
        raise InfrastructureError(f"agent command not found: {command[0]!r} (from {' '.join(command)!r})") from None
    except PermissionError:
        raise InfrastructureError(f"agent command is not executable: {command[0]!r}") from None
    except OSError as exc:
        raise InfrastructureError(f"agent command {command[0]!r} could not start: {exc.strerror or exc}") from None


def _check_runnable(command: list[str], env: dict[str, str], cwd: str | None) -> None:
    """The errors :func:`subprocess.Popen` would raise for the command itself, raised before the supervisor
    starts it."""
    program = command[0]
    if os.sep in program:
        path: str | None = program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
        if path is not None and not os.path.exists(path):
            raise FileNotFoundError(program)
    else:
        path = shutil.which(program, mode=os.F_OK, path=env.get("PATH", os.defpath))
        if path is None:
            raise FileNotFoundError(program)
    if path is not None and (os.path.isdir(path) or not os.access(path, os.X_OK)):
        raise PermissionError(program)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies excluded)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def marked(mark: str) -> list[int]:
    """Pids of the processes whose environment carries ``MARK_VARIABLE=mark`` (every process a command started
    inherits it, unless it clears its environment)."""
    needle = f"{MARK_VARIABLE}={mark}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(entry.path, "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def stop_group(process: subprocess.Popen[bytes], grace: float = GRACE) -> None:
    """Stop the command and every process of its group; returns once none of them runs. Then, as a second
    line behind the supervisor (which a hostile command could kill), every process still carrying the
    run's mark in its environment is killed too: a detached daemon whose supervisor is gone."""
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end and (process.poll() is None or group_alive(pgid)):
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
    end = time.monotonic() + 5
    while group_alive(pgid) and time.monotonic() < end:
        time.sleep(0.02)
    mark = _marks.pop(process.pid, None)
    for _ in range(50) if mark else ():
        left = marked(mark)  # type: ignore[arg-type]
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def last_line(path: Path, limit: int = 65536) -> str:
    """The last non-empty line of a (possibly long) output file, for a one-line error."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""


__all__ = ["GRACE", "MARK_VARIABLE", "group_alive", "last_line", "marked", "spawn", "stop_group"]
