"""What makes a used sandbox equal to a fresh one, done from the host: new file systems, the PID counter, limit events.

A sandbox is worth keeping between runs (opening one costs a container start, or a bubblewrap
namespace and a Python start) only if the next run cannot tell it from a fresh one. Inside, the
server kills every process whatever its state, and reports any process it could not end and the
kernel objects that outlive processes (:mod:`._helper`, op ``reset``). Two things only the host can
do, as root, entering the sandbox's namespaces with
``nsenter`` (by namespace handles taken when the sandbox opened, never by a pid that could have
changed hands):

- **file systems**: every writable mount (``/workspace``, ``/tmp``, ``/dev/shm``, ...) is unmounted and
  a new tmpfs with the same options mounted in its place. Deleting files would leave the old
  superblock's counters behind: a new file's inode number (``ls -i``, ``os.stat``) continues from
  the earlier run on a reused tmpfs and starts over on a fresh one.
- **the PID counter** of the sandbox's PID namespace: a fresh sandbox's first command gets a known
  PID (2 on the local backend; on docker whatever the engine's own short-lived processes left,
  6 to 8 here), a used one's would get the next in sequence. The kernel lets a process with
  ``CAP_SYS_ADMIN`` over the namespace set it (``/proc/sys/kernel/ns_last_pid``, written from inside
  the namespace); the value to restore is read the same way right after the sandbox opened.

What cannot be undone is refused instead, and the sandbox closed: a cgroup that recorded an OOM
kill, a memory-limit hit or a refused fork (counters docker commands can read, and that say the
earlier run strained the limits); System V IPC objects or POSIX queues (their ids go on counting
even once removed); sockets (a port in TIME_WAIT refuses a bind that a fresh sandbox allows).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from failforge.environments.sandbox._cgroup import _mounts

NSENTER = "/usr/bin/nsenter"
#: Seconds one host-side namespace operation may take before the sandbox is given up (closed).
HOST_TIMEOUT = 30.0


@dataclass(frozen=True)
class TmpfsMount:
    """A writable mount of a sandbox, as a fresh one has it: ``mount -t tmpfs -o OPTIONS SOURCE PATH``, mode 1777."""

    path: str
    options: str
    source: str = "tmpfs"


class Namespaces:
    """Open handles on a sandbox's mount and PID namespaces, taken while its server is known to be alive.

    A handle names the namespace itself, not a pid: a pid can be reused by another process once the
    sandbox is gone, a namespace handle cannot, so no host-side operation can ever land in another
    sandbox's (or the host's) namespaces. Holding the handles keeps the namespaces (and their file
    systems) alive: :meth:`close` them with the sandbox.
    """

    def __init__(self, pid: int) -> None:
        flags = os.O_RDONLY | os.O_CLOEXEC
        self.server_pid = pid
        self.started = _start_time(pid)
        self.mount = os.open(f"/proc/{pid}/ns/mnt", flags)
        try:
            self.pid = os.open(f"/proc/{pid}/ns/pid", flags)
        except OSError:
            os.close(self.mount)
            raise
        if _start_time(pid) != self.started:  # the pid changed hands while the handles were taken
            self.close()
            raise OSError(f"sandbox server pid {pid} went away while its namespaces were opened")

    def server_running(self) -> bool:
        """The sandbox's server is the process it was (a pid whose start time changed is someone else)."""
        try:
            return _start_time(self.server_pid) == self.started
        except OSError:
            return False

    def run(self, script: str) -> str:
        """``/bin/sh -c script`` as root in the sandbox's PID namespace (nsenter forks, so the shell is a
        process of that namespace) but the host's mount namespace, so ``/proc/sys`` is the host's
        writable one; the kernel applies a write to ``ns_last_pid`` to the writer's PID namespace.
        ``$MOUNT_NS`` names the sandbox's mount namespace for an inner ``nsenter --mount``."""
        argv = [NSENTER, f"--pid=/proc/self/fd/{self.pid}", "--", "/bin/sh", "-c", script]
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "MOUNT_NS": f"/proc/self/fd/{self.mount}"}
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=HOST_TIMEOUT,
                check=False,
                env=env,
                pass_fds=(self.pid, self.mount),
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise OSError(f"nsenter into the sandbox's namespaces failed: {exc}") from exc
        if done.returncode != 0:
            raise OSError(
                f"nsenter into the sandbox's namespaces exited {done.returncode}: {done.stderr.strip()[-300:]}"
            )
        return done.stdout

    def close(self) -> None:
        for fd in (self.mount, self.pid):
            try:
                os.close(fd)
            except OSError:
                pass
        self.mount = self.pid = -1


def _start_time(pid: int) -> str:
    """Field 22 of /proc/PID/stat: when the process started (with the pid, it names one process for good)."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[-1].split()[19].decode("ascii")


def next_pid(ns: Namespaces) -> int:
    """The PID the sandbox's next process will get; the counter is left where it was.

    The shell that reads it runs inside the sandbox's PID namespace and so takes a PID itself (the
    one a command would have got, which is what it reads); it puts the counter back before it exits
    and forks nothing (``read`` and ``echo`` are shell builtins).
    """
    # ``read`` reports end of file: a sysctl read one byte at a time loses its newline. The value is set all the same.
    counter = "/proc/sys/kernel/ns_last_pid"
    script = f'read n < {counter}; case "$n" in ""|*[!0-9]*) exit 3;; esac; echo $((n - 1)) > {counter} && echo "$n"'
    return int(ns.run(script).strip())


def reset_namespaces(ns: Namespaces, mounts: tuple[TmpfsMount, ...], next_process: int) -> None:
    """Replace each writable file system with a new, empty one with the same options, then set the PID counter.

    Nothing inside may hold the mounts: the server has killed every other process and left them
    (op ``reset``). A mount that is still busy fails the whole reset, and the sandbox is closed instead.
    The counter is set last, after every process the script started (they are processes of the
    sandbox's PID namespace too, and take PIDs).
    """
    steps = " && ".join(
        f"umount {m.path} && mount -t tmpfs -o {m.options} {m.source} {m.path} && chmod 1777 {m.path}" for m in mounts
    )
    ns.run(
        f'nsenter --mount="$MOUNT_NS" -- /bin/sh -c "{steps}" && echo {int(next_process) - 1} >'
        " /proc/sys/kernel/ns_last_pid"
    )


def cgroup_dirs_of(pid: int) -> dict[str, str]:
    """The host directories of the cgroups process ``pid`` is in, by controller (v2: key ``""``)."""
    mounts = _mounts()
    dirs: dict[str, str] = {}
    with open(f"/proc/{pid}/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                for point, fstype, options in mounts:
                    if (name == "" and fstype == "cgroup2") or (name and fstype == "cgroup" and name in options):
                        dirs[name] = os.path.join(point, path.lstrip("/"))
    return dirs


def _counter(path: str, key: str | None = None) -> int:
    try:
        with open(path, encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return 0
    if key is None:
        return int(text.strip() or 0)
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


def limit_events(memory_dir: str, pids_dir: str) -> dict[str, int]:
    """How often the sandbox's cgroup hit its limits: OOM kills, memory-limit hits, refused forks (v1 or v2 files)."""
    if os.path.exists(os.path.join(memory_dir, "memory.events")):  # v2
        return {
            "oom_kill": _counter(os.path.join(memory_dir, "memory.events"), "oom_kill"),
            "memory_max": _counter(os.path.join(memory_dir, "memory.events"), "max"),
            "pids_max": _counter(os.path.join(pids_dir, "pids.events"), "max"),
        }
    return {
        "oom_kill": _counter(os.path.join(memory_dir, "memory.oom_control"), "oom_kill"),
        "memory_max": _counter(os.path.join(memory_dir, "memory.failcnt")),
        "pids_max": _counter(os.path.join(pids_dir, "pids.events"), "max"),
    }
