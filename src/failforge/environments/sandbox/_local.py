"""The local sandbox backend: bubblewrap + a cgroup + a uid of its own, no container engine needed.

One sandbox is one long-lived bubblewrap namespace whose PID 1 is the sandbox server
(:mod:`._helper`, the same program the docker backend runs), started as::

    /bin/sh -c JOIN_SCRIPT ...              # join the sandbox's cgroup (memory, pids, cpu totals), then exec
      setpriv --reuid=U --regid=U --clear-groups --no-new-privs --     # U: leased, distinct per sandbox
        bwrap --unshare-all --unshare-user --disable-userns --die-with-parent --new-session --as-pid-1
              --uid 65534 --gid 65534 --hostname sandbox
              --ro-bind /usr /usr (+ /bin /lib ... as on the host) --ro-bind /etc /etc
              --proc /proc --dev /dev --remount-ro /dev
              --size W --tmpfs /workspace  --size W --tmpfs /tmp  --size W --tmpfs /var/tmp  --size W --tmpfs /dev/shm
              --remount-ro / --seccomp FD --chdir /workspace
          python3 -I -c <server> --serve LIFETIME

What that gives, and why each part:

- **A read-only view of the system and nothing else**: ``/usr`` and ``/etc`` of the host, read-only;
  no ``/home``, ``/root``, ``/run``, ``/var``, ``/sys``, host ``/tmp`` or ``/dev/shm``, so no host
  files, no host Unix sockets (Docker's, or any other), nothing left behind for the next sandbox.
- **Private, size-capped tmpfs** for ``/workspace``, ``/tmp``, ``/var/tmp`` and ``/dev/shm``
  (``workspace_mb`` each); they vanish with the namespace. The root itself is read-only.
- **Private /proc in new PID, network, IPC, UTS, mount and user namespaces**: other sandboxes and host
  processes (their command lines, environments, memory, ``/proc/<pid>/root``) are not even visible.
  Commands see uid 65534 inside; on the host they are the leased uid ``U``, which no other sandbox of
  either backend holds at the same time (:mod:`._uids`).
- **No user namespaces, no mounts, no ptrace and other dangerous calls**: bubblewrap's
  ``--disable-userns`` and a seccomp filter (:mod:`._seccomp`).
- **Totals** for the whole sandbox, tmpfs pages included: memory, processes and CPU in a cgroup of its
  own (:mod:`._cgroup`), on top of the per-process rlimits commands also get.
- **Nothing outlives failforge**: ``--die-with-parent`` (set by bubblewrap after it dropped to ``U``,
  so the kernel does not clear it, as it did for ``setpriv`` under ``unshare --kill-child``) kills the
  namespace's PID 1, which takes every process in it along; the server also exits on EOF of its
  channel, even mid-command. The parent-death signal follows the *thread* that opened the sandbox
  (a kernel rule): open and close a sandbox in the same thread, as campaign attempts do.
- **File operations inside the sandbox**: ``read_file``/``write_file``/``listing`` are requests to the
  server, which runs as the sandbox's uid and walks paths with ``openat(O_NOFOLLOW | O_DIRECTORY)``;
  failforge never opens a workspace path with root's privileges.

The backend refuses to run rather than run weaker: not root, no ``bwrap``, no ``setpriv``, user
namespaces disabled by the kernel, no cgroup that can hold the three limits, no seccomp table for this
CPU, or an account inside the reserved uid range: :func:`local_isolation` names each missing piece and
``failforge doctor`` prints it. Commands see ``/workspace``, ``/tmp`` and uid 65534 as in the docker
backend, so no host path or uid reaches the model.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from failforge.environments.sandbox._base import WORKSPACE, SandboxLimits, sandbox_env
from failforge.environments.sandbox._cgroup import (
    CgroupSupport,
    SandboxCgroup,
    cgroup_support,
    sweep_stale_groups,
)
from failforge.environments.sandbox._reuse import TmpfsMount, limit_events
from failforge.environments.sandbox._seccomp import seccomp_program
from failforge.environments.sandbox._served import HELPER_SOURCE, ServedSandbox
from failforge.environments.sandbox._uids import (
    UidLease,
    lease_uid,
    range_conflicts,
    try_lease,
    uid_range,
)
from failforge.errors import FailforgeError, InfrastructureError
from failforge.plugins import sandboxes

#: The uid and gid commands see inside the sandbox ("nobody", as in the docker image and before).
INSIDE_UID = 65534
#: Host directories shown read-only inside; a merged-/usr link (``/bin -> usr/bin``) is recreated as a link.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")


@dataclass(frozen=True)
class LocalIsolation:
    """What the local backend needs and found on this machine, probed once per process."""

    bwrap: str | None
    setpriv: str | None
    cgroup: CgroupSupport
    uids: range
    problems: tuple[str, ...] = field(default_factory=tuple)

    @property
    def works(self) -> bool:
        return not self.problems

    #: Kept for callers of the earlier interface: the local backend now always isolates the network
    #: and the process tree, or refuses to run.
    @property
    def network(self) -> bool:
        return self.works

    @property
    def pid_namespace(self) -> bool:
        return self.works

    def summary(self) -> str:
        if not self.works:
            return "CANNOT ISOLATE: " + "; ".join(self.problems)
        return (
            "bubblewrap: private mount, PID, network, IPC, UTS and user namespaces (no network), read-only /usr and"
            " /etc, private size-capped /workspace /tmp /var/tmp /dev/shm, seccomp (no user namespaces, mounts,"
            f" ptrace), dies with failforge; {self.cgroup.summary()}; a uid of its own per sandbox from"
            f" {self.uids.start}..{self.uids.stop - 1}"
        )


_isolation: LocalIsolation | None = None
_isolation_lock = threading.Lock()


def _userns_problem() -> str | None:
    """Why the kernel would refuse bubblewrap (run as an unprivileged uid) a user namespace, if it would."""
    checks = (
        ("/proc/sys/user/max_user_namespaces", lambda v: int(v) > 0, "user.max_user_namespaces is 0"),
        ("/proc/sys/kernel/unprivileged_userns_clone", lambda v: v == "1", "kernel.unprivileged_userns_clone is 0"),
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            lambda v: v == "0",
            "kernel.apparmor_restrict_unprivileged_userns is 1",
        ),
    )
    for path, fine, said in checks:
        try:
            with open(path, encoding="ascii") as handle:
                value = handle.read().strip()
        except OSError:
            continue  # the knob does not exist on this kernel: nothing to refuse with
        if not fine(value):
            return f"the kernel refuses unprivileged user namespaces ({said}; bubblewrap needs them)"
    return None


def local_isolation(refresh: bool = False) -> LocalIsolation:
    """Probe (once) whether the local backend can isolate here, naming every missing piece."""
    global _isolation
    with _isolation_lock:
        if _isolation is not None and not refresh:
            return _isolation
        problems: list[str] = []
        if os.geteuid() != 0:
            problems.append(
                f"the local sandbox must be started by root (failforge runs as uid {os.geteuid()}): it gives every"
                " sandbox a uid of its own and a cgroup with total limits"
            )
        bwrap, setpriv = shutil.which("bwrap"), shutil.which("setpriv")
        if bwrap is None:
            problems.append(
                "bubblewrap is not installed: apt-get install bubblewrap (scripts/install_sandbox.sh installs it)"
            )
        if setpriv is None:
            problems.append("setpriv is missing: apt-get install util-linux")
        userns = _userns_problem()
        if userns:
            problems.append(userns)
        try:
            seccomp_program()
        except ValueError as exc:
            problems.append(str(exc))
        try:
            uids = uid_range()
        except FailforgeError as exc:
            problems.append(str(exc))
            uids = range(0)
        clashes = range_conflicts(uids) if uids else []
        if clashes:
            problems.append(
                f"accounts exist in the reserved sandbox uid range {uids.start}..{uids.stop - 1}:"
                f" {', '.join(clashes[:5])}; set FAILFORGE_SANDBOX_UIDS"
            )
        cgroup = cgroup_support(refresh=refresh) if os.geteuid() == 0 else CgroupSupport(None, problems=("needs root",))
        if os.geteuid() == 0 and not cgroup.usable:
            problems.append("no cgroup can hold the sandbox's total limits: " + "; ".join(cgroup.problems))
        _isolation = LocalIsolation(bwrap=bwrap, setpriv=setpriv, cgroup=cgroup, uids=uids, problems=tuple(problems))
        return _isolation


def _claim(uid: int) -> Callable[[], None] | None:
    lease = try_lease(uid)
    return lease.release if lease is not None else None


def _system_binds() -> list[str]:
    """bwrap arguments for the read-only system view, following the host's layout (merged /usr or not)."""
    argv: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    return argv


def bwrap_argv(bwrap: str, limits: SandboxLimits, seccomp_fd: int) -> list[str]:
    """The bubblewrap command line of a sandbox (see the module doc for what each part is for)."""
    size = str(limits.workspace_mb * 1024 * 1024)
    argv = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--as-pid-1",
        "--uid",
        str(INSIDE_UID),
        "--gid",
        str(INSIDE_UID),
        "--hostname",
        "sandbox",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    for mount in (WORKSPACE, "/tmp", "/var/tmp", "/dev/shm"):
        argv += ["--perms", "1777", "--size", size, "--tmpfs", mount]
    argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--seccomp", str(seccomp_fd), "--chdir", WORKSPACE]
    return argv


@sandboxes.register(
    "local", description="bubblewrap namespaces, a seccomp filter, a cgroup and a uid of its own per sandbox"
)
class LocalSandbox(ServedSandbox):
    """One bubblewrap namespace per run, its server as PID 1 (see module doc)."""

    backend = "local"

    def __init__(self, limits: SandboxLimits | None = None, *, python_hash_seed: str = "0") -> None:
        self.limits = limits or SandboxLimits()
        self.isolation = local_isolation()
        if not self.isolation.works:
            raise InfrastructureError(
                "the local sandbox cannot isolate on this machine, so it does not run: "
                + "; ".join(self.isolation.problems)
            )
        self.network_isolated = True
        self._env = sandbox_env(python_hash_seed=python_hash_seed)
        self._init_channel()
        self._buffer = b""
        self._proc: subprocess.Popen | None = None
        self._cgroup: SandboxCgroup | None = None
        self._lease: UidLease = lease_uid()
        self._stderr_file = tempfile.TemporaryFile(prefix="failforge-sandbox-stderr-")
        #: The host uid of every process in this sandbox (distinct from every other live sandbox).
        self.uid = self._lease.uid
        try:
            self._start()
            self._call("list", wait=60.0)  # the server is up and the workspace is empty
        except BaseException:
            self._abandon()
            raise

    def _start(self) -> None:
        lim = self.limits
        assert self.isolation.bwrap and self.isolation.setpriv
        try:
            sweep_stale_groups(self.isolation.cgroup, _claim)
            self._cgroup = SandboxCgroup(
                self.isolation.cgroup, self.uid, memory_bytes=lim.total_memory_bytes(), pids=lim.pids, cpus=lim.cpus
            )
        except OSError as exc:
            raise InfrastructureError(f"could not create the local sandbox's cgroup: {exc}") from exc
        read_end, write_end = os.pipe()
        try:
            os.write(write_end, seccomp_program())  # a few hundred bytes: fits the pipe buffer
            os.close(write_end)
            argv = (
                self._cgroup.join_argv()
                + [
                    self.isolation.setpriv,
                    f"--reuid={self.uid}",
                    f"--regid={self.uid}",
                    "--clear-groups",
                    "--no-new-privs",
                    "--",
                ]
                + bwrap_argv(self.isolation.bwrap, lim, read_end)
                + ["python3", "-I", "-S", "-c", HELPER_SOURCE, "--serve", str(lim.lifetime_seconds)]
            )
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr_file,
                pass_fds=(read_end,),
                env=self._env,
                cwd="/",
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise InfrastructureError(f"the local sandbox could not start: {exc}") from exc
        finally:
            os.close(read_end)

    @classmethod
    def doctor(cls, image: str | None) -> tuple[bool, str]:
        iso = local_isolation(refresh=True)
        if not iso.works:
            return (False, iso.summary())
        try:
            with cls(SandboxLimits(command_timeout=20)) as box:
                result = box.exec("python3 -c 'import sys; print(sys.version.split()[0])'")
        except FailforgeError as exc:
            return (False, str(exc))
        if result.exit_code != 0:
            return (False, f"python3 did not run in the local sandbox: exit {result.exit_code}: {result.stderr[-300:]}")
        return (True, f"python {result.stdout.strip()}; {iso.summary()}")

    # -- where it is, for audits and tests ---------------------------------------------------------

    @property
    def server_pid(self) -> int | None:
        """Host pid of the sandbox's PID 1 (the server), the child of the bubblewrap monitor."""
        if self._proc is None:
            return None
        try:
            for task in os.listdir(f"/proc/{self._proc.pid}/task"):
                with open(f"/proc/{self._proc.pid}/task/{task}/children", encoding="ascii") as handle:
                    children = handle.read().split()
                if children:
                    return int(children[0])
        except OSError:
            pass
        return None

    @property
    def workspace_path(self) -> str:
        """Where root on the host reaches the workspace (it lives only inside the sandbox's mount namespace)."""
        return f"/proc/{self.server_pid}/root{WORKSPACE}"

    # -- reuse ------------------------------------------------------------------------------------

    def _host_pid(self) -> int:
        pid = self.server_pid
        if pid is None:
            raise InfrastructureError(f"the local sandbox's server is not running; {self._state()}")
        return pid

    def _fresh_mounts(self) -> tuple[TmpfsMount, ...]:
        """As bubblewrap mounts them (``--perms 1777 --size``), owned by the sandbox's host uid."""
        options = f"nosuid,nodev,size={self.limits.workspace_mb * 1024 * 1024},uid={self.uid},gid={self.uid}"
        return tuple(TmpfsMount(path, options) for path in (WORKSPACE, "/tmp", "/var/tmp", "/dev/shm"))

    def _limit_events(self) -> dict[str, int]:
        if self._cgroup is None:
            return {"cgroup": 1}
        return limit_events(self._cgroup.dirs["memory"], self._cgroup.dirs["pids"])

    def alive(self) -> bool:
        return not self._closed and self._proc is not None and self._proc.poll() is None

    def _forget_run(self) -> None:
        self._stderr_file.seek(0)
        self._stderr_file.truncate()

    # -- transport: a pipe ------------------------------------------------------------------------

    def _send(self, data: bytes, wait: float) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(data)
        self._proc.stdin.flush()

    def _read_reply(self, wait: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + wait
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError(f"no reply in {wait:.0f}s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the sandbox server closed its output")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line + b"\n"

    def _state(self) -> str:
        said = []
        if self._proc is not None:
            code = self._proc.poll()
            said.append("sandbox running" if code is None else f"sandbox exited with {code}")
        if self._cgroup is not None:
            kills = self._cgroup.oom_kills()
            if kills:
                said.append(f"{kills} process(es) killed at the sandbox's memory limit")
        try:
            self._stderr_file.seek(0)
            tail = self._stderr_file.read()[-500:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            tail = ""
        if tail:
            said.append(f"stderr: {tail!r}")
        return "; ".join(said) or "state unknown"

    def _abandon(self) -> None:
        """Kill everything in the sandbox (its namespace and tmpfs go with it), then give back the cgroup and uid."""
        self._closed = True
        self._release_namespaces()
        # The namespace's PID 1 first: the kernel then kills everything else in the namespace, and the
        # bubblewrap monitor reaps it and exits, so no zombie is left to the host's init.
        server = self.server_pid
        if server is not None:
            try:
                os.kill(server, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._proc is not None:
            for pipe in (self._proc.stdin, self._proc.stdout):
                try:
                    if pipe is not None:
                        pipe.close()
                except OSError:
                    pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
        self._stderr_file.close()
        self._lease.release()

    def describe(self) -> dict[str, object]:
        return {"backend": self.backend, "network_isolated": True, "pid_namespace": True, "uid": INSIDE_UID}
