"""The sandbox interface, its data, and the one fingerprint function both backends use.

A code sandbox is stateful: its state is the workspace (files) plus what the last command printed.
Replay re-executes every command live and compares that state with the recording, so the fingerprint
has to be (a) the same function at record and at replay time, (b) blind to what is declared volatile
(bytecode caches, the host path a local workspace happens to live at), and (c) split into parts, so a
:class:`~failforge.errors.SandboxDrift` can say *which* file or output changed.
"""

from __future__ import annotations

import abc
import fnmatch
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from failforge.canonical import canonical_hash, sha256_hex
from failforge.environments._base import Fingerprint

#: Bump whenever what the fingerprint covers or how it is normalised changes; recorded in every seed.
NORMALISER_VERSION = "sandbox-workspace/1"

#: Path components left out of the workspace fingerprint. Python bytecode caches embed the source's
#: mtime, so they differ on every run even when the code does not (the sandbox also sets
#: PYTHONDONTWRITEBYTECODE=1, this is the second line of defence).
EXCLUDE: tuple[str, ...] = ("__pycache__", "*.pyc")

#: What the normaliser masks in command output before anything sees it (model, trajectory, fingerprint):
#: host paths of a local sandbox shown as the stable paths the docker backend really has, so an error
#: message that names a file is the same on every run. The local backend now runs its commands at the
#: real /workspace and /tmp of its own mount namespace, so no host path reaches its output any more and
#: nothing needs rewriting; the declaration is unchanged because what the fingerprint means is.
VOLATILE: tuple[str, ...] = (
    "local workspace path -> /workspace",
    "local temp path -> /tmp",
    "local sandbox root -> /sandbox",
)

#: Where the workspace is, as commands and the model see it, on every backend.
WORKSPACE = "/workspace"

#: At most this many per-file parts in a fingerprint; the rest are folded into one ``files:rest`` part.
MAX_FILE_PARTS = 256

#: A registered sandbox backend name (``failforge.plugins.sandboxes``): docker and local are built in.
BackendName = str


class SandboxLimits(BaseModel):
    """Resource limits of one sandbox. Recorded in the environment spec: a replay runs under the same limits,
    because a limit is part of what a command observes (a memory hog's error depends on it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command_timeout: float = Field(
        default=10.0, gt=0, description="wall-clock seconds per command; the whole process tree is killed after it"
    )
    cpu_seconds: int = Field(default=30, ge=1, description="RLIMIT_CPU per process")
    cpus: float = Field(default=1.0, gt=0, description="CPUs the whole sandbox may use (its cgroup's CPU quota)")
    memory_mb: int = Field(
        default=512,
        ge=32,
        description="RLIMIT_AS per process; the sandbox's memory cgroup holds this plus the tmpfs pages and the server",
    )
    pids: int = Field(default=64, ge=4, description="processes in the whole sandbox, its server included (pids cgroup)")
    file_size_mb: int = Field(
        default=32, ge=1, description="RLIMIT_FSIZE: largest file (and captured output) a command may write"
    )
    workspace_mb: int = Field(
        default=64,
        ge=1,
        description="size of each RAM-backed writable mount: /workspace, /tmp, /dev/shm (local: /var/tmp too)",
    )
    open_files: int = Field(default=256, ge=16, description="RLIMIT_NOFILE")
    lifetime_seconds: int = Field(
        default=3600,
        ge=10,
        description="the sandbox server stops itself (and the sandbox) after this, whatever happens to failforge",
    )
    output_limit: int = Field(default=65536, ge=256, description="bytes of stdout and of stderr kept per command")

    def total_memory_bytes(self) -> int:
        """The sandbox's memory cgroup (both backends): the per-process limit plus the tmpfs pages of the
        workspace and /tmp, and the sandbox server, which the cgroup counts too."""
        return (self.memory_mb + 2 * self.workspace_mb + 64) * 1024 * 1024

    def rlimits(self) -> dict[str, int]:
        """The per-process limits, by ``resource`` constant name."""
        return {
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_AS": self.memory_mb * 1024 * 1024,
            "RLIMIT_FSIZE": self.file_size_mb * 1024 * 1024,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }


class ExecResult(BaseModel):
    """What one command did. ``exit_code`` follows the shell: 128+N when killed by signal N."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = Field(default=False, description="stdout or stderr was longer than the output limit and was cut")
    seconds: float = Field(default=0.0, description="wall time; informative only, never fingerprinted")

    def fingerprint_parts(self) -> dict[str, str]:
        return {
            "exec:exit_code": str(self.exit_code) + (" (timed out)" if self.timed_out else ""),
            "exec:stdout": sha256_hex(self.stdout),
            "exec:stderr": sha256_hex(self.stderr),
        }


class WorkspaceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["f", "d", "l", "o"]
    path: str
    size: int = 0
    sha256: str = ""


class WorkspaceListing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    entries: tuple[WorkspaceEntry, ...] = ()
    overflow: bool = False

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> WorkspaceListing:
        return cls(
            entries=tuple(
                WorkspaceEntry(kind=k, path=p, size=int(s), sha256=h) for k, p, s, h in raw.get("entries", [])
            ),
            overflow=bool(raw.get("overflow", False)),
        )


def _entry_part(entry: WorkspaceEntry) -> tuple[str, str]:
    label = {"f": "file", "d": "dir", "l": "link", "o": "other"}[entry.kind]
    value = "dir" if entry.kind == "d" else f"{entry.size}:{entry.sha256}"
    return f"{label}:{entry.path}", value


class SessionReply(BaseModel):
    """What one :meth:`Sandbox.session_send` brought back: the reply line, or why the session ended."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    line: str
    ended: bool = Field(default=False, description="the session is gone (it exited, or was killed on timeout)")
    timed_out: bool = False
    stderr: str = Field(default="", description="the session's stderr when it ended")
    exit_code: int | None = Field(default=None, description="how the session ended (128+N: killed by signal N)")
    idle: bool = Field(default=False, description="the session had ended before this send: the line was not delivered")
    seconds: float = Field(default=0.0, description="wall time; informative only, never fingerprinted")


def compose_fingerprint(listing: WorkspaceListing, last: ExecResult | None) -> Fingerprint:
    """The sandbox fingerprint: sorted (path, size, sha256) of the workspace + the last command's result.

    Parts are named ``file:<path>``, ``dir:<path>``, ``link:<path>`` and ``exec:exit_code``,
    ``exec:stdout``, ``exec:stderr``, so a drift message names what changed. Entries matching
    :data:`EXCLUDE` are never listed; the normaliser version is hashed in, so seeds recorded under an
    older normaliser fail loudly rather than match by accident.
    """
    parts: dict[str, str] = {}
    entries = [
        e for e in listing.entries if not any(fnmatch.fnmatchcase(c, p) for c in e.path.split("/") for p in EXCLUDE)
    ]
    for entry in entries[:MAX_FILE_PARTS]:
        key, value = _entry_part(entry)
        parts[key] = value
    rest = entries[MAX_FILE_PARTS:]
    if rest or listing.overflow:
        parts["files:rest"] = f"{len(rest)}{'+' if listing.overflow else ''}:" + canonical_hash(
            [_entry_part(e) for e in rest]
        )
    if last is not None:
        parts.update(last.fingerprint_parts())
    digest = canonical_hash({"normaliser": NORMALISER_VERSION, "parts": parts})
    return Fingerprint(digest=digest, parts=parts)


class Sandbox(abc.ABC):
    """An isolated workspace that runs commands. One per run; ``close()`` destroys it.

    Paths given to :meth:`read_file` and :meth:`write_file` are relative to the workspace (an
    absolute ``/workspace/...`` is accepted too); anything that would leave the workspace is refused
    with ``PermissionError``. Infrastructure trouble (engine down, container gone) raises
    :class:`~failforge.errors.InfrastructureError`, never a drift error.
    """

    backend: str
    #: True when commands cannot reach any network. The local backend sets it False when the kernel
    #: refuses a new network namespace; doctor output and the environment spec carry it.
    network_isolated: bool = True
    limits: SandboxLimits

    @abc.abstractmethod
    def exec(
        self, command: str | list[str], timeout: float | None = None, *, stdin: str | bytes | None = None
    ) -> ExecResult:
        """Run ``command`` (a shell string, or an argv list) in the workspace; never raises for a failing command."""

    @abc.abstractmethod
    def read_file(self, path: str) -> bytes:
        """The bytes of a workspace file (at most ``limits.output_limit`` + 1 bytes)."""

    @abc.abstractmethod
    def write_file(self, path: str, content: str | bytes) -> None:
        """Create or replace a workspace file, creating parent directories."""

    @abc.abstractmethod
    def listing(self) -> WorkspaceListing:
        """The current workspace listing."""

    @property
    @abc.abstractmethod
    def last_exec(self) -> ExecResult | None:
        """The last command's result, if any command ran yet."""

    def fingerprint(self) -> Fingerprint:
        """Sorted (path, size, sha256) of the workspace + the last command's exit code / stdout / stderr."""
        return compose_fingerprint(self.listing(), self.last_exec)

    # -- a session: one long-lived process spoken to in lines (a stateful interpreter keeps its variables there) --

    #: True when this backend can keep one long-lived process per sandbox (:meth:`session_start`).
    supports_session: ClassVar[bool] = False

    def session_start(self, argv: list[str], *, rlimits: Mapping[str, int | None] | None = None) -> None:
        """Start the sandbox's one session process (any earlier one is killed first), in the workspace, with the
        commands' environment and ``rlimits`` (default: the commands' limits)."""
        raise NotImplementedError(f"the {self.backend} sandbox cannot keep a session process")

    def session_send(self, line: str, timeout: float | None = None) -> SessionReply:
        """Send one request line to the session and wait for its one reply line (at most ``timeout`` seconds)."""
        raise NotImplementedError(f"the {self.backend} sandbox cannot keep a session process")

    def session_stop(self) -> None:
        """Kill the session process, if one runs."""
        return None

    @abc.abstractmethod
    def close(self) -> None:
        """Destroy the sandbox and its workspace. Safe to call twice."""

    def describe(self) -> dict[str, Any]:
        """Facts recorded beside a seed (backend, isolation, interpreter), for audits."""
        return {"backend": self.backend, "network_isolated": self.network_isolated}

    # -- reuse by the warm pool (:mod:`._pool`); the defaults make a backend that cannot be reset never reused --

    def prepare_reuse(self) -> None:
        """Note what this sandbox looks like fresh, right after opening, so :meth:`reset` can return to it; default
        nothing."""
        return None

    def reusable(self) -> bool:
        """Whether this idle sandbox may serve another run (prepared, still running, young enough); default False."""
        return False

    def reset(self) -> bool:
        """Make this sandbox equal to a freshly opened one; False when it cannot be (the pool then closes it); default
        False."""
        return False

    @classmethod
    def open(cls, limits: SandboxLimits | None, *, image: str | None, python_hash_seed: str) -> Sandbox:
        """A fresh sandbox of this backend (``image`` is for backends that run one)."""
        return cls(limits, python_hash_seed=python_hash_seed)  # type: ignore[call-arg]

    @classmethod
    @abc.abstractmethod
    def doctor(cls, image: str | None) -> tuple[bool, str]:
        """Whether this backend works here and why not: try it for real (start a sandbox, run python3)."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def workspace_relative(path: str) -> str:
    """Normalise a model-given path to a workspace-relative one; raise ``PermissionError`` if it leaves.

    ``/workspace/a.py``, ``./a.py`` and ``a.py`` are the same file; ``../x``, ``/etc/passwd`` and
    an empty path are refused. Symbolic links are checked by each backend where the file lives.
    """
    text = (path or "").strip()
    if text == WORKSPACE or text.startswith(WORKSPACE + "/"):
        text = text[len(WORKSPACE) :].lstrip("/")
    elif text.startswith("/"):
        raise PermissionError(f"path {path!r} is outside the workspace; use a path relative to {WORKSPACE}")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if not parts:
        raise PermissionError(f"path {path!r} names no file in the workspace")
    if any(p == ".." for p in parts):
        raise PermissionError(f"path {path!r} leaves the workspace ('..' is not allowed)")
    if "\x00" in text:
        raise PermissionError("a path cannot contain NUL")
    return "/".join(parts)


def workspace_os_error(exc: OSError, rel: str) -> OSError:
    """The same error, worded without host paths: the message reaches the model and the trajectory,
    and a local workspace's real path differs on every run (it would be drift, and a leak)."""
    if isinstance(exc, FileNotFoundError):
        return FileNotFoundError(f"no such file in the workspace: {rel}")
    if isinstance(exc, IsADirectoryError):
        return IsADirectoryError(f"{rel} is a directory")
    if isinstance(exc, NotADirectoryError):
        return NotADirectoryError(f"a parent of {rel} is not a directory")
    if isinstance(exc, PermissionError):
        return PermissionError(f"permission denied: {rel}")
    return OSError(f"{exc.strerror or type(exc).__name__}: {rel}")


def sandbox_env(home: str = "/tmp", tmpdir: str = "/tmp", python_hash_seed: str = "0") -> dict[str, str]:
    """The whole environment a command sees: nothing inherited, so a replay on another shell sees the same.

    Pinned: locale, timezone, hash seed (``print(set_of_strings)`` follows it), bytecode off.
    """
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": home,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": python_hash_seed,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
    }
