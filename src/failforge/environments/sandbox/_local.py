"""The local sandbox backend: a temporary workspace and a subprocess fenced by the kernel, no engine needed.

Each command runs as::

    unshare --net --pid --fork --kill-child --   # no network; every process dies with the command
      prlimit --cpu --as --fsize --nofile --nproc --core=0 --
        setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --   # only when run as root
          /bin/sh -c COMMAND

The util-linux tools are used instead of ``preexec_fn`` because ``preexec_fn`` is unsafe in a
threaded process (campaigns run attempts in a thread pool). Root must drop to an unprivileged uid
because the kernel does not enforce RLIMIT_NPROC for root: without it a fork bomb is not contained.
When run without root the command keeps the user's uid inside a user namespace instead.

What it does not do, by design: it is not a filesystem jail. A command can read whatever the
unprivileged uid can read on the host, and can write wherever that uid may (the workspace, world-
writable directories). Use the docker backend when that matters; ``sandbox_doctor()`` says so.
When the kernel refuses a new network namespace the backend still runs but sets
``network_isolated = False`` and the doctor reports it.

The workspace lives under ``$FAILFORGE_SANDBOX_DIR`` (default: the system temp directory), which the
unprivileged uid must be able to traverse. Command output never shows the real path: it is rewritten
to ``/workspace`` (declared in ``VOLATILE``), so messages are the same on every run and backend.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from failforge.environments.sandbox import _helper
from failforge.environments.sandbox._base import (
    EXCLUDE,
    WORKSPACE,
    ExecResult,
    Sandbox,
    SandboxLimits,
    WorkspaceListing,
    sandbox_env,
    workspace_os_error,
    workspace_relative,
)
from failforge.errors import ConfigError, FailforgeError, InfrastructureError
from failforge.plugins import sandboxes

#: The unprivileged uid/gid commands run as when failforge runs as root ("nobody" on Debian).
SANDBOX_UID = 65534
SANDBOX_GID = 65534
MAX_LIST_ENTRIES = 5000
#: What util-linux's unshare prints when its child (the namespace's init) was SIGKILLed at a timeout.
_UNSHARE_NOISE = re.compile(r"unshare: [^\n]*\n?\Z")


@dataclass(frozen=True)
class LocalIsolation:
    """What this kernel lets the local backend do, probed once per process."""

    network: bool
    pid_namespace: bool
    drop_privileges: bool
    user_namespace: bool
    prefix: tuple[str, ...]
    problems: tuple[str, ...] = field(default_factory=tuple)

    def summary(self) -> str:
        said = [
            "network namespace (no network)" if self.network else "NO network isolation",
            "PID namespace (all processes die with the command)" if self.pid_namespace else "no PID namespace (only the process group is killed)",
            f"runs as uid {SANDBOX_UID}" if self.drop_privileges else ("user namespace" if self.user_namespace else "runs as the calling user"),
            "rlimits (cpu, as, fsize, nofile, nproc)",
            "no filesystem jail: commands can read what their uid can read on the host",
        ]
        if self.problems:
            said.append("why: " + "; ".join(self.problems))
        return ", ".join(said)


_isolation: LocalIsolation | None = None
_isolation_lock = threading.Lock()


def _probe(prefix: list[str]) -> tuple[bool, str]:
    """Run ``cat /proc/net/dev`` under ``prefix``: isolated when the only interface is loopback."""
    try:
        done = subprocess.run([*prefix, "cat", "/proc/net/dev"], check=False, capture_output=True, text=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{' '.join(prefix)}: {exc}"
    if done.returncode != 0:
        return False, f"{' '.join(prefix[:-1])}: {(done.stderr or done.stdout).strip()[:200]}"
    interfaces = [line.split(":", 1)[0].strip() for line in done.stdout.splitlines()[2:] if ":" in line]
    if "--net" in prefix and interfaces not in (["lo"], []):
        return False, f"new network namespace still shows interfaces {interfaces}"
    return True, ""


def local_isolation(refresh: bool = False) -> LocalIsolation:
    """Probe (once) which kernel isolation the local backend can use here."""
    global _isolation
    with _isolation_lock:
        if _isolation is not None and not refresh:
            return _isolation
        problems: list[str] = []
        missing = [tool for tool in ("unshare", "prlimit", "setpriv") if shutil.which(tool) is None]
        if "prlimit" in missing:
            raise InfrastructureError("the local sandbox needs util-linux's prlimit: apt-get install util-linux")
        root = os.geteuid() == 0
        drop = root and "setpriv" not in missing
        if root and not drop:
            problems.append("setpriv missing: commands would run as root and RLIMIT_NPROC would not apply")
        user_ns = not root
        base = ["unshare"] + (["--user", "--map-current-user"] if user_ns else [])
        chosen: tuple[str, ...] = ()
        network = pid = False
        if "unshare" in missing:
            problems.append("unshare missing (apt-get install util-linux)")
        else:
            for flags, net, pidns in (
                (["--net", "--pid", "--fork", "--kill-child"], True, True),
                (["--net"], True, False),
                (["--pid", "--fork", "--kill-child"], False, True),
            ):
                ok, why = _probe([*base, *flags, "--"])
                if ok:
                    chosen, network, pid = (*base, *flags, "--"), net, pidns
                    break
                problems.append(why)
            if not network:
                problems.insert(0, "the kernel refused a new network namespace")
        if network:
            problems = []
        _isolation = LocalIsolation(
            network=network, pid_namespace=pid, drop_privileges=drop, user_namespace=user_ns and bool(chosen), prefix=chosen, problems=tuple(problems)
        )
        return _isolation


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (``/proc/<pid>/task/*/children``, else a scan of ``/proc``)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.extend(int(x) for x in handle.read().split())
        return found
    except OSError:
        pass
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                if int(handle.read().rsplit(b")", 1)[-1].split()[1]) == pid:
                    found.append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    return found


def _check_traversable(base: str) -> None:
    """Commands run as an unprivileged uid: every directory above the workspace must let others pass."""
    path = base
    while True:
        if not os.stat(path).st_mode & 0o001:
            raise ConfigError(
                f"the local sandbox's commands run as uid {SANDBOX_UID} and cannot enter {path} (no search permission for others); "
                f"set FAILFORGE_SANDBOX_DIR to a directory every user can traverse, e.g. /tmp"
            )
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def _live_group_members(pgid: int) -> list[int]:
    """Processes of process group ``pgid`` that are not zombies."""
    found: list[int] = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[-1].split()
            if int(fields[2]) == pgid and fields[0] != b"Z":
                found.append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    return found


def _user_process_count(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


@sandboxes.register("local", description="a temporary workspace and a subprocess fenced by kernel namespaces and rlimits")
class LocalSandbox(Sandbox):
    """A temporary workspace on the host; each command in fresh namespaces under rlimits (see module doc)."""

    backend = "local"

    def __init__(self, limits: SandboxLimits | None = None, *, python_hash_seed: str = "0") -> None:
        self.limits = limits or SandboxLimits()
        self.isolation = local_isolation()
        self.network_isolated = self.isolation.network
        base = os.path.realpath(os.environ.get("FAILFORGE_SANDBOX_DIR") or tempfile.gettempdir())
        if self.isolation.drop_privileges:
            _check_traversable(base)
        self._root = os.path.realpath(tempfile.mkdtemp(prefix="failforge-sandbox-", dir=base))
        self._ws = os.path.join(self._root, "workspace")
        self._tmp = os.path.join(self._root, "tmp")
        self._io = os.path.join(self._root, "io")
        os.chmod(self._root, 0o711)
        for path, mode in ((self._ws, 0o755), (self._tmp, 0o1777), (self._io, 0o700)):
            os.mkdir(path, mode)
            os.chmod(path, mode)
        if self.isolation.drop_privileges:
            os.chown(self._ws, SANDBOX_UID, SANDBOX_GID)
        self._env = sandbox_env(home=self._tmp, tmpdir=self._tmp, python_hash_seed=python_hash_seed)
        # Longest first: the workspace and tmp paths sit inside the root path.
        self._masks = ((self._ws, WORKSPACE), (self._tmp, "/tmp"), (self._root, "/sandbox"))
        self._last: ExecResult | None = None
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def doctor(cls, image: str | None) -> tuple[bool, str]:
        try:
            iso = local_isolation(refresh=True)
            with cls(SandboxLimits(command_timeout=20)) as box:
                result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'")
        except FailforgeError as exc:
            return (False, str(exc))
        if result.exit_code != 0:
            return (False, f"python3 did not run in the local sandbox: exit {result.exit_code}: {result.stderr[-300:]}")
        prefix = "" if iso.network else "runs, but CANNOT ISOLATE THE NETWORK: "
        return (True, f"{prefix}python {result.stdout.strip()}; {iso.summary()}")

    # -- paths --------------------------------------------------------------------------------

    @property
    def workspace_path(self) -> str:
        """The real host directory of the workspace (commands see it as /workspace in every message)."""
        return self._ws

    def _host_path(self, path: str) -> str:
        """Host path of a workspace file; refuses symlinks on the way (the host side runs with our privileges)."""
        rel = workspace_relative(path)
        current = self._ws
        for part in rel.split("/"):
            current = os.path.join(current, part)
            if os.path.islink(current):
                raise PermissionError(f"path {path!r} goes through a symbolic link; the sandbox does not follow links from the host side")
        return current

    def _mask(self, text: str) -> str:
        for real, shown in self._masks:
            text = text.replace(real, shown)
        return text

    def _check_open(self) -> None:
        if self._closed:
            raise InfrastructureError("the local sandbox was closed; open a new episode")

    # -- Sandbox ------------------------------------------------------------------------------

    def _command_prefix(self) -> list[str]:
        lim = self.limits
        nproc = lim.pids if self.isolation.drop_privileges else _user_process_count(os.getuid()) + lim.pids
        argv = list(self.isolation.prefix)
        argv += [
            "prlimit",
            f"--cpu={lim.cpu_seconds}",
            f"--as={lim.memory_mb * 1024 * 1024}",
            f"--fsize={lim.file_size_mb * 1024 * 1024}",
            f"--nofile={lim.open_files}",
            f"--nproc={nproc}",
            "--core=0",
            "--",
        ]
        if self.isolation.drop_privileges:
            argv += ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_GID}", "--clear-groups", "--no-new-privs", "--"]
        return argv

    def exec(self, command: str | list[str], timeout: float | None = None, *, stdin: str | bytes | None = None) -> ExecResult:
        self._check_open()
        limit = float(timeout if timeout is not None else self.limits.command_timeout)
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        data = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
        with self._lock:
            paths = {name: os.path.join(self._io, name) for name in ("in", "out", "err")}
            with open(paths["in"], "wb") as handle:
                handle.write(data)
            started = time.monotonic()
            timed_out = False
            try:
                with open(paths["in"], "rb") as fin, open(paths["out"], "wb") as fout, open(paths["err"], "wb") as ferr:
                    proc = subprocess.Popen(
                        self._command_prefix() + argv,
                        cwd=self._ws,
                        env=self._env,
                        stdin=fin,
                        stdout=fout,
                        stderr=ferr,
                        start_new_session=True,
                        close_fds=True,
                    )
                    try:
                        code = proc.wait(timeout=limit)
                    except subprocess.TimeoutExpired:
                        timed_out = True
                        code = self._stop(proc)
                    # Without a PID namespace, background children would outlive the command.
                    self._kill_group(proc.pid)
            except OSError as exc:
                raise InfrastructureError(f"the local sandbox could not start a command: {exc}") from exc
            seconds = time.monotonic() - started
            stdout, out_size = self._read_output(paths["out"])
            stderr, err_size = self._read_output(paths["err"])
            if timed_out:
                # unshare reports its init's SIGKILL in its own words; say it as the docker backend does.
                stderr = _UNSHARE_NOISE.sub("", stderr)
                code = -signal.SIGKILL
            result = ExecResult(
                exit_code=code if code >= 0 else 128 - code,
                stdout=stdout,
                stderr=stderr,
                timed_out=timed_out,
                truncated=max(out_size, err_size) > self.limits.output_limit,
                seconds=round(seconds, 4),
            )
            self._last = result
            return result

    def _stop(self, proc: subprocess.Popen) -> int:
        """Kill a command that ran out of time, so that nothing of it is left when this returns.

        With a PID namespace the namespace's init (unshare's child) is killed, the kernel kills
        everything else in the namespace, and unshare reaps it and exits: no zombie is left to the host's
        init. Otherwise, or if that does not end it, the whole process group is killed.
        """
        if self.isolation.pid_namespace:
            for child in _children(proc.pid):
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                return proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._kill_group(proc.pid)
        return proc.wait()

    @staticmethod
    def _kill_group(pgid: int, settle: float = 5.0) -> None:
        """SIGKILL the command's process group and wait until it is gone.

        Killed processes die asynchronously; the workspace is fingerprinted next, so nothing of the
        command may still be running then. With a PID namespace, the group's end is the namespace's
        init ending, and the kernel makes that wait for every other process in the namespace.
        """
        deadline = time.monotonic() + settle
        while True:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                return
            # Zombies (dead, waiting for the host's init to reap them) still count as group members.
            if not _live_group_members(pgid) or time.monotonic() > deadline:
                return
            time.sleep(0.002)

    def _read_output(self, path: str) -> tuple[str, int]:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            data = handle.read(self.limits.output_limit)
        return self._mask(data.decode("utf-8", errors="replace")), size

    def read_file(self, path: str) -> bytes:
        self._check_open()
        rel = workspace_relative(path)
        full = self._host_path(rel)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                return handle.read(self.limits.output_limit + 1)
        except OSError as exc:
            raise workspace_os_error(exc, rel) from None

    def write_file(self, path: str, content: str | bytes) -> None:
        self._check_open()
        data = content.encode("utf-8") if isinstance(content, str) else content
        if len(data) > self.limits.file_size_mb * 1024 * 1024:
            raise ValueError(f"file is {len(data)} bytes, over the sandbox's file size limit of {self.limits.file_size_mb} MiB")
        rel = workspace_relative(path)
        full = self._host_path(rel)
        try:
            self._write(full, data)
        except OSError as exc:
            raise workspace_os_error(exc, rel) from None

    def _write(self, full: str, data: bytes) -> None:
        parent = os.path.dirname(full)
        missing: list[str] = []
        probe = parent
        while not os.path.isdir(probe) and probe != self._ws:
            missing.append(probe)
            probe = os.path.dirname(probe)
        for directory in reversed(missing):
            os.mkdir(directory, 0o755)
            self._give(directory)
        fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self._give(full)

    def _give(self, path: str) -> None:
        """Files failforge writes belong to the sandbox user, so the agent's commands may change them."""
        if self.isolation.drop_privileges:
            os.chown(path, SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)

    def listing(self) -> WorkspaceListing:
        self._check_open()
        return WorkspaceListing.from_raw(_helper.list_workspace(self._ws, EXCLUDE, MAX_LIST_ENTRIES))

    @property
    def last_exec(self) -> ExecResult | None:
        return self._last

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        def _retry(func, path, _exc):  # a command may have removed write permission from its own files
            try:
                os.chmod(os.path.dirname(path), 0o700)
                func(path)
            except OSError:
                pass

        shutil.rmtree(self._root, onerror=_retry)

    def describe(self) -> dict[str, object]:
        iso = self.isolation
        return {
            "backend": self.backend,
            "network_isolated": iso.network,
            "pid_namespace": iso.pid_namespace,
            "uid": SANDBOX_UID if iso.drop_privileges else os.getuid(),
        }
