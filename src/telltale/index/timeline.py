"""A session's timeline: its events read from the log spans the index recorded (never the
whole log), deduplicated by ``event.id``, in time order, with its subagents' timelines
nested under the tool call that spawned them."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

import msgspec

from telltale.index.logfiles import by_identity, read_lines
from telltale.index.sessions import Session, children

#: Subagent nesting followed at most this deep (a subagent's own subagents, …).
MAX_DEPTH = 4

_decode = msgspec.json.decode


@dataclass
class Timeline:
    session: Session
    entries: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (depth, event document)
    missing_spans: int = 0  # spans in log files rotated away since
    sessions: list[Session] = field(default_factory=list)


def events_of(conn: sqlite3.Connection, session: Session, files: dict[int, str]) -> tuple[list[dict[str, Any]], int]:
    """The session's own event documents, deduplicated and ordered; and how many spans are gone."""
    seen: set[str] = set()
    docs: list[dict[str, Any]] = []
    missing = 0
    spans = conn.execute(
        "SELECT file, start, end FROM ix_spans WHERE session = ? ORDER BY file, start", (session.rowid,)
    ).fetchall()
    for file_id, start, end in spans:
        path = files.get(file_id)
        if path is None:
            missing += 1
            continue
        for line in read_lines(path, start, end):
            try:
                doc = _decode(line)
            except msgspec.DecodeError:
                continue
            event_id = doc.get("event", {}).get("id") if isinstance(doc, dict) else None
            if not event_id or event_id in seen:
                continue
            seen.add(event_id)
            docs.append(doc)
    docs.sort(key=_order)
    return docs, missing


def _order(doc: dict[str, Any]) -> tuple[str, int, int]:
    tt = doc.get("telltale", {})
    detection = 1 if doc.get("event", {}).get("dataset") == "telltale.detection" else 0
    return (str(doc.get("@timestamp", "")), detection, int(tt.get("sequence", 0) or 0))


def file_paths(conn: sqlite3.Connection, log_path: str) -> dict[int, str]:
    """Index file id → the path that file has now (it may have been rotated)."""
    current = by_identity(log_path)
    out: dict[int, str] = {}
    for file_id, device, inode in conn.execute("SELECT id, device, inode FROM ix_files"):
        path = current.get((device, inode))
        if path is not None:
            out[int(file_id)] = path
    return out


def build(conn: sqlite3.Connection, session: Session, log_path: str) -> Timeline:
    files = file_paths(conn, log_path)
    timeline = Timeline(session)
    _add(conn, timeline, session, files, 0)
    return timeline


def _add(conn: sqlite3.Connection, timeline: Timeline, session: Session, files: dict[int, str], depth: int) -> None:
    timeline.sessions.append(session)
    docs, missing = events_of(conn, session, files)
    timeline.missing_spans += missing
    subs = children(conn, session) if depth < MAX_DEPTH else []
    by_call: dict[str, list[Session]] = {}
    loose: list[Session] = []
    calls = {_call_id(d) for d in docs if d.get("event", {}).get("action") == "tool_call"}
    for sub in subs:
        if sub.parent_call_id and sub.parent_call_id in calls:
            by_call.setdefault(sub.parent_call_id, []).append(sub)
        else:
            loose.append(sub)
    for doc in docs:
        timeline.entries.append((depth, doc))
        if doc.get("event", {}).get("action") == "tool_call":
            for sub in by_call.pop(_call_id(doc) or "", []):
                _add(conn, timeline, sub, files, depth + 1)
    for sub in loose:
        _add(conn, timeline, sub, files, depth + 1)


def _call_id(doc: dict[str, Any]) -> str | None:
    tool = (doc.get("gen_ai") or {}).get("tool") or {}
    call = tool.get("call") or {}
    value = call.get("id")
    return value if isinstance(value, str) else None
