"""Sessions: one row per agent session, newest first, and lookup by a unique prefix."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from telltale.errors import UsageError
from telltale.index.filters import SEVERITY_NAMES, Filters

_COLUMNS = (
    "s.id, s.client, s.session_id, s.agent, s.agent_version, s.cwd, s.cwd_hash, s.parent_session_id, "
    "s.parent_call_id, s.first_at, s.last_at, s.events, s.messages, s.tool_calls, s.detections, s.max_severity, "
    "s.input, s.cache_creation, s.cache_read, s.output, s.total, s.risk_points, s.risk_severity, s.risk_occurrences"
)


@dataclass(frozen=True)
class Session:
    rowid: int
    client: str
    session_id: str
    agent: str | None
    agent_version: str | None
    cwd: str | None
    cwd_hash: str | None
    parent_session_id: str | None
    parent_call_id: str | None
    first_at: str | None
    last_at: str | None
    events: int
    messages: int
    tool_calls: int
    detections: int
    max_severity: int
    input: int
    cache_creation: int
    cache_read: int
    output: int
    total: int
    #: From the session's last ``session_risk_summary`` (None: no rollup yet).
    risk_points: int | None = None
    risk_severity: int = 0
    risk_occurrences: int | None = None

    @property
    def project(self) -> str:
        return self.cwd or self.cwd_hash or ""

    @property
    def severity(self) -> str | None:
        return SEVERITY_NAMES.get(self.max_severity) if self.max_severity else None

    @property
    def risk_band(self) -> str | None:
        """The band of the session's risk points (``high``), from its last rollup."""
        return SEVERITY_NAMES.get(self.risk_severity) if self.risk_points is not None else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "session_id": self.session_id,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "project": self.project or None,
            "cwd_hash": self.cwd_hash,
            "parent_session_id": self.parent_session_id,
            "parent_call_id": self.parent_call_id,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "events": self.events,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "detections": self.detections,
            "max_severity": self.severity,
            "risk": None if self.risk_points is None else {
                "points": self.risk_points,
                "severity": self.risk_band,
                "occurrences": self.risk_occurrences,
            },
            "tokens": {
                "input": self.input,
                "cache_creation": self.cache_creation,
                "cache_read": self.cache_read,
                "output": self.output,
                "total": self.total,
            },
        }


def _where(filters: Filters) -> tuple[str, list[Any]]:
    clause, args = filters.session_clause("s")
    parts = [clause] if clause else []
    if filters.since:
        parts.append("s.last_at >= ?")
        args.append(filters.since)
    if filters.until:
        parts.append("s.first_at < ?")
        args.append(filters.until)
    if filters.severity:  # an alert that severe, or a session whose risk reached it
        parts.append("max(s.max_severity, s.risk_severity) >= ?")
        args.append(filters.severity)
    return (" WHERE " + " AND ".join(parts)) if parts else "", args


def list_sessions(conn: sqlite3.Connection, filters: Filters, limit: int | None = None) -> list[Session]:
    where, args = _where(filters)
    sql = f"SELECT {_COLUMNS} FROM ix_sessions s{where} ORDER BY s.last_at DESC, s.id DESC"
    if limit:
        sql += " LIMIT ?"
        args.append(limit)
    return [Session(*row) for row in conn.execute(sql, args)]


def resolve(conn: sqlite3.Connection, prefix: str) -> Session:
    """The one session whose id starts with ``prefix`` (a subagent's own id counts too)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM ix_sessions s WHERE substr(s.session_id, 1, ?) = ? ORDER BY s.session_id LIMIT 6",
        (len(prefix), prefix),
    ).fetchall()
    exact = [r for r in rows if r[2] == prefix]
    if len(exact) == 1:
        return Session(*exact[0])
    if not rows:
        raise UsageError(f"no session starts with {prefix!r} (see `telltale sessions`)")
    top = [r for r in rows if "/" not in r[2][len(prefix) :]] if len(rows) > 1 else rows
    if len(top) == 1:
        return Session(*top[0])  # a parent and its subagents: the parent
    names = ", ".join(r[2] for r in rows[:5])
    raise UsageError(f"{prefix!r} matches more than one session ({names}…): give more of the id")


def children(conn: sqlite3.Connection, session: Session) -> list[Session]:
    """Subagent sessions spawned from ``session``."""
    return [
        Session(*row)
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM ix_sessions s WHERE s.parent_session_id = ? AND s.client = ?"
            " ORDER BY s.first_at",
            (session.session_id, session.client),
        )
    ]


def models(conn: sqlite3.Connection, session: Session) -> list[dict[str, Any]]:
    return [
        {"model": r[0], "responses": r[1], "input": r[2], "cache_creation": r[3], "cache_read": r[4],
         "output": r[5], "total": r[6]}
        for r in conn.execute(
            "SELECT model, sum(responses), sum(input), sum(cache_creation), sum(cache_read), sum(output), sum(total)"
            " FROM ix_usage WHERE session = ? GROUP BY model ORDER BY 7 DESC",
            (session.rowid,),
        )
    ]  # fmt: skip


def tokens_by_model(conn: sqlite3.Connection, sessions: list[Session]) -> dict[int, dict[str, int]]:
    """Total tokens of each session by model, for a page of sessions (one query)."""
    out: dict[int, dict[str, int]] = {}
    if not sessions:
        return out
    import json

    for session, model, total in conn.execute(
        "SELECT session, model, sum(total) FROM ix_usage WHERE session IN (SELECT value FROM json_each(?))"
        " GROUP BY session, model",
        (json.dumps([s.rowid for s in sessions]),),
    ):
        out.setdefault(int(session), {})[model] = int(total)
    return out
