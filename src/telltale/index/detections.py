"""Detections, newest first, with the session, agent and project they belong to."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from telltale.index.filters import Filters


@dataclass(frozen=True)
class DetectionRow:
    id: str
    at: str
    client: str | None
    rule_id: str | None
    rule_name: str | None
    severity: str | None
    score: float | None
    category: str | None
    message: str | None
    tool: str | None
    evidence: list[dict[str, Any]]
    session_id: str | None
    agent: str | None
    project: str | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "at": self.at, "severity": self.severity, "score": self.score, "rule_id": self.rule_id,
            "rule_name": self.rule_name, "category": self.category, "client": self.client, "agent": self.agent,
            "session_id": self.session_id, "project": self.project, "tool": self.tool, "message": self.message,
            "evidence": self.evidence,
        }  # fmt: skip


def list_detections(conn: sqlite3.Connection, filters: Filters, limit: int | None = None) -> list[DetectionRow]:
    clause, args = filters.session_clause("s", client_column="d.client")
    parts = [clause] if clause else []
    if filters.since:
        parts.append("d.at >= ?")
        args.append(filters.since)
    if filters.until:
        parts.append("d.at < ?")
        args.append(filters.until)
    if filters.severity:
        parts.append("d.severity >= ?")
        args.append(filters.severity)
    where = (" WHERE " + " AND ".join(parts)) if parts else ""
    sql = (
        "SELECT d.id, d.at, d.client, d.rule_id, d.rule_name, d.severity_name, d.score, d.category, d.message, d.tool,"
        " d.evidence, s.session_id, s.agent, coalesce(s.cwd, s.cwd_hash)"
        f" FROM ix_detections d LEFT JOIN ix_sessions s ON s.id = d.session{where} ORDER BY d.at DESC, d.id"
    )
    if limit:
        sql += " LIMIT ?"
        args.append(limit)
    return [_row(r, r[11], r[12], r[13]) for r in conn.execute(sql, args)]


def _row(r: Any, session_id: str | None, agent: str | None, project: str | None) -> DetectionRow:
    return DetectionRow(
        id=r[0], at=r[1], client=r[2], rule_id=r[3], rule_name=r[4], severity=r[5], score=r[6], category=r[7],
        message=r[8], tool=r[9], evidence=json.loads(r[10]) if r[10] else [], session_id=session_id, agent=agent,
        project=project,
    )


def for_session(conn: sqlite3.Connection, session_rowid: int) -> list[DetectionRow]:
    rows = conn.execute(
        "SELECT d.id, d.at, d.client, d.rule_id, d.rule_name, d.severity_name, d.score, d.category, d.message,"
        " d.tool, d.evidence FROM ix_detections d WHERE d.session = ? ORDER BY d.at",
        (session_rowid,),
    )
    return [_row(r, None, None, None) for r in rows]
