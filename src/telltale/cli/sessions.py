"""``telltale sessions``: one row per agent session, newest first."""

from __future__ import annotations

import argparse
from typing import Any

from telltale.cli import readside


def register(sub: Any) -> None:
    p = sub.add_parser(
        "sessions",
        help="agent sessions, newest first",
        description=(
            "Agent sessions from the local index, newest first: client, session id, project, messages, tool "
            "calls, detections, risk points (the session's last risk rollup) and tokens. `telltale show SESSION` "
            "prints one."
        ),
    )
    readside.add_paths(p)
    readside.add_filters(p)
    readside.add_output(p, limit=50)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from telltale.index.sessions import list_sessions, tokens_by_model

    filters = readside.filters_of(args)  # a bad --since is reported before a missing index
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)
    try:
        rows = list_sessions(conn, filters, args.limit or None)
        models = tokens_by_model(conn, rows)
    finally:
        conn.close()
    if args.json:
        readside.json_lines({**s.as_dict(), "tokens_by_model": models.get(s.rowid, {})} for s in rows)
        return 0
    readside.table(
        None,
        ("last", "client", "session", "project", "msgs", "tools", "det", "severity", "risk", "tokens"),
        (
            (readside.short_time(s.last_at, filters), s.client, s.session_id, s.project, s.messages, s.tool_calls,
             s.detections or "", s.severity or "", s.risk_points if s.risk_points is not None else "",
             readside.number(s.total))
            for s in rows
        ),
        right=("msgs", "tools", "det", "risk", "tokens"),
        caption=None if rows else "no sessions match",
    )
    return 0
