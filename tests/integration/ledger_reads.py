"""Reading a running campaign's ledger from a test, read-only (the campaign's driver is its only writer)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def finished_attempts(ledger: Path) -> int:
    """Attempts the ledger shows finished (done, rejected or failed); 0 before the ledger exists or while locked."""
    if not ledger.exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True, timeout=5)
        try:
            return int(
                db.execute("SELECT COUNT(*) FROM attempts WHERE state IN ('done','rejected','failed')").fetchone()[0]
            )
        finally:
            db.close()
    except sqlite3.OperationalError:
        return 0
