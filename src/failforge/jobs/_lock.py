"""An exclusive lock on a campaign or attribution output folder, so two runs never write the same attempts.

Two ``failforge generate -o OUT`` started at once would both plan and run every attempt and append
both results. The lock is an ``flock`` on ``OUT/.failforge.lock``, held for the whole run and released
by the kernel if the process dies (so a SIGKILLed run never leaves a stale lock); the file names the
holder's pid and start time for the message the second run prints.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import os
from pathlib import Path

from failforge.errors import ConfigError

LOCK_FILE = ".failforge.lock"


class FolderLock:
    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> FolderLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise ConfigError(
                f"output folder {self.path.parent} is in use by another failforge run ({holder}); "
                "wait for it to finish (it resumes from the same ledger) or choose another --output"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(
            fd, f"pid {os.getpid()} since {_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}\n".encode(), 0
        )
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
