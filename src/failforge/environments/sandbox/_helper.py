"""The sandbox server: workspace walker and operation runner, standard library only.

Both backends run this file's *source* as PID 1 of the sandbox (a container, or the local backend's
bubblewrap namespace): ``python3 -I -S -c <source> --serve <lifetime>``, talking JSON lines over its
stdin/stdout (:mod:`._served` is the other end). One program for both means a workspace listing, a
file operation and an error message mean the same thing everywhere. Each operation (exec, write,
read, list) ends with a fresh listing, so a tool call and the fingerprint after it cost one round
trip, not a ``docker exec`` each (about 170 ms here).

Every file operation runs here, as the sandbox's own uid, and walks its path one component at a time
from a directory descriptor with ``O_NOFOLLOW | O_DIRECTORY``: a link anywhere in a path is refused,
and a directory swapped for a link mid-operation is never followed, so there is no check-then-use
window for a concurrent rename to exploit.

Why PID 1: the kernel delivers no signal to a namespace's init from inside the namespace unless init
handles it, so ``kill -9 -1`` or ``pkill python3`` in a command cannot kill the server; it also makes
itself non-dumpable, so a command (same uid) cannot open ``/proc/1/fd`` or ptrace it, and it reaps the
orphans every command leaves. A command's stdin/stdout/stderr are memory files (memfd), so filling
``/tmp`` cannot break the server's I/O. When failforge goes away its channel closes; the server sees
EOF, even while a command runs, kills the command and exits, and the sandbox disappears with it.

It must stay runnable by a bare Debian ``python3`` (no third-party modules, no failforge imports).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import resource
import signal
import stat
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it is used: see _op_exec
    import subprocess

#: Entry kinds of a listing: file, directory, symbolic link (target recorded, never followed), other.
KIND_FILE, KIND_DIR, KIND_LINK, KIND_OTHER = "f", "d", "l", "o"


def excluded(name: str, exclude: list[str] | tuple[str, ...]) -> bool:
    """True when one path component matches a declared exclude pattern (``__pycache__``, ``*.pyc``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude)


#: Flags of every directory opened on the way down: a link or a non-directory is refused, never followed.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _hash_at(dir_fd: int, name: str) -> tuple[int, str]:
    fd = os.open(
        name,
        os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0),
        dir_fd=dir_fd,
    )
    try:
        digest = hashlib.sha256()
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
        return size, digest.hexdigest()
    finally:
        os.close(fd)


def open_dir_at(root_fd: int, rel_dir: str) -> int:
    """A new descriptor of directory ``rel_dir`` under ``root_fd``, opened one component at a time.

    Each step is ``openat(parent, name, O_DIRECTORY | O_NOFOLLOW)``, so a component that is (or is
    swapped for) a symbolic link fails with ELOOP/ENOTDIR instead of being followed: there is no
    window between a check and a use for a concurrent rename to exploit.
    """
    fd = os.dup(root_fd)
    for part in [p for p in rel_dir.split("/") if p]:
        try:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nxt
    return fd


def list_workspace(root: str, exclude: list[str] | tuple[str, ...], max_entries: int = 5000) -> dict:
    """Every entry under ``root`` as ``[kind, relative path, size, sha256]``, sorted by path.

    Symbolic links are recorded by their target text and never followed; excluded names are skipped
    with everything below them. Past ``max_entries`` the walk stops and says so (``overflow``), so a
    command that makes a million files cannot make fingerprinting unbounded. Every directory is opened
    from its parent's descriptor without following links (:func:`open_dir_at`), so renaming a directory
    to a link mid-walk cannot lead the walk out of the workspace.
    """
    entries: list[list] = []
    overflow = False
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                dir_fd = open_dir_at(root_fd, rel_dir)
            except OSError as exc:
                entries.append([KIND_OTHER, rel_dir or ".", 0, "unreadable:" + type(exc).__name__])
                continue
            try:
                try:
                    names = sorted(os.listdir(dir_fd))
                except OSError as exc:
                    entries.append([KIND_OTHER, rel_dir or ".", 0, "unreadable:" + type(exc).__name__])
                    continue
                for name in names:
                    if excluded(name, exclude):
                        continue
                    if len(entries) >= max_entries:
                        overflow = True
                        break
                    rel = f"{rel_dir}/{name}" if rel_dir else name
                    try:
                        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISLNK(st.st_mode):
                        try:
                            target = os.readlink(name, dir_fd=dir_fd)
                        except OSError:
                            continue
                        entries.append(
                            [
                                KIND_LINK,
                                rel,
                                len(target),
                                hashlib.sha256(target.encode("utf-8", "surrogateescape")).hexdigest(),
                            ]
                        )
                    elif stat.S_ISDIR(st.st_mode):
                        entries.append([KIND_DIR, rel, 0, ""])
                        stack.append(rel)
                    elif stat.S_ISREG(st.st_mode):
                        try:
                            size, sha = _hash_at(dir_fd, name)
                        except OSError as exc:
                            size, sha = st.st_size, "unreadable:" + type(exc).__name__
                        entries.append([KIND_FILE, rel, size, sha])
                    else:
                        entries.append([KIND_OTHER, rel, 0, "mode:" + oct(stat.S_IFMT(st.st_mode))])
            finally:
                os.close(dir_fd)
            if overflow:
                break
    finally:
        os.close(root_fd)
    entries.sort(key=lambda e: e[1])
    return {"entries": entries, "overflow": overflow}


# --------------------------------------------------------------------------------------------------
# The server: PID 1 of the sandbox (a container's, or the local backend's bubblewrap namespace).


class FailforgeGone(Exception):
    """Failforge closed the channel (it exited or died): stop the command, end the sandbox."""


#: Request bytes read while a command ran (failforge waits for each reply, so normally none).
_PENDING: list[bytes] = []


def _child_setup(limits: dict):
    """Runs in the forked command before exec: rlimits, and first in line for the OOM killer (not PID 1)."""

    def apply() -> None:
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        for name, value in limits.items():
            which = getattr(resource, name, None)
            if which is not None and value is not None:
                try:
                    resource.setrlimit(which, (int(value), int(value)))
                except (ValueError, OSError):
                    pass

    return apply


def _reap_zombies() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


#: Task states of a thread that will never run again: zombie, dead.
_DEAD_STATES = (b"Z", b"X")
#: Seconds the cleanup keeps killing and reaping before it gives up (and says what is left).
KILL_PATIENCE = 2.0


def _task_state(path: str) -> bytes | None:
    """The state letter in a ``stat`` file (the field after the parenthesised command name), None when it is gone."""
    try:
        with open(path, "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None


def _alive(pid: int) -> bool:
    """True while any thread of process ``pid`` can still run.

    Not the leader's state: a process whose main thread ended while another thread runs reads ``Z``
    in ``/proc/PID/stat`` and is alive all the same (its other thread goes on writing files). Each
    task in ``/proc/PID/task`` is asked instead.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_task_state(f"/proc/{pid}/task/{tid}/stat") not in (None, *_DEAD_STATES) for tid in tids)


def _others(spare: tuple[int, ...] = ()) -> list[int]:
    """Every process of the sandbox but this server (and ``spare``), alive or not yet reaped."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in (me, *spare)]


def _kill_strays(spare: tuple[int, ...] = ()) -> list[int]:
    """Kill every process in the sandbox but this server (and ``spare``), whatever its state, and reap them; what is
    left.

    A command may escape its process group (``setsid``, double fork); left alive it would outlive the
    command and could change the workspace behind the sandbox's back, between two tool calls or into
    the next run. A process is killed while any of its threads can run (:func:`_alive`), so one whose
    main thread exited is not taken for a zombie. Orphans are re-parented to PID 1 (this server), so
    reaping them here also frees their pids-cgroup slots. Returns the pids still there after
    :data:`KILL_PATIENCE` seconds (a process the server may not kill, a zombie it cannot reap):
    a sandbox with any is not reused.
    """
    deadline = time.monotonic() + KILL_PATIENCE
    while True:
        _reap_zombies()
        others = _others(spare)
        if not others:
            return []
        refused = 0
        for pid in others:
            if not _alive(pid):
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except PermissionError:
                refused += 1
            except OSError:
                pass
        if time.monotonic() > deadline or (refused and refused == sum(1 for pid in others if _alive(pid))):
            _reap_zombies()
            return _others(spare)
        time.sleep(0.005)


def _io_file(name: str, io_dir: str | None) -> int:
    """An anonymous in-memory file (``memfd``) for a command's stdin/stdout/stderr.

    It lives in no filesystem, so a command that fills ``/tmp`` (or any mount) cannot break the
    server's own I/O, and there is no name for a command to find, replace or link. Where memfd is
    missing (very old kernels), an unnamed temporary file in ``io_dir``.
    """
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create(f"failforge-{name}", getattr(os, "MFD_CLOEXEC", 1))
        except OSError:
            pass
    import tempfile

    return os.dup(tempfile.TemporaryFile(dir=io_dir or None).fileno())


def _read_back(fd: int, cap: int) -> tuple[str, int]:
    """What the command wrote, read from the descriptor the server made (never by a name)."""
    size = os.fstat(fd).st_size
    os.lseek(fd, 0, os.SEEK_SET)
    data = b""
    while len(data) < cap:
        chunk = os.read(fd, cap - len(data))
        if not chunk:
            break
        data += chunk
    return base64.b64encode(data).decode("ascii"), size


def _wait(proc: subprocess.Popen, timeout: float, watch_fd: int | None) -> tuple[int | None, bool]:
    """Wait for the command to end, at most ``timeout`` seconds, watching the channel meanwhile.

    Returns ``(exit code, timed_out)``; raises :class:`FailforgeGone` when the channel reaches EOF,
    so a command never outlives failforge by more than this loop's reaction time.
    """
    import select

    deadline = time.monotonic() + timeout
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None
    try:
        while True:
            code = proc.poll()
            if code is not None:
                return code, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True
            fds = [fd for fd in (watch_fd, pidfd) if fd is not None]
            ready = select.select(fds, [], [], remaining if pidfd is not None else min(remaining, 0.02))[0]
            if watch_fd is not None and watch_fd in ready:
                chunk = os.read(watch_fd, 1 << 20)
                if not chunk:
                    raise FailforgeGone()
                _PENDING.append(chunk)
                watch_fd = None  # readable again only when more arrives; the pidfd (or polling) ends the wait
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _op_exec(req: dict, watch_fd: int | None = None) -> dict:
    import subprocess  # here, not at the top: a sandbox that only lists and closes never pays for it

    cap = int(req["output_limit"])
    started = time.monotonic()
    io_dir = req.get("io_dir")
    fds = [_io_file(name, io_dir) for name in ("stdin", "stdout", "stderr")]
    try:
        os.write(fds[0], base64.b64decode(req.get("stdin_b64") or ""))
        os.lseek(fds[0], 0, os.SEEK_SET)
        proc = subprocess.Popen(
            req["argv"],
            cwd=req["cwd"],
            env=req["env"],
            stdin=fds[0],
            stdout=fds[1],
            stderr=fds[2],
            start_new_session=True,
            preexec_fn=_child_setup(req.get("rlimits") or {}),  # noqa: PLW1509 - the server is single-threaded
        )
        try:
            code, timed_out = _wait(proc, float(req["timeout"]), watch_fd)
        except FailforgeGone:
            _kill_strays()
            raise
        if code is None:  # timed out
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            code = proc.wait()
        # Every process the command started ends with it: state carries over between commands only
        # through files (and the one session process, which is not the command's).
        _kill_strays(_session_pids())
        seconds = time.monotonic() - started
        out_b64, out_size = _read_back(fds[1], cap)
        err_b64, err_size = _read_back(fds[2], cap)
    finally:
        for fd in fds:
            os.close(fd)
    return {
        "exit_code": code if code >= 0 else 128 - code,
        "stdout_b64": out_b64,
        "stderr_b64": err_b64,
        "stdout_size": out_size,
        "stderr_size": err_size,
        "timed_out": timed_out,
        "seconds": seconds,
    }


# -- the session: one long-lived process per sandbox, spoken to in lines --------------------------------------------
#
# A stateful interpreter keeps its variables in one live process for the whole run instead of starting a fresh one
# (and importing its libraries again) for every step. The session is that process: started by ``session_start``
# with the same cwd, environment and limits as a command, sent one request line at a time by ``session_send``, which
# waits for one reply line on the process's stdout, and stopped by ``session_stop``, a reset, the server's end, or a
# timeout (then killed, as a command is). Processes the session starts are killed after each send, as a command's
# are after it ends; the session itself is spared. Its stderr is a memory file, like a command's.

#: The live session: {"proc": Popen, "stderr": memfd}; at most one per sandbox.
_SESSION: dict = {}


def _session_pids() -> tuple[int, ...]:
    proc = _SESSION.get("proc")
    return (proc.pid,) if proc is not None and proc.poll() is None else ()


def _session_end() -> int | None:
    """Kill the session's process group, reap it, close its pipes; its exit code as a shell gives it (None: none)."""
    proc = _SESSION.pop("proc", None)
    stderr_fd = _SESSION.pop("stderr", None)
    if proc is not None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=KILL_PATIENCE)
        except Exception:  # noqa: BLE001 - reaped by _reap_zombies already, or unkillable: reset refuses it
            pass
        for pipe in (proc.stdin, proc.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass
    if stderr_fd is not None:
        os.close(stderr_fd)
    code = None if proc is None else proc.returncode
    return None if code is None else (code if code >= 0 else 128 - code)


def _op_session_start(req: dict) -> dict:
    import subprocess

    _session_end()
    stderr_fd = _io_file("session-stderr", req.get("io_dir"))
    try:
        proc = subprocess.Popen(
            req["argv"],
            cwd=req["cwd"],
            env=req["env"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_fd,
            start_new_session=True,
            preexec_fn=_child_setup(req.get("rlimits") or {}),  # noqa: PLW1509 - the server is single-threaded
        )
    except BaseException:
        os.close(stderr_fd)
        raise
    _SESSION.update(proc=proc, stderr=stderr_fd)
    return {"pid": proc.pid}


def _op_session_send(req: dict, watch_fd: int | None = None) -> dict:
    """Write one request line to the session and wait for one reply line, at most ``timeout`` seconds.

    The reply is ``{"line_b64", "ended", "timed_out", "stderr_b64", "exit_code", "idle"}``: ``ended`` when the
    session is gone (it exited, or was killed on timeout), with what it wrote to stderr during this send; ``idle``
    when it was gone before this send (the line was not delivered). A later send needs a new ``session_start``.
    """
    import select

    proc = _SESSION.get("proc")
    cap = int(req["output_limit"])
    if proc is None or proc.poll() is not None:  # it ended between two sends (or never started)
        code = _session_end()
        return {"line_b64": "", "ended": True, "timed_out": False, "stderr_b64": "", "exit_code": code, "idle": True}
    data = base64.b64decode(req.get("data_b64") or "")
    if not data.endswith(b"\n"):
        data += b"\n"
    stderr_fd = _SESSION.get("stderr")
    if stderr_fd is not None:  # what the session writes to stderr is kept per send (the file offset is shared)
        os.ftruncate(stderr_fd, 0)
        os.lseek(stderr_fd, 0, os.SEEK_SET)
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    os.set_blocking(in_fd, False)
    deadline = time.monotonic() + float(req["timeout"])
    buffer, timed_out, ended = b"", False, False
    try:
        while b"\n" not in buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            readers = [out_fd] + ([watch_fd] if watch_fd is not None else [])
            ready_r, ready_w, _ = select.select(readers, [in_fd] if data else [], [], min(remaining, 1.0))
            if in_fd in ready_w and data:
                try:
                    data = data[os.write(in_fd, data[: 1 << 16]) :]
                except BrokenPipeError:
                    data, ended = b"", True
            if watch_fd is not None and watch_fd in ready_r:
                chunk = os.read(watch_fd, 1 << 20)
                if not chunk:
                    raise FailforgeGone()
                _PENDING.append(chunk)
                watch_fd = None
            if out_fd in ready_r:
                chunk = os.read(out_fd, 1 << 20)
                if not chunk:
                    ended = True
                    break
                buffer += chunk
                if len(buffer) > 4 * cap:
                    ended = True  # a reply past any reasonable size: the session is not speaking its protocol
                    break
    except FailforgeGone:
        _session_end()
        _kill_strays()
        raise
    line = buffer.split(b"\n", 1)[0] if b"\n" in buffer else b""
    stderr_tail, code = "", None
    if timed_out or ended or not line:
        if stderr_fd is not None:
            stderr_tail, _ = _read_back(stderr_fd, cap)
        code = _session_end()
        ended = True
    # Processes the session started end with the step, as a command's do with the command.
    _kill_strays(_session_pids())
    return {
        "line_b64": base64.b64encode(line).decode("ascii"),
        "ended": ended,
        "timed_out": timed_out,
        "stderr_b64": stderr_tail,
        "exit_code": code,
        "idle": False,
    }


def _op_session_stop(req: dict) -> dict:
    _session_end()
    _kill_strays()
    return {}


def _link_refusal(rel: str) -> PermissionError:
    return PermissionError(
        f"path {rel!r} goes through a symbolic link; the sandbox does not follow links from the host side"
    )


def _parent_at(root: str, rel: str, create: bool) -> tuple[int, str]:
    """(descriptor of the parent directory of ``rel``, last component), walked without following links.

    With ``create``, missing directories on the way are made (0755). A component that is a link is
    refused with PermissionError, whatever it points to; nothing is resolved by path afterwards.
    """
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise PermissionError(f"path {rel!r} leaves the workspace")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                if _is_link_at(fd, part):
                    raise _link_refusal(rel) from None
                raise
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def _is_link_at(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_leaf(dir_fd: int, name: str, flags: int, rel: str, mode: int = 0o644) -> int:
    try:
        return os.open(name, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd)
    except OSError:
        if _is_link_at(dir_fd, name):
            raise _link_refusal(rel) from None
        raise


def _op_write(req: dict) -> dict:
    dir_fd, name = _parent_at(req["root"], req["path"], create=True)
    try:
        fd = _open_leaf(dir_fd, name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, req["path"])
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64decode(req["content_b64"]))
    return {}


def _op_read(req: dict) -> dict:
    dir_fd, name = _parent_at(req["root"], req["path"], create=False)
    try:
        fd = _open_leaf(dir_fd, name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0), req["path"])
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(int(req["limit"]) + 1)
    return {"content_b64": base64.b64encode(data).decode("ascii")}


def _table_rows(path: str) -> int:
    """Rows of a /proc table (its header line not counted); 0 when it does not exist here."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return max(0, len([line for line in handle.read().splitlines() if line.strip()]) - 1)
    except OSError:
        return 0


def _leftovers() -> dict:
    """Kernel objects of the sandbox's namespaces that outlive the processes that made them.

    System V IPC objects and POSIX message queues stay until removed, and their ids go on counting
    even then; a socket lingers in TIME_WAIT after a connection closes, and a bind to its port fails
    while it does. None of that can be returned to a fresh sandbox's state, so a sandbox holding
    any of it is not reused.
    """
    found = {kind: _table_rows(f"/proc/sysvipc/{kind}") for kind in ("shm", "sem", "msg")}
    try:
        found["mqueue"] = len(os.listdir("/dev/mqueue"))
    except OSError:
        found["mqueue"] = 0
    for table in ("tcp", "tcp6", "udp", "udp6", "raw", "raw6", "unix"):
        found[f"net:{table}"] = _table_rows(f"/proc/net/{table}")
    return found


#: Set by a reset: the server left the workspace (so it could be unmounted) and goes back before its next operation.
_RETURN_TO: list[str] = []


def _op_reset(req: dict) -> dict:
    """This side of making a used sandbox equal to a fresh one (failforge does the rest from the host, see ``_reuse``).

    Kill every process but this server, whatever state it reads as, and say what is left: processes
    (any but the server: one it may not kill, a zombie it cannot reap) and the kernel objects that
    outlive processes. Failforge does not reuse a sandbox that holds any. Then leave the writable
    mounts so failforge can replace each with a new, empty file system; the server goes back to the
    workspace, where a fresh server starts, before its next operation.
    """
    _session_end()
    left = _kill_strays()
    leftovers = {"processes": len(left), **_leftovers()}
    _RETURN_TO[:] = [os.getcwd()]
    os.chdir("/")
    return {"leftovers": leftovers}


OPS = {
    "exec": _op_exec,
    "write": _op_write,
    "read": _op_read,
    "list": lambda req: {},
    "reset": _op_reset,
    "session_start": _op_session_start,
    "session_stop": _op_session_stop,
}


def handle(req: dict, watch_fd: int | None = None) -> dict:
    """One operation, then a fresh listing of the workspace. Errors are replies, never a dead server."""
    reply: dict = {"ok": True}
    try:
        if _RETURN_TO and req["op"] != "reset":
            os.chdir(_RETURN_TO.pop())
        if req["op"] == "exec":
            reply.update(_op_exec(req, watch_fd))
        elif req["op"] == "session_send":
            reply.update(_op_session_send(req, watch_fd))
        else:
            reply.update(OPS[req["op"]](req))
    except FailforgeGone:
        raise
    except Exception as exc:  # noqa: BLE001 - the server must outlive any one request
        reply = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}
    if req.get("list", True):
        try:
            reply["listing"] = list_workspace(req["root"], req["exclude"], int(req["max_entries"]))
        except Exception as exc:  # noqa: BLE001
            reply = {"ok": False, "error_type": type(exc).__name__, "error": f"listing the workspace failed: {exc}"}
    return reply


def _harden() -> None:
    """Non-dumpable (no /proc/1/fd, no ptrace by the same uid); SIGINT back to default, which PID 1 ignores;
    a fixed umask, so file modes do not depend on whoever started failforge."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.umask(0o022)


def serve(lifetime: float) -> int:
    """Answer JSON-line requests on stdin until EOF or the lifetime is over."""
    import select

    _harden()
    deadline = time.monotonic() + lifetime
    buffer = b""
    out = sys.stdout.buffer
    while True:
        if _PENDING:
            buffer += b"".join(_PENDING)
            _PENDING.clear()
        if b"\n" not in buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return 0
            ready, _, _ = select.select([0], [], [], min(remaining, 30.0))
            if not ready:
                _reap_zombies()
                continue
            chunk = os.read(0, 1 << 20)
            if not chunk:
                return 0
            buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError as exc:
                reply = {"ok": False, "error_type": "ValueError", "error": f"bad request line: {exc}"}
            else:
                try:
                    reply = handle(request, watch_fd=0)
                except FailforgeGone:
                    return 0
            out.write(json.dumps(reply).encode("utf-8") + b"\n")
            out.flush()
        _reap_zombies()


if __name__ == "__main__":  # pragma: no cover - runs inside the sandbox
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        sys.exit(serve(float(sys.argv[2])))
    sys.exit("usage: python3 _helper.py --serve LIFETIME_SECONDS")
