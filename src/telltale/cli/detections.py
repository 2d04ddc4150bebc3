"""``telltale detections``: what the rules found, newest first, with where."""

from __future__ import annotations

import argparse
from typing import Any

from telltale.cli import readside


def register(sub: Any) -> None:
    p = sub.add_parser(
        "detections",
        help="detections, newest first, with their evidence",
        description=(
            "Detections from the local index, newest first, with severity, rule, client, session, project and "
            "redacted evidence."
        ),
    )
    readside.add_paths(p)
    readside.add_filters(p)
    readside.add_output(p, limit=100)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from telltale.index.detections import list_detections

    filters = readside.filters_of(args)  # a bad --since is reported before a missing index
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)
    try:
        rows = list_detections(conn, filters, args.limit or None)
    finally:
        conn.close()
    if args.json:
        readside.json_lines(d.as_dict() for d in rows)
        return 0
    readside.table(
        None,
        ("time", "severity", "rule", "client", "session", "project", "evidence"),
        (
            (readside.short_time(d.at, filters), d.severity, d.rule_id, d.client, (d.session_id or "")[:13],
             d.project, "; ".join(f"{e.get('field')}: {e.get('value')}" for e in d.evidence[:2]))
            for d in rows
        ),
        caption=None if rows else "no detections match",
    )
    return 0
