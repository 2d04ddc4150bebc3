"""Health at a glance: the last scan, sources by client and state, recent health events
by type (any type a scan emits, with no list kept here), delivery backlog, the lock."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from telltale.index.filters import Filters

#: Recent health events listed one by one (the counts cover them all).
RECENT = 10


def last_scan(conn: sqlite3.Connection) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT scan_id, at, duration_s, emitted, quarantined, errors, detections, sources FROM ix_scans"
        " ORDER BY at DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    sources = json.loads(row[7]) if row[7] else []
    by_client: dict[str, dict[str, int]] = {}
    for source in sources:
        if isinstance(source, dict):
            counts = by_client.setdefault(str(source.get("client", "?")), {})
            status = str(source.get("status", "?"))
            counts[status] = counts.get(status, 0) + 1
    return {
        "scan_id": row[0],
        "at": row[1],
        "duration_s": row[2],
        "result": "errors" if row[5] else ("partial" if row[4] else "ok"),
        "emitted": row[3],
        "quarantined": row[4],
        "scanner_errors": row[5],
        "detections": row[6],
        "sources_by_client": {k: dict(sorted(v.items())) for k, v in sorted(by_client.items())},
    }


def scans_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM ix_scans").fetchone()[0])


def health(conn: sqlite3.Connection, filters: Filters) -> dict[str, Any]:
    """Health events in the filters' time range: counts by action and type, the latest few."""
    parts: list[str] = []
    args: list[Any] = []
    if filters.since:
        parts.append("at >= ?")
        args.append(filters.since)
    if filters.until:
        parts.append("at < ?")
        args.append(filters.until)
    if filters.clients:
        parts.append(f"client IN ({','.join('?' * len(filters.clients))})")
        args.extend(filters.clients)
    where = (" WHERE " + " AND ".join(parts)) if parts else ""
    counts: dict[str, dict[str, int]] = {}
    for action, kind, n in conn.execute(
        f"SELECT action, coalesce(type, ''), count(*) FROM ix_health{where} GROUP BY action, type",
        args,
    ):
        counts.setdefault(action, {})[kind or action] = int(n)
    recent = [
        {"at": r[0], "action": r[1], "type": r[2], "severity": r[3], "client": r[4], "source_kind": r[5],
         "message": r[6]}
        for r in conn.execute(
            f"SELECT at, action, type, severity, client, source_kind, message FROM ix_health{where}"
            " ORDER BY at DESC LIMIT ?",
            [*args, RECENT],
        )
    ]  # fmt: skip
    return {"counts": counts, "recent": recent}


def index_counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {
        "events": int(conn.execute("SELECT coalesce(sum(length(ids)), 0) / 8 FROM ix_seen").fetchone()[0]),
        "sessions": int(conn.execute("SELECT count(*) FROM ix_sessions").fetchone()[0]),
        "detections": int(conn.execute("SELECT count(*) FROM ix_detections").fetchone()[0]),
    }


def delivery(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Per remote output: queued, retrying, blocked and dead items, and why it is blocked."""
    has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox_item'").fetchone()
    if has is None:
        return []
    out: dict[str, dict[str, Any]] = {}
    for sink, state, n in conn.execute("SELECT sink, state, count(*) FROM outbox_item GROUP BY sink, state"):
        out.setdefault(sink, {"sink": sink})[state] = int(n)
    for sink, reason, blocked_at, last_error in conn.execute(
        "SELECT sink, blocked_reason, blocked_at, last_error FROM outbox_sink"
    ):
        entry = out.setdefault(sink, {"sink": sink})
        if blocked_at is not None:
            entry["blocked_reason"] = reason
        if last_error:
            entry["last_error"] = last_error
    return [out[k] for k in sorted(out)]


def lock_holder(state_path: str) -> dict[str, Any] | None:
    """Who holds the state's writer lock now (read without locking anything), or None."""
    from telltale.lock import holder

    held = holder(state_path)
    if held is None:
        return None
    return {"pid": held.pid, "command": held.command, "since": held.since, "host": held.host,
            "describe": held.describe()}  # fmt: skip


def watch_processes() -> list[dict[str, Any]] | None:
    """``telltale watch`` processes of this user, from ``/proc`` (``None`` where there is none)."""
    import os

    proc = "/proc"
    if not os.path.isdir(proc) or not hasattr(os, "getuid"):
        return None
    uid = os.getuid()
    found: list[dict[str, Any]] = []
    for entry in os.listdir(proc):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat(f"{proc}/{entry}").st_uid != uid:
                continue
            with open(f"{proc}/{entry}/cmdline", "rb") as fh:
                argv = fh.read(4096).split(b"\0")
        except OSError:
            continue
        words = [a.decode("utf-8", "replace") for a in argv if a]
        names = [os.path.basename(w) for w in words[:3]]
        if ("telltale" in names or "telltale" in words[:3]) and "watch" in words[1:6]:
            found.append({"pid": int(entry), "command": " ".join(words)[:200]})
    return found
