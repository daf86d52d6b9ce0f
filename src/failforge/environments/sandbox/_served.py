"""The client side of the sandbox server (:mod:`._helper`), shared by both backends.

Each backend starts the same server as PID 1 of its sandbox (a container, or a bubblewrap namespace)
and talks to it in JSON lines; they differ only in how the bytes travel (the engine's attach stream,
or a pipe). Everything else lives here once: requests, replies, error mapping, the listing that comes
back with every operation, so a tool call and the fingerprint after it cost one round trip, and the
two backends cannot drift apart in what a fingerprint or an error message means.

All file operations run inside the sandbox, as the sandbox's own uid: failforge never opens a
workspace path with its own privileges, so no rename or link a command makes can turn a host-side
operation against the host.
"""

from __future__ import annotations

import abc
import base64
import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from failforge.environments._base import Fingerprint
from failforge.environments.sandbox._base import (
    EXCLUDE,
    WORKSPACE,
    ExecResult,
    Sandbox,
    SandboxLimits,
    SessionReply,
    WorkspaceListing,
    compose_fingerprint,
    workspace_os_error,
    workspace_relative,
)
from failforge.environments.sandbox._reuse import Namespaces, TmpfsMount, next_pid, reset_namespaces
from failforge.errors import InfrastructureError

MAX_LIST_ENTRIES = 5000
#: Seconds a reply may take beyond the command's own timeout before the server is presumed wedged.
ENGINE_GRACE = 30.0
#: The server's source, run as ``python3 -I -S -c <source> --serve <lifetime>`` inside every sandbox
#: (isolated mode, no ``site``: it needs the standard library only, and starts faster without it).
HELPER_SOURCE = Path(__file__).with_name("_helper.py").read_text(encoding="utf-8")


class ServedSandbox(Sandbox):
    """A sandbox whose operations are requests to the in-sandbox server; subclasses provide the transport."""

    limits: SandboxLimits
    _env: dict[str, str]

    def _init_channel(self) -> None:
        self._last: ExecResult | None = None
        self._snapshot: WorkspaceListing | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._opened_at = time.monotonic()
        #: Handles on the sandbox's namespaces and the PID a fresh sandbox's next process gets (prepare_reuse()).
        self._fresh: tuple[Namespaces, int] | None = None

    # -- transport (per backend) ----------------------------------------------------------------

    @abc.abstractmethod
    def _send(self, data: bytes, wait: float) -> None:
        """Write one request line to the server."""

    @abc.abstractmethod
    def _read_reply(self, wait: float) -> bytes:
        """One reply line from the server, within ``wait`` seconds (TimeoutError past it, EOFError when closed)."""

    @abc.abstractmethod
    def _state(self) -> str:
        """What became of the sandbox, for an infrastructure error message."""

    @abc.abstractmethod
    def _abandon(self) -> None:
        """Tear the sandbox down (after a failure, or on close)."""

    @property
    def _what(self) -> str:
        return f"{self.backend} sandbox"

    # -- reuse (per backend) --------------------------------------------------------------------

    @abc.abstractmethod
    def _host_pid(self) -> int:
        """Host pid of the sandbox's PID 1 (the server): the way into its namespaces."""

    @abc.abstractmethod
    def _fresh_mounts(self) -> tuple[TmpfsMount, ...]:
        """Every writable mount, as a fresh sandbox of this backend has it."""

    @abc.abstractmethod
    def _limit_events(self) -> dict[str, int]:
        """OOM kills, memory-limit hits and refused forks recorded by the sandbox's cgroup so far."""

    @abc.abstractmethod
    def alive(self) -> bool:
        """True while the sandbox runs (its server may still answer)."""

    def _forget_run(self) -> None:
        """Drop what the backend kept of the last run (e.g. the server's stderr tail for error messages)."""

    # -- the round trip -------------------------------------------------------------------------

    def _call(self, op: str, *, wait: float | None = None, **fields: Any) -> dict[str, Any]:
        """One request to the server and its reply; any transport failure is infrastructure."""
        if self._closed:
            raise InfrastructureError(f"the {self._what} was closed; open a new episode")
        request = {"op": op, "root": WORKSPACE, "exclude": list(EXCLUDE), "max_entries": MAX_LIST_ENTRIES, **fields}
        wait = wait if wait is not None else self.limits.command_timeout + ENGINE_GRACE
        try:
            self._send(json.dumps(request).encode("utf-8") + b"\n", wait)
            reply = json.loads(self._read_reply(wait))
        except (OSError, EOFError, ValueError) as exc:
            what = (
                "did not answer in time"
                if isinstance(exc, TimeoutError)
                else f"stopped answering ({type(exc).__name__}: {exc})"
            )
            state = self._state()
            self._abandon()
            raise InfrastructureError(f"{self._what} {what}; {state}") from exc
        if "listing" in reply:
            self._snapshot = WorkspaceListing.from_raw(reply["listing"])
        return reply

    def _raise_op_error(self, reply: dict[str, Any], path: str) -> None:
        """Re-raise the server's error as the same type, worded without any host detail."""
        if reply.get("ok"):
            return
        kind = str(reply.get("error_type", "OSError"))
        message = str(reply.get("error", "unknown error"))
        if kind == "PermissionError" and ("leaves the workspace" in message or "symbolic link" in message):
            raise PermissionError(message)
        error_type = {
            t.__name__: t for t in (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
        }.get(kind)
        if error_type is not None:
            raise workspace_os_error(error_type(message), path)
        if kind == "ValueError":
            raise ValueError(message)
        raise OSError(f"{message}: {path}")

    # -- Sandbox --------------------------------------------------------------------------------

    def exec(
        self, command: str | list[str], timeout: float | None = None, *, stdin: str | bytes | None = None
    ) -> ExecResult:
        limit = float(timeout if timeout is not None else self.limits.command_timeout)
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
        with self._lock:
            started = time.monotonic()
            # Past the command's own timeout plus a grace period the server is presumed wedged
            # (InfrastructureError), never waited on forever.
            reply = self._call(
                "exec",
                wait=limit + ENGINE_GRACE,
                argv=argv,
                cwd=WORKSPACE,
                env=self._env,
                io_dir="/tmp",
                stdin_b64=base64.b64encode(data).decode("ascii"),
                timeout=limit,
                rlimits=self.limits.rlimits(),
                output_limit=self.limits.output_limit,
            )
            if not reply.get("ok"):
                raise InfrastructureError(f"the sandbox server could not run the command: {reply.get('error')}")
            cap = self.limits.output_limit
            result = ExecResult(
                exit_code=int(reply["exit_code"]),
                stdout=base64.b64decode(reply["stdout_b64"]).decode("utf-8", errors="replace"),
                stderr=base64.b64decode(reply["stderr_b64"]).decode("utf-8", errors="replace"),
                timed_out=bool(reply["timed_out"]),
                truncated=max(int(reply["stdout_size"]), int(reply["stderr_size"])) > cap,
                seconds=round(time.monotonic() - started, 4),
            )
            self._last = result
            return result

    # -- the session ---------------------------------------------------------------------------

    supports_session = True

    def session_start(self, argv: list[str], *, rlimits: Mapping[str, int | None] | None = None) -> None:
        with self._lock:
            reply = self._call(
                "session_start",
                list=False,
                argv=list(argv),
                cwd=WORKSPACE,
                env=self._env,
                io_dir="/tmp",
                rlimits=self.limits.rlimits() if rlimits is None else dict(rlimits),
            )
        if not reply.get("ok"):
            raise InfrastructureError(f"the sandbox server could not start the session: {reply.get('error')}")

    def session_send(self, line: str, timeout: float | None = None) -> SessionReply:
        limit = float(timeout if timeout is not None else self.limits.command_timeout)
        with self._lock:
            started = time.monotonic()
            reply = self._call(
                "session_send",
                wait=limit + ENGINE_GRACE,
                data_b64=base64.b64encode(line.encode("utf-8")).decode("ascii"),
                timeout=limit,
                output_limit=self.limits.output_limit,
            )
        if not reply.get("ok"):
            raise InfrastructureError(f"the sandbox server could not reach the session: {reply.get('error')}")
        return SessionReply(
            line=base64.b64decode(reply["line_b64"]).decode("utf-8", errors="replace"),
            ended=bool(reply["ended"]),
            timed_out=bool(reply["timed_out"]),
            stderr=base64.b64decode(reply["stderr_b64"] or "").decode("utf-8", errors="replace"),
            exit_code=reply.get("exit_code"),
            idle=bool(reply.get("idle")),
            seconds=round(time.monotonic() - started, 4),
        )

    def session_stop(self) -> None:
        if self._closed:
            return
        with self._lock:
            self._call("session_stop", list=False)

    def read_file(self, path: str) -> bytes:
        rel = workspace_relative(path)
        with self._lock:
            reply = self._call("read", path=rel, limit=self.limits.output_limit)
        self._raise_op_error(reply, rel)
        return base64.b64decode(reply["content_b64"])

    def write_file(self, path: str, content: str | bytes) -> None:
        rel = workspace_relative(path)
        data = content.encode("utf-8") if isinstance(content, str) else content
        if len(data) > self.limits.file_size_mb * 1024 * 1024:
            raise ValueError(
                f"file is {len(data)} bytes, over the sandbox's file size limit of {self.limits.file_size_mb} MiB"
            )
        with self._lock:
            reply = self._call("write", path=rel, content_b64=base64.b64encode(data).decode("ascii"))
        self._raise_op_error(reply, rel)

    def listing(self) -> WorkspaceListing:
        """A fresh listing of the workspace (one round trip)."""
        with self._lock:
            reply = self._call("list")
            snapshot, self._snapshot = self._snapshot, None
        if snapshot is None:
            raise InfrastructureError(
                f"the {self._what} could not list its workspace: {reply.get('error_type')}: {reply.get('error')}"
            )
        return snapshot

    def fingerprint(self) -> Fingerprint:
        """The workspace as the operation that just ran left it, else a fresh listing.

        Every operation lists the workspace at its end, in the same round trip; the fingerprint
        right after it uses that listing once, and any later call lists afresh.
        """
        with self._lock:
            snapshot, self._snapshot = self._snapshot, None
        return compose_fingerprint(snapshot if snapshot is not None else self.listing(), self._last)

    @property
    def last_exec(self) -> ExecResult | None:
        return self._last

    def close(self) -> None:
        if self._closed:
            return
        self._abandon()

    # -- reuse ----------------------------------------------------------------------------------

    def prepare_reuse(self) -> None:
        """Note what this sandbox looks like fresh, so :meth:`reset` can return to it.

        Call right after opening, before any command: it reads the PID the first command would get.
        """
        if self._closed or self._fresh is not None:
            return
        namespaces = Namespaces(self._host_pid())
        try:
            self._fresh = (namespaces, next_pid(namespaces))
        except OSError:
            namespaces.close()
            raise

    def _release_namespaces(self) -> None:
        """Let go of the namespace handles (backends call this when they tear the sandbox down)."""
        fresh, self._fresh = self._fresh, None
        if fresh is not None:
            fresh[0].close()

    def reusable(self) -> bool:
        """Prepared for reuse, its server still running, and young enough that its lifetime will not run out during a
        run."""
        return (
            self._fresh is not None
            and not self._closed
            and self._fresh[0].server_running()
            and time.monotonic() - self._opened_at < self.limits.lifetime_seconds / 2
        )

    def reset(self) -> bool:
        """Make this sandbox equal to a freshly opened one; False when it cannot be (then close it).

        Everything a command could read is returned to the fresh state: no process but the server
        (each killed whatever its state reads as: a process whose main thread exited reads as a
        zombie while its other threads run), new empty writable file systems (so new files get the
        inode numbers a fresh one gives), the PID counter where a fresh sandbox has it, no last
        command. What cannot be returned is refused instead: a sandbox where any process besides the
        server is left after the kill, whose cgroup recorded an OOM kill, a memory-limit hit or a
        refused fork (counters docker commands can read), or that holds IPC objects or sockets (ids
        that go on counting, ports in TIME_WAIT), is not reset. One round trip to the server and one
        host-side ``nsenter``; the server goes back to the workspace before its next operation.
        """
        if not self.reusable() or any(self._limit_events().values()):
            return False
        assert self._fresh is not None
        namespaces, fresh_next = self._fresh
        with self._lock:
            reply = self._call("reset", list=False)
            if not reply.get("ok") or any((reply.get("leftovers") or {"unknown": 1}).values()):
                return False
            try:
                reset_namespaces(namespaces, self._fresh_mounts(), fresh_next)
            except OSError:
                return False
            # What the opening ``list`` left a fresh sandbox with: the listing of an empty workspace.
            self._snapshot = WorkspaceListing()
        self._last = None
        self._forget_run()
        return True
