"""Workspace walker and in-sandbox operation runner, standard library only.

This one file serves both backends, so a workspace listing means the same thing everywhere:

- the local backend imports :func:`list_workspace` and runs it on the host, after the command's
  process namespace is gone (so nothing in the sandbox can race the walk);
- the docker backend runs this file's *source* as the container's main process (PID 1):
  ``python3 -I -c <source> --serve <lifetime>``, talking JSON lines over the container's attached
  stdin/stdout. Each operation (exec, write, read, list) ends with a fresh listing, so a tool call and
  the fingerprint after it cost one round trip (well under a millisecond of transport), not a
  ``docker exec`` each (about 170 ms here).

Why PID 1: the kernel delivers no signal to a namespace's init from inside the namespace unless init
handles it, so ``kill -9 -1`` or ``pkill python3`` in a command cannot kill the server; it also makes
itself non-dumpable, so a command (same uid) cannot open ``/proc/1/fd`` or ptrace it, and it reaps the
orphans every command leaves. When failforge goes away its attach connection closes, stdin reaches
EOF, the server exits and the container (``auto_remove``) disappears.

It must stay importable by a bare Debian ``python3`` (no third-party modules, no failforge imports)
and must never follow a symbolic link out of the workspace.
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
import subprocess
import sys
import time

#: Entry kinds of a listing: file, directory, symbolic link (target recorded, never followed), other.
KIND_FILE, KIND_DIR, KIND_LINK, KIND_OTHER = "f", "d", "l", "o"


def excluded(name: str, exclude: list[str] | tuple[str, ...]) -> bool:
    """True when one path component matches a declared exclude pattern (``__pycache__``, ``*.pyc``)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in exclude)


def _hash_file(path: str) -> tuple[int, str]:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
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


def list_workspace(root: str, exclude: list[str] | tuple[str, ...], max_entries: int = 5000) -> dict:
    """Every entry under ``root`` as ``[kind, relative path, size, sha256]``, sorted by path.

    Symbolic links are recorded by their target text and never followed; excluded names are skipped
    with everything below them. Past ``max_entries`` the walk stops and says so (``overflow``), so a
    command that makes a million files cannot make fingerprinting unbounded.
    """
    entries: list[list] = []
    overflow = False
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else root
        try:
            names = sorted(os.listdir(abs_dir))
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
            full = os.path.join(abs_dir, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(full)
                entries.append([KIND_LINK, rel, len(target), hashlib.sha256(target.encode("utf-8", "surrogateescape")).hexdigest()])
            elif stat.S_ISDIR(st.st_mode):
                entries.append([KIND_DIR, rel, 0, ""])
                stack.append(rel)
            elif stat.S_ISREG(st.st_mode):
                try:
                    size, sha = _hash_file(full)
                except OSError as exc:
                    size, sha = st.st_size, "unreadable:" + type(exc).__name__
                entries.append([KIND_FILE, rel, size, sha])
            else:
                entries.append([KIND_OTHER, rel, 0, "mode:" + oct(stat.S_IFMT(st.st_mode))])
        if overflow:
            break
    entries.sort(key=lambda e: e[1])
    return {"entries": entries, "overflow": overflow}


# --------------------------------------------------------------------------------------------------
# The in-container server (docker backend). The local backend does the same things on the host.


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


def _kill_strays() -> None:
    """Kill every process in the container but this server, and reap them.

    A command may escape its process group (``setsid``, double fork); left alive it would outlive the
    command and could change the workspace behind the sandbox's back, between two tool calls. Orphans
    are re-parented to PID 1 (this server), so reaping them here also frees their pids-cgroup slots.
    """
    me = os.getpid()
    for _ in range(50):
        _reap_zombies()
        strays = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[-1].split()[0]
            except (OSError, IndexError):
                continue
            if state != b"Z":
                strays.append(int(name))
        if not strays:
            return
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _read_capped(handle, cap: int) -> tuple[str, int]:
    """Read back what the command wrote, from the descriptor the server opened (never by path again:
    the command may have replaced the name with a link meanwhile)."""
    size = os.fstat(handle.fileno()).st_size
    handle.seek(0)
    return base64.b64encode(handle.read(cap)).decode("ascii"), size


def _inside(root: str, rel: str) -> str:
    """Resolve ``rel`` under ``root``; refuse anything that leaves it (``..``, absolute, symlinks out)."""
    full = os.path.realpath(os.path.join(root, rel))
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        raise PermissionError(f"path {rel!r} leaves the workspace")
    return full


def _op_exec(req: dict) -> dict:
    import tempfile

    cap = int(req["output_limit"])
    started = time.monotonic()
    timed_out = False
    # Unnamed temporary files in the private /tmp: nothing for a command to find, replace or link.
    with tempfile.TemporaryFile(dir=req["io_dir"]) as fin, tempfile.TemporaryFile(dir=req["io_dir"]) as fout, tempfile.TemporaryFile(
        dir=req["io_dir"]
    ) as ferr:
        fin.write(base64.b64decode(req.get("stdin_b64") or ""))
        fin.flush()
        fin.seek(0)
        proc = subprocess.Popen(
            req["argv"],
            cwd=req["cwd"],
            env=req["env"],
            stdin=fin,
            stdout=fout,
            stderr=ferr,
            start_new_session=True,
            preexec_fn=_child_setup(req.get("rlimits") or {}),  # noqa: PLW1509 - the server is single-threaded
        )
        try:
            code = proc.wait(timeout=req["timeout"])
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            code = proc.wait()
        # Every process the command started ends with it, as in the local backend's PID namespace:
        # state carries over between commands only through files.
        _kill_strays()
        seconds = time.monotonic() - started
        out_b64, out_size = _read_capped(fout, cap)
        err_b64, err_size = _read_capped(ferr, cap)
    return {
        "exit_code": code if code >= 0 else 128 - code,
        "stdout_b64": out_b64,
        "stderr_b64": err_b64,
        "stdout_size": out_size,
        "stderr_size": err_size,
        "timed_out": timed_out,
        "seconds": seconds,
    }


def _op_write(req: dict) -> dict:
    root = os.path.realpath(req["root"])
    full = _inside(root, req["path"])
    os.makedirs(os.path.dirname(full), exist_ok=True)
    full = _inside(root, req["path"])
    fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64decode(req["content_b64"]))
    return {}


def _op_read(req: dict) -> dict:
    root = os.path.realpath(req["root"])
    full = _inside(root, req["path"])
    fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(int(req["limit"]) + 1)
    return {"content_b64": base64.b64encode(data).decode("ascii")}


OPS = {"exec": _op_exec, "write": _op_write, "read": _op_read, "list": lambda req: {}}


def handle(req: dict) -> dict:
    """One operation, then a fresh listing of the workspace. Errors are replies, never a dead server."""
    reply: dict = {"ok": True}
    try:
        reply.update(OPS[req["op"]](req))
    except Exception as exc:  # noqa: BLE001 - the server must outlive any one request
        reply = {"ok": False, "error_type": type(exc).__name__, "error": str(exc)}
    if req.get("list", True):
        try:
            reply["listing"] = list_workspace(req["root"], req["exclude"], int(req["max_entries"]))
        except Exception as exc:  # noqa: BLE001
            reply = {"ok": False, "error_type": type(exc).__name__, "error": f"listing the workspace failed: {exc}"}
    return reply


def _harden() -> None:
    """Non-dumpable (no /proc/1/fd, no ptrace by the same uid); SIGINT back to default, which PID 1 ignores."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve(lifetime: float) -> int:
    """Answer JSON-line requests on stdin until EOF or the lifetime is over."""
    import select

    _harden()
    deadline = time.monotonic() + lifetime
    buffer = b""
    out = sys.stdout.buffer
    while True:
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
                reply = handle(request)
            out.write(json.dumps(reply).encode("utf-8") + b"\n")
            out.flush()
        _reap_zombies()


if __name__ == "__main__":  # pragma: no cover - runs inside the container
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        sys.exit(serve(float(sys.argv[2])))
    sys.exit("usage: python3 _helper.py --serve LIFETIME_SECONDS")
