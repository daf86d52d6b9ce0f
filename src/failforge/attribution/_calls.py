"""calls.jsonl: every live judge call of a run, one line per call, keyed by session.

A call is appended whole (one write, fsync) *before* its reply is used, so a run killed at any moment has
recorded every call whose answer anything depends on, and a resumed session replays them instead of asking
again. Writers may be threads of the driver or worker processes (``--executor process``, local Ray): each
append holds an exclusive ``flock`` on the file, so two lines never interleave.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from pydantic import BaseModel

from failforge.errors import SeedFormatError
from failforge.jobs import repair_jsonl
from failforge.jsonl import read_jsonl
from failforge.trajectory import Step, dump_line


class RecordedCall(BaseModel):
    """One line of calls.jsonl: a judge call (the boundary's step, request and response) and its session."""

    session: str
    step: Step


class CallStore:
    """calls.jsonl, appended by any thread or process of a run (a thread lock, then an flock on the file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, session: str, step: Step) -> None:
        payload = dump_line(RecordedCall(session=session, step=step)).encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                view = memoryview(payload)
                while view:  # a regular file takes it whole; a short write is finished, never left torn
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)  # closing releases the flock

    @staticmethod
    def load(path: Path, unread: list[str] | None = None) -> dict[str, list[Step]]:
        """Recorded calls by session. A line that cannot be read is named in ``unread`` and skipped: the
        session it belonged to is then short of that call and goes live (or fails with --recording)."""
        out: dict[str, list[Step]] = {}
        problems = unread if unread is not None else []
        if not path.exists():
            return out
        repair_jsonl(path)
        for item in read_jsonl(path):
            if isinstance(item, SeedFormatError):
                problems.append(str(item))
                continue
            number, data = item
            try:
                call = RecordedCall.model_validate(data)
            except (ValueError, RecursionError) as exc:
                problems.append(f"{path}:{number}: not a recorded judge call: {' '.join(str(exc).split())[:200]}")
                continue
            out.setdefault(call.session, []).append(call.step)
        for steps in out.values():
            steps.sort(key=lambda s: s.index)
        return out
