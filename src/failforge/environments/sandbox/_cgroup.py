"""One control group per local sandbox: total memory, process count and CPU for everything inside it.

Per-process rlimits cannot bound a sandbox: 64 processes of 512 MB each are 32 GB, and the pages of a
RAM-backed ``/tmp`` belong to no process at all. A cgroup counts all of it (the tmpfs pages a command
writes are charged to the cgroup of the process that wrote them) and the kernel enforces the total.

Both cgroup layouts are supported, with the same three limits:

- **v2** (unified): one directory, ``memory.max`` + ``memory.swap.max``, ``pids.max``, ``cpu.max``;
  killed at once through ``cgroup.kill``. It needs failforge's own cgroup to be able to hand the
  three controllers to a child (the kernel refuses while that cgroup itself holds processes, unless it
  is the root); where it cannot, :func:`cgroup_support` says so and names the cgroup.
- **v1** (legacy or hybrid, as on this project's CI machine): one directory in each of the memory, pids
  and cpu hierarchies, ``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes``, ``pids.max``,
  ``cpu.cfs_quota_us``.

Groups are created right below the cgroup failforge itself runs in (``<own>/failforge-sandbox-uid-<uid>``),
so failforge never moves itself or anyone else's processes, the sandbox's usage stays inside the
limits of whoever started failforge, and nothing of failforge is left in that cgroup once its
sandboxes are closed. The group is named by the sandbox's uid lease: a group left by a failforge that
died is emptied and removed by the next sandbox opened there (:func:`sweep_stale_groups`).

A process joins before it runs anything: the local backend starts its sandbox through
``/bin/sh -c JOIN_SCRIPT`` (write ``$$`` to each ``cgroup.procs``, then ``exec``), so not one fork
happens outside the group; ``preexec_fn`` is not used because campaigns start sandboxes from threads.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

GROUP_PREFIX = "failforge-sandbox-uid-"
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000

#: ``/bin/sh -c JOIN_SCRIPT failforge-sandbox PROCS_FILE... -- COMMAND...``: join every group, then exec.
JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class CgroupSupport:
    """Which cgroup layout can hold a sandbox here, and where its groups go (``parents``: controller -> dir)."""

    version: Literal[1, 2] | None
    parents: dict[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return self.version is not None

    def summary(self) -> str:
        if self.version is None:
            return "no usable cgroup: " + "; ".join(self.problems)
        return f"cgroup v{self.version} totals (memory, pids, cpu) under {self.parents['memory']}"


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, filesystem type, super options) of every cgroup mount, from /proc/self/mountinfo."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4].replace("\\040", " "), tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under key ``""`` its v2 path."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                paths[name] = path
    return paths


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _probe_v2(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> CgroupSupport:
    unified = [m for m in mounts if m[1] == "cgroup2"]
    if not unified:
        return CgroupSupport(None, problems=("cgroup v2: no cgroup2 filesystem is mounted",))
    mount = unified[0][0]
    try:
        with open(os.path.join(mount, "cgroup.controllers"), encoding="ascii") as handle:
            available = set(handle.read().split())
    except OSError as exc:
        return CgroupSupport(None, problems=(f"cgroup v2 at {mount}: cannot read cgroup.controllers ({exc.strerror})",))
    missing = [c for c in CONTROLLERS if c not in available]
    if missing:
        return CgroupSupport(
            None,
            problems=(
                (
                    f"cgroup v2 at {mount} lacks the {', '.join(missing)} controller(s) (they are bound to a v1"
                    " hierarchy or disabled)"
                ),
            ),
        )
    own_dir = os.path.normpath(os.path.join(mount, own.get("", "/").lstrip("/")))
    enable = " ".join(f"+{c}" for c in CONTROLLERS)
    try:
        _write(os.path.join(own_dir, "cgroup.subtree_control"), enable)
    except OSError as exc:
        why = (
            "it holds processes itself, and the kernel hands controllers only to the children of a cgroup without"
            " processes; start failforge in a delegated cgroup of its own (e.g. a systemd unit with Delegate=yes whose"
            " processes sit in a leaf)"
            if exc.errno == errno.EBUSY
            else exc.strerror or str(exc)
        )
        return CgroupSupport(
            None, problems=(f"cgroup v2: cannot enable {', '.join(CONTROLLERS)} for children of {own_dir}: {why}",)
        )
    return CgroupSupport(2, parents={c: own_dir for c in CONTROLLERS})


def _probe_v1(mounts: list[tuple[str, str, set[str]]], own: dict[str, str]) -> CgroupSupport:
    parents: dict[str, str] = {}
    problems: list[str] = []
    for controller in CONTROLLERS:
        hierarchy = next((m[0] for m in mounts if m[1] == "cgroup" and controller in m[2]), None)
        if hierarchy is None:
            problems.append(f"cgroup v1: no {controller} hierarchy is mounted")
            continue
        parent = os.path.normpath(os.path.join(hierarchy, own.get(controller, "/").lstrip("/")))
        if not os.access(parent, os.W_OK):
            problems.append(f"cgroup v1: cannot create groups in {parent} (not writable)")
            continue
        parents[controller] = parent
    if problems:
        return CgroupSupport(None, problems=tuple(problems))
    return CgroupSupport(1, parents=parents)


_support: CgroupSupport | None = None


def cgroup_support(refresh: bool = False) -> CgroupSupport:
    """Probe (once per process) whether sandbox groups can be made here: v2 first, then v1."""
    global _support
    if _support is not None and not refresh:
        return _support
    if os.geteuid() != 0:
        _support = CgroupSupport(
            None, problems=(f"creating a cgroup per sandbox needs root (failforge runs as uid {os.geteuid()})",)
        )
        return _support
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as exc:
        _support = CgroupSupport(None, problems=(f"cannot read this process's cgroups: {exc}",))
        return _support
    v2 = _probe_v2(mounts, own)
    if v2.usable:
        _support = v2
        return _support
    v1 = _probe_v1(mounts, own)
    _support = v1 if v1.usable else CgroupSupport(None, problems=v2.problems + v1.problems)
    return _support


class SandboxCgroup:
    """The group of one sandbox: created with its limits, joined by the sandbox's first process, killed and removed at
    the end."""

    def __init__(self, support: CgroupSupport, uid: int, *, memory_bytes: int, pids: int, cpus: float) -> None:
        if not support.usable:
            raise OSError("no usable cgroup: " + "; ".join(support.problems))
        self.version = support.version
        self.dirs = {c: os.path.join(support.parents[c], f"{GROUP_PREFIX}{uid}") for c in CONTROLLERS}
        self._unique_dirs = sorted(set(self.dirs.values()))
        for directory in self._unique_dirs:
            if os.path.isdir(directory):
                self._empty(directory)  # left by a failforge that died while it held this uid
                self._rmdir(directory)
            os.mkdir(directory, 0o755)
        quota = max(1000, int(cpus * CPU_PERIOD_US))
        if self.version == 2:
            group = self.dirs["memory"]
            _write(os.path.join(group, "memory.max"), str(memory_bytes))
            if os.path.exists(os.path.join(group, "memory.swap.max")):
                _write(os.path.join(group, "memory.swap.max"), "0")
            _write(os.path.join(group, "pids.max"), str(pids))
            _write(os.path.join(group, "cpu.max"), f"{quota} {CPU_PERIOD_US}")
        else:
            memory = self.dirs["memory"]
            _write(os.path.join(memory, "memory.limit_in_bytes"), str(memory_bytes))
            if os.path.exists(os.path.join(memory, "memory.memsw.limit_in_bytes")):
                _write(os.path.join(memory, "memory.memsw.limit_in_bytes"), str(memory_bytes))
            _write(os.path.join(self.dirs["pids"], "pids.max"), str(pids))
            _write(os.path.join(self.dirs["cpu"], "cpu.cfs_period_us"), str(CPU_PERIOD_US))
            _write(os.path.join(self.dirs["cpu"], "cpu.cfs_quota_us"), str(quota))

    def join_argv(self) -> list[str]:
        """The prefix that starts a command inside this group: ``sh -c JOIN_SCRIPT ... --``."""
        return [
            "/bin/sh",
            "-c",
            JOIN_SCRIPT,
            "failforge-sandbox",
            *(os.path.join(d, "cgroup.procs") for d in self._unique_dirs),
            "--",
        ]

    def pids(self) -> list[int]:
        try:
            with open(os.path.join(self.dirs["memory"], "cgroup.procs"), encoding="ascii") as handle:
                return [int(x) for x in handle.read().split()]
        except OSError:
            return []

    def oom_kills(self) -> int | None:
        """How many processes the kernel killed for the memory limit (None where the kernel does not say)."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            with open(os.path.join(self.dirs["memory"], name), encoding="ascii") as handle:
                for line in handle:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            pass
        return None

    def kill(self, settle: float = 5.0) -> None:
        """SIGKILL everything in the group and wait until it is empty."""
        for directory in self._unique_dirs:
            self._empty(directory, settle)

    def remove(self) -> None:
        self.kill()
        for directory in self._unique_dirs:
            self._rmdir(directory)

    @staticmethod
    def _empty(directory: str, settle: float = 5.0) -> None:
        kill_file = os.path.join(directory, "cgroup.kill")
        if os.path.exists(kill_file):
            try:
                _write(kill_file, "1")
            except OSError:
                pass
        deadline = time.monotonic() + settle
        while True:
            try:
                with open(os.path.join(directory, "cgroup.procs"), encoding="ascii") as handle:
                    members = [int(x) for x in handle.read().split()]
            except OSError:
                return
            if not members or time.monotonic() > deadline:
                return
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.002)

    @staticmethod
    def _rmdir(directory: str, settle: float = 5.0) -> None:
        deadline = time.monotonic() + settle
        while True:
            try:
                os.rmdir(directory)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                # EBUSY while the last killed processes are still being torn down.
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return
                time.sleep(0.005)


def sweep_stale_groups(support: CgroupSupport, claim: Callable[[int], Callable[[], None] | None]) -> None:
    """Empty and remove sandbox groups that no live sandbox holds (left by a failforge that was killed).

    ``claim(uid)`` tries to lease that uid without waiting and returns its release function, or None
    when a live sandbox holds it; only unclaimed groups are touched, and only while claimed.
    """
    if not support.usable:
        return
    uids: set[int] = set()
    for parent in set(support.parents.values()):
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        uids.update(
            int(n[len(GROUP_PREFIX) :])
            for n in names
            if n.startswith(GROUP_PREFIX) and n[len(GROUP_PREFIX) :].isdigit()
        )
    for uid in sorted(uids):
        release = claim(uid)
        if release is None:
            continue
        try:
            for directory in sorted(
                {os.path.join(parent, f"{GROUP_PREFIX}{uid}") for parent in support.parents.values()}
            ):
                SandboxCgroup._empty(directory)
                SandboxCgroup._rmdir(directory)
        finally:
            release()
