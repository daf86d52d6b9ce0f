"""A distinct host uid for every live sandbox, of either backend, from a reserved range.

Two sandboxes that run as the same uid can reach each other: through ``/proc/<pid>/root``, ``environ``
and ``mem`` of each other's processes, through each other's files, through signals. Namespaces hide
most of that, but an identity of its own is what makes the kernel refuse it in every case, so each
sandbox leases one uid for its lifetime:

- the range is ``UID_BASE`` .. ``UID_BASE + UID_COUNT - 1`` (0x70000000 onward: above systemd's
  container range, below its foreign range, and used by no Debian package); ``FAILFORGE_SANDBOX_UIDS``
  = ``BASE:COUNT`` moves it;
- a lease is an exclusive ``flock`` on ``<LOCK_DIR>/<uid>.lock``, held by failforge's own open file:
  the kernel releases it when failforge exits or dies, so a crash never leaks a uid, and two failforge
  processes (or two sandboxes in one) never hold the same one;
- a uid that still has a live process (a container a dead failforge left behind, not yet gone) is
  skipped even when its lock is free.
"""

from __future__ import annotations

import fcntl
import os
import pwd
from dataclasses import dataclass

from failforge.errors import ConfigError, InfrastructureError

UID_BASE = 0x7000_0000
UID_COUNT = 512
LOCK_DIR = "/run/failforge-sandbox"


def uid_range() -> range:
    """The reserved range, from ``FAILFORGE_SANDBOX_UIDS`` (``BASE:COUNT``) or the default."""
    raw = os.environ.get("FAILFORGE_SANDBOX_UIDS", "").strip()
    if not raw:
        return range(UID_BASE, UID_BASE + UID_COUNT)
    try:
        base, count = (int(x, 0) for x in raw.split(":"))
    except ValueError:
        raise ConfigError(f"FAILFORGE_SANDBOX_UIDS={raw!r}: expected BASE:COUNT, e.g. {UID_BASE}:{UID_COUNT}") from None
    if base < 1000 or count < 1 or base + count > 0xFFFF_FFFE:
        raise ConfigError(
            f"FAILFORGE_SANDBOX_UIDS={raw!r}: the range must lie in 1000 .. 4294967293 and hold at least one uid"
        )
    return range(base, base + count)


def range_conflicts(uids: range) -> list[str]:
    """Accounts of this machine that sit in the reserved range (a sandbox must not become one of them)."""
    return [f"{entry.pw_name} ({entry.pw_uid})" for entry in pwd.getpwall() if entry.pw_uid in uids]


def _uids_with_processes(uids: range) -> set[int]:
    busy: set[int] = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uid = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            if uid in uids:
                busy.add(uid)
    return busy


@dataclass
class UidLease:
    """One leased uid; :meth:`release` (or failforge's exit) gives it back."""

    uid: int
    _fd: int | None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None


def _try_lock(uid: int, lock_dir: str) -> UidLease | None:
    fd = os.open(os.path.join(lock_dir, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return UidLease(uid, fd)


def try_lease(uid: int, lock_dir: str = LOCK_DIR) -> UidLease | None:
    """That uid's lease if no live sandbox holds it (never waits), else None."""
    os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    return _try_lock(uid, lock_dir)


def lease_uid(lock_dir: str = LOCK_DIR) -> UidLease:
    """The first uid of the range that no live sandbox holds and no process runs as."""
    uids = uid_range()
    try:
        os.makedirs(lock_dir, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise InfrastructureError(f"cannot create the sandbox uid lock directory {lock_dir}: {exc.strerror}") from exc
    busy = _uids_with_processes(uids)
    for uid in uids:
        if uid in busy:
            continue
        lease = _try_lock(uid, lock_dir)
        if lease is not None:
            return lease
    raise InfrastructureError(
        f"all {len(uids)} sandbox uids ({uids.start}..{uids.stop - 1}) are in use; close sandboxes or widen"
        " FAILFORGE_SANDBOX_UIDS"
    )
