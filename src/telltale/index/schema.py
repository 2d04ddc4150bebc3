"""The index tables (prefixed ``ix_``), inside the state database.

Times are the events' own ``@timestamp`` text (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC), which
sorts as it reads. Usage is rolled up per 15-minute UTC bucket, so days in any time zone
(whole, half or quarter hours off UTC) are sums of buckets.
"""

from __future__ import annotations

import sqlite3

#: Bump when a table changes meaning: an index of another version is rebuilt, not read.
INDEX_VERSION = 5

#: Seconds per usage bucket.
BUCKET_SECONDS = 900

TABLES = (
    "ix_meta", "ix_files", "ix_seen", "ix_sessions", "ix_spans", "ix_responses", "ix_usage", "ix_detections",
    "ix_health", "ix_scans",
)  # fmt: skip
#: Tables of earlier index versions, dropped with them.
OLD_TABLES = ("ix_session_models", "ix_response_keys")

DDL = """
CREATE TABLE IF NOT EXISTS ix_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- Each log file the index points into, by identity (rotation renames files).
CREATE TABLE IF NOT EXISTS ix_files (
    id INTEGER PRIMARY KEY, device INTEGER NOT NULL, inode INTEGER NOT NULL, UNIQUE (device, inode)
);
-- event.id of every event indexed (first 60 bits, packed 64-bit integers), per session (0: none)
-- and window: the deduplication set.
CREATE TABLE IF NOT EXISTS ix_seen (id INTEGER PRIMARY KEY, session INTEGER NOT NULL, ids BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS ix_seen_session ON ix_seen (session);
CREATE TABLE IF NOT EXISTS ix_sessions (
    id INTEGER PRIMARY KEY,
    client TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent TEXT, agent_version TEXT, cwd TEXT, cwd_hash TEXT,
    parent_session_id TEXT, parent_call_id TEXT,
    first_at TEXT, last_at TEXT,
    events INTEGER NOT NULL DEFAULT 0,
    messages INTEGER NOT NULL DEFAULT 0,
    tool_calls INTEGER NOT NULL DEFAULT 0,
    detections INTEGER NOT NULL DEFAULT 0,
    max_severity INTEGER NOT NULL DEFAULT 0,
    input INTEGER NOT NULL DEFAULT 0, cache_creation INTEGER NOT NULL DEFAULT 0,
    cache_read INTEGER NOT NULL DEFAULT 0, output INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0,
    -- the session's last session_risk_summary (a snapshot: the last one wins)
    risk_points INTEGER, risk_severity INTEGER NOT NULL DEFAULT 0, risk_occurrences INTEGER,
    UNIQUE (client, session_id)
);
CREATE INDEX IF NOT EXISTS ix_sessions_last ON ix_sessions (last_at);
CREATE INDEX IF NOT EXISTS ix_sessions_parent ON ix_sessions (parent_session_id);

-- Where a session's events sit in the log: byte ranges of whole lines.
CREATE TABLE IF NOT EXISTS ix_spans (
    session INTEGER NOT NULL, file INTEGER NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS ix_spans_session ON ix_spans (session);
-- Provider responses keyed by the agent's own identity (60-bit hash), with what they added to
-- ix_usage: a later copy of the same response (a resumed or subagent transcript) moves them.
CREATE TABLE IF NOT EXISTS ix_responses (
    hash INTEGER PRIMARY KEY, session INTEGER NOT NULL, bucket INTEGER NOT NULL, model TEXT NOT NULL,
    input INTEGER NOT NULL, cache_creation INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    output INTEGER NOT NULL, total INTEGER NOT NULL
);
-- Usage per 15-minute UTC bucket, session and model (ccusage's columns, each response once).
CREATE TABLE IF NOT EXISTS ix_usage (
    bucket INTEGER NOT NULL, session INTEGER NOT NULL, model TEXT NOT NULL,
    responses INTEGER NOT NULL, input INTEGER NOT NULL, cache_creation INTEGER NOT NULL,
    cache_read INTEGER NOT NULL, output INTEGER NOT NULL, total INTEGER NOT NULL,
    PRIMARY KEY (bucket, session, model)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ix_usage_session ON ix_usage (session);
CREATE TABLE IF NOT EXISTS ix_detections (
    id TEXT PRIMARY KEY, at TEXT NOT NULL, session INTEGER, client TEXT, rule_id TEXT, rule_name TEXT,
    severity INTEGER NOT NULL, severity_name TEXT, score REAL, category TEXT, message TEXT,
    tool TEXT, evidence TEXT, file INTEGER, offset INTEGER, length INTEGER
);
CREATE INDEX IF NOT EXISTS ix_detections_at ON ix_detections (at);
CREATE INDEX IF NOT EXISTS ix_detections_session ON ix_detections (session);
-- Health events other than scan summaries, by action and type (new types need no code).
CREATE TABLE IF NOT EXISTS ix_health (
    id TEXT PRIMARY KEY, at TEXT NOT NULL, action TEXT NOT NULL, kind TEXT, type TEXT, severity TEXT,
    client TEXT, source_kind TEXT, message TEXT, file INTEGER, offset INTEGER, length INTEGER
);
CREATE INDEX IF NOT EXISTS ix_health_at ON ix_health (at);
CREATE TABLE IF NOT EXISTS ix_scans (
    scan_id TEXT PRIMARY KEY, at TEXT NOT NULL, duration_s REAL, emitted INTEGER, quarantined INTEGER,
    errors INTEGER, detections INTEGER, sources TEXT
);
CREATE INDEX IF NOT EXISTS ix_scans_at ON ix_scans (at);
"""


def ensure(conn: sqlite3.Connection) -> bool:
    """Create the tables (idempotent). An index of another version is dropped, to be rebuilt
    from the log: returns True then (the caller rebuilds it)."""
    dropped = False
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ix_meta'").fetchone()
    if has_meta is not None:
        row = conn.execute("SELECT value FROM ix_meta WHERE key = 'version'").fetchone()
        if row is None or row[0] != str(INDEX_VERSION):
            for table in (*TABLES, *OLD_TABLES):
                conn.execute(f"DROP TABLE IF EXISTS {table}")  # its indexes go with it
            has_meta = None
            dropped = True
    _each(conn, DDL)
    if has_meta is None:
        conn.execute("INSERT OR REPLACE INTO ix_meta(key, value) VALUES ('version', ?)", (str(INDEX_VERSION),))
    return dropped


def clear(conn: sqlite3.Connection) -> None:
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("INSERT OR REPLACE INTO ix_meta(key, value) VALUES ('version', ?)", (str(INDEX_VERSION),))


def _each(conn: sqlite3.Connection, script: str) -> None:
    """The statements one by one (``executescript`` would commit the caller's transaction)."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO ix_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
