"""Read-only connections to the index: a reader never takes a write lock, so it never
blocks a scan (WAL: the scan keeps committing while a reader holds its snapshot)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from telltale.errors import TelltaleError, UsageError
from telltale.index.schema import INDEX_VERSION
from telltale.state import note_sqlite_open


class IndexMissing(TelltaleError):
    """No index yet (no scan has run against this state), or one of another version."""


def connect(state_path: str) -> sqlite3.Connection:
    """Open the state database read-only; fail with one clear line when it has no index."""
    if not os.path.exists(state_path):
        raise UsageError(f"no state database at {state_path}: run `telltale scan` first (or pass --state-path)")
    uri = Path(state_path).absolute().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        note_sqlite_open(state_path)
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA query_only = 1")
        row = conn.execute("SELECT value FROM ix_meta WHERE key = 'version'").fetchone()
    except sqlite3.Error as exc:
        if "no such table" in str(exc):
            raise IndexMissing(
                f"{state_path} has no index yet: run `telltale scan` or `telltale index rebuild`"
            ) from exc
        raise TelltaleError(f"cannot read the index in {state_path}: {exc}") from exc
    if row is None or row[0] != str(INDEX_VERSION):
        raise IndexMissing(f"the index in {state_path} is from another version: run `telltale index rebuild`")
    return conn


def meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM ix_meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else None
