"""The ledger: one SQLite row per planned attempt, so a campaign can be killed at any moment and resumed.

Write order makes it exactly-once: the driver appends the result line to its JSONL file (one write,
fsync) *before* it marks the attempt finished in the ledger. A kill between the two leaves an attempt
that looks unfinished but whose line exists; on restart :meth:`Ledger.reconcile` reads the output
files and settles such attempts from them, so nothing is redone twice and nothing is lost. A kill in
the middle of a write can leave a torn last line; :func:`repair_jsonl` cuts it off before anything
else reads the file (that attempt is then simply redone).

Each attempt is in exactly one output file, in at most one line: an attempt put back in the queue to be
retried leaves failed.jsonl before it runs again (:meth:`Ledger.requeue_failed`), so a reader never sees
an attempt both failed and gold.
"""

from __future__ import annotations

import datetime as _dt
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from failforge.errors import ConfigError
from failforge.jsonl import read_jsonl

STATES = ("planned", "running", "done", "rejected", "failed")
FILE_STATE = {"gold.jsonl": "done", "rejected.jsonl": "rejected", "failed.jsonl": "failed"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
    attempt_id TEXT PRIMARY KEY,
    seed_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    mode TEXT NOT NULL,
    sample INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('planned','running','done','rejected','failed')),
    tries INTEGER NOT NULL DEFAULT 0,
    interruptions INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    error_kind TEXT,
    updated_at TEXT NOT NULL
);
"""
#: Columns added after the first release; an older ledger gets them on open.
_ADDED_COLUMNS = {"interruptions": "INTEGER NOT NULL DEFAULT 0", "error_kind": "TEXT"}
#: Failure kinds a later run retries by default (within the try budget): the world was at fault, not the seed.
RETRYABLE_KINDS = frozenset({"infrastructure"})


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat()


def repair_jsonl(path: Path) -> int:
    """Cut a torn last line (no trailing newline) off ``path``; returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return 0
        # Walk back to the last newline.
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            handle.seek(start)
            data = handle.read(pos - start)
            idx = data.rfind(b"\n")
            if idx >= 0:
                keep = start + idx + 1
                handle.truncate(keep)
                return size - keep
            pos = start
        handle.truncate(0)
        return size


def _attempt_of(line: bytes) -> str | None:
    from failforge.errors import SeedFormatError
    from failforge.jsonl import parse_json

    try:
        record = parse_json(line.decode("utf-8"))
    except (SeedFormatError, UnicodeDecodeError):
        return None
    if not isinstance(record, dict):
        return None
    attempt = record.get("attempt_id") or (record.get("provenance") or {}).get("attempt_id")
    return attempt if isinstance(attempt, str) else None


def drop_superseded_failures(output: Path, drop: set[str]) -> int:
    """Rewrite ``output/failed.jsonl`` (atomically) without the lines of the attempts in ``drop``, and with
    only the last line of every other attempt; returns the lines removed.

    A failed line is superseded when its attempt is run again (requeued, then done, rejected or failed
    anew): readers of the output files see each attempt once, in the file of its current state. Lines
    whose attempt cannot be read are kept.
    """
    path = output / "failed.jsonl"
    if not path.exists():
        return 0
    lines = path.read_bytes().splitlines(keepends=True)
    attempts = [_attempt_of(line) for line in lines]
    last = {attempt: i for i, attempt in enumerate(attempts) if attempt is not None}
    keep = [
        line
        for i, (line, attempt) in enumerate(zip(lines, attempts, strict=True))
        if attempt is None or (attempt not in drop and last[attempt] == i)
    ]
    if len(keep) == len(lines):
        return 0
    tmp = path.with_name(f".{path.name}.rewrite")
    with open(tmp, "wb") as handle:
        handle.write(b"".join(keep))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    folder = os.open(output, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return len(lines) - len(keep)


def attempt_ids_in(path: Path) -> list[str]:
    ids: list[str] = []
    if not path.exists():
        return ids
    for item in read_jsonl(path):  # a line it cannot read names no attempt: that attempt runs again
        if isinstance(item, tuple):
            record, provenance = item[1], item[1].get("provenance")
            attempt = record.get("attempt_id") or (
                provenance.get("attempt_id") if isinstance(provenance, dict) else None
            )
            if isinstance(attempt, str) and attempt:
                ids.append(attempt)
    return ids


class Ledger:
    """SQLite file in the output folder. Only the driver writes to it (one connection, one thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            have = {row[1] for row in self.db.execute("PRAGMA table_info(attempts)")}
            for column, decl in _ADDED_COLUMNS.items():
                if column not in have:
                    self.db.execute(f"ALTER TABLE attempts ADD COLUMN {column} {decl}")
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"{path} is not a failforge ledger ({exc}); move it away to start this campaign afresh (the JSONL"
                " results beside it are kept)"
            ) from exc

    def close(self) -> None:
        self.db.close()

    def bound_hash(self) -> str | None:
        """The config hash of the campaign this ledger is bound to (None: none yet)."""
        row = self.db.execute("SELECT value FROM meta WHERE key='config_hash'").fetchone()
        return str(row[0]) if row else None

    def bind(self, config_hash: str, *, force: bool = False) -> None:
        """Refuse to mix two different campaigns in one folder (unless forced)."""
        bound = self.bound_hash()
        if bound and bound != config_hash and not force:
            raise ConfigError(
                f"{self.path.parent} holds a different campaign (config hash {bound}; this one is {config_hash}); "
                "use a new output folder (or --force to continue anyway)"
            )
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('config_hash', ?)", (config_hash,))

    def plan(self, attempts: Iterable[tuple[str, str, int, str, int]]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO attempts(attempt_id, seed_id, step, mode, sample, state, updated_at) VALUES"
                " (?,?,?,?,?,'planned',?)",
                [(*a, _now()) for a in attempts],
            )

    def reconcile(self, output: Path, max_interruptions: int) -> dict[str, int]:
        """Make the ledger agree with the output files, then requeue attempts a crash interrupted.

        A line in a result file is the truth (the driver writes it before the ledger). An attempt still
        ``running`` was cut off by a crash or SIGKILL of the whole process, not by its own fault: it is
        requeued (behind the others, so a crash-prone attempt is not always the first one redone) and
        only given up after ``max_interruptions``, as a failure of kind ``interrupted`` that
        ``--retry-failed`` can still retry.
        """
        stats = {
            "settled_from_files": 0,
            "requeued": 0,
            "lost_results": 0,
            "given_up": 0,
            "torn_bytes": 0,
            "superseded_failed_lines": 0,
        }
        in_files: dict[str, str] = {}
        failed_lines: dict[str, int] = {}
        for name, state in FILE_STATE.items():
            stats["torn_bytes"] += repair_jsonl(output / name)
            for attempt in attempt_ids_in(output / name):
                in_files.setdefault(attempt, state)  # gold, then rejected, then failed: the best outcome wins
                if state == "failed":
                    failed_lines[attempt] = failed_lines.get(attempt, 0) + 1
        with self.db:
            rows = self.db.execute("SELECT attempt_id, state, interruptions, tries FROM attempts").fetchall()
            for attempt, state, interruptions, tries in rows:
                file_state = in_files.get(attempt)
                if state == "running" and file_state == "failed" and failed_lines.get(attempt, 0) < tries:
                    file_state = None  # the failed line is an earlier try's; this try was cut off
                if file_state and state != file_state and state != "planned":
                    self.db.execute(
                        "UPDATE attempts SET state=?, updated_at=? WHERE attempt_id=?", (file_state, _now(), attempt)
                    )
                    stats["settled_from_files"] += 1
                elif file_state and state == "planned" and file_state != "failed":
                    self.db.execute(
                        "UPDATE attempts SET state=?, updated_at=? WHERE attempt_id=?", (file_state, _now(), attempt)
                    )
                    stats["settled_from_files"] += 1
                elif not file_state and state in ("done", "rejected", "failed"):
                    self.db.execute(
                        "UPDATE attempts SET state='planned', updated_at=? WHERE attempt_id=?", (_now(), attempt)
                    )
                    stats["lost_results"] += 1
                elif state == "running" and file_state is None:
                    if interruptions + 1 >= max_interruptions:
                        self.db.execute(
                            "UPDATE attempts SET state='failed', error=?, error_kind='interrupted',"
                            " interruptions=interruptions+1, updated_at=? WHERE attempt_id=?",
                            (
                                (
                                    f"the run was cut off {interruptions + 1} times while this attempt was running;"
                                    " given up (--retry-failed retries it)"
                                ),
                                _now(),
                                attempt,
                            ),
                        )
                        stats["given_up"] += 1
                    else:
                        self.db.execute(
                            "UPDATE attempts SET state='planned', interruptions=interruptions+1, updated_at=? WHERE"
                            " attempt_id=?",
                            (_now(), attempt),
                        )
                        stats["requeued"] += 1
        # A folder written before failed lines were superseded on a retry may hold an attempt twice (an
        # earlier failed line beside its gold line, or one failed line per try): keep its current one.
        states = dict(self.db.execute("SELECT attempt_id, state FROM attempts").fetchall())
        stale = {a for a in failed_lines if a in states and states[a] != "failed"}
        stats["superseded_failed_lines"] = drop_superseded_failures(output, stale) if failed_lines else 0
        return stats

    def requeue_failed(self, *, everything: bool, max_tries: int) -> int:
        """Put failed attempts back in the queue: infrastructure failures within the try budget by default,
        every failure (drift, errors, given-up interruptions) with ``everything``.

        Their lines leave failed.jsonl first: a requeued attempt is in no output file until its new try
        writes one line, so an attempt retried into gold is not also still "failed" for a reader. (A
        crash between the two steps leaves a failed attempt without a line; :meth:`reconcile` requeues it.)
        """
        if everything:
            rows = self.db.execute("SELECT attempt_id FROM attempts WHERE state='failed'").fetchall()
        else:
            kinds = ",".join(f"'{k}'" for k in sorted(RETRYABLE_KINDS))
            rows = self.db.execute(
                f"SELECT attempt_id FROM attempts WHERE state='failed' AND error_kind IN ({kinds}) AND tries < ?",
                (max_tries,),
            ).fetchall()
        ids = [row[0] for row in rows]
        if not ids:
            return 0
        drop_superseded_failures(self.path.parent, set(ids))
        reset = ", interruptions=0" if everything else ""
        with self.db:
            self.db.executemany(
                f"UPDATE attempts SET state='planned'{reset}, updated_at=? WHERE attempt_id=? AND state='failed'",
                [(_now(), a) for a in ids],
            )
        return len(ids)

    def release_running(self) -> int:
        """A clean interruption (Ctrl-C, SIGTERM): attempts in flight go back to the queue and the try
        does not count against them."""
        with self.db:
            cur = self.db.execute(
                "UPDATE attempts SET state='planned', tries=MAX(tries-1, 0), updated_at=? WHERE state='running'",
                (_now(),),
            )
        return cur.rowcount

    def pending(self) -> list[str]:
        return [
            r[0]
            for r in self.db.execute(
                "SELECT attempt_id FROM attempts WHERE state='planned' ORDER BY interruptions, rowid"
            )
        ]

    def given_up(self) -> list[tuple[str, str]]:
        return list(
            self.db.execute("SELECT attempt_id, error FROM attempts WHERE state='failed' AND error_kind='interrupted'")
        )

    def mark_running(self, attempt_id: str) -> None:
        self.db.execute(
            "UPDATE attempts SET state='running', tries=tries+1, updated_at=? WHERE attempt_id=?", (_now(), attempt_id)
        )

    def finish(self, attempt_id: str, state: str, error: str | None = None, kind: str | None = None) -> None:
        if state not in STATES[2:]:
            raise ValueError(state)
        self.db.execute(
            "UPDATE attempts SET state=?, error=?, error_kind=?, updated_at=? WHERE attempt_id=?",
            (state, error, kind, _now(), attempt_id),
        )

    def counts_by_mode(self) -> dict[str, dict[str, int]]:
        """Attempts per planned mode and state (what a build's pilot computes yields from)."""
        out: dict[str, dict[str, int]] = {}
        for mode, state, n in self.db.execute("SELECT mode, state, COUNT(*) FROM attempts GROUP BY mode, state"):
            out.setdefault(mode, {s: 0 for s in STATES})[state] = n
        return out

    def counts(self) -> dict[str, int]:
        out = {state: 0 for state in STATES}
        for state, n in self.db.execute("SELECT state, COUNT(*) FROM attempts GROUP BY state"):
            out[state] = n
        return out
