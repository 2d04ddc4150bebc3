"""What the read-side commands share: the filter flags, the index connection, and output
as an aligned table or JSON lines (``--json``).

These commands start fast (a few imports, one read-only query): ``telltale.cli.main``
loads only the one command module asked for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sqlite3
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from telltale.cli.clients import add_client_argument, read_side_clients
from telltale.cli.paths import PROFILES, profile_log_path, profile_state_path
from telltale.index.filters import Filters


def add_paths(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state-path", help="state database (default: $TELLTALE_STATE_PATH or the user state dir)")
    parser.add_argument("--log-path", help="JSONL event log (default: the log the index was built from)")
    parser.add_argument("--profile", choices=PROFILES, default="user",
                        help="whose state to read when --state-path is not given: user (default) or system "
                        "(the host service's)")


def add_filters(
    parser: argparse.ArgumentParser, *, severity: bool = True, session: bool = True, since: str | None = None
) -> None:
    group = parser.add_argument_group("filters")
    group.add_argument(
        "--since", metavar="WHEN", default=since,
        help="from: today, yesterday, 7d, 12h, 2026-03-01, 20260301, ISO time"
        + (f" (default {since})" if since else " (default: no limit)"),
    )
    group.add_argument("--until", metavar="WHEN", help="to (a date includes its whole day)")
    group.add_argument("--timezone", metavar="TZ", help="days in this IANA zone (default: the local zone, $TZ)")
    add_client_argument(group)
    group.add_argument("--project", metavar="TEXT", help="only projects whose path contains TEXT (or its hash)")
    if session:
        group.add_argument("--session", metavar="PREFIX", help="only the session whose id starts with PREFIX")
    if severity:
        group.add_argument("--severity", metavar="LEVEL", help="at least this severity (low, medium, high, critical)")


def add_output(parser: argparse.ArgumentParser, *, limit: int | None = None) -> None:
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    if limit is not None:
        parser.add_argument("--limit", type=int, default=limit, metavar="N", help=f"at most N rows (default {limit})")


def filters_of(args: argparse.Namespace) -> Filters:
    """The filter flags, ``--client`` names not resolved yet (see :func:`with_clients`)."""
    return Filters.build(
        since=getattr(args, "since", None),
        until=getattr(args, "until", None),
        clients=getattr(args, "client", None),
        project=getattr(args, "project", None),
        session=getattr(args, "session", None),
        severity=getattr(args, "severity", None),
        timezone=getattr(args, "timezone", None),
    )


def with_clients(filters: Filters, args: argparse.Namespace, conn: sqlite3.Connection | None) -> Filters:
    """``--client`` names resolved against the index ``conn``: names it knows pass at once,
    a source kind becomes its client, a name nobody knows is a usage error."""
    if not filters.clients:
        return filters
    indexed: list[str] = []
    if conn is not None:
        try:
            indexed = [row[0] for row in conn.execute("SELECT DISTINCT client FROM ix_sessions")]
        except sqlite3.Error:
            indexed = []
    return dataclasses.replace(filters, clients=read_side_clients(filters.clients, indexed))


def state_path_of(args: argparse.Namespace) -> str:
    profile = getattr(args, "profile", None) or "user"
    return os.path.abspath(os.path.expanduser(args.state_path or profile_state_path(profile)))


def open_index(args: argparse.Namespace) -> sqlite3.Connection:
    from telltale.index.db import connect

    return connect(state_path_of(args))


def log_path_of(args: argparse.Namespace, conn: sqlite3.Connection | None) -> str:
    if getattr(args, "log_path", None):
        return os.path.abspath(os.path.expanduser(str(args.log_path)))
    if conn is not None:
        from telltale.index.db import meta

        recorded = meta(conn, "log_path")
        if recorded:
            return str(recorded)
    return os.path.abspath(profile_log_path(getattr(args, "profile", None) or "user"))


def require_log(log_path: str) -> str:
    """``log_path``, or one clear line (exit 2) when neither it nor a rotated file of it is
    there to read (a directory is not a log)."""
    from telltale.errors import UsageError
    from telltale.index.logfiles import log_files

    if os.path.isdir(log_path) or not log_files(log_path):
        raise UsageError(f"no event log at {log_path} (pass --log-path)")
    return log_path


def json_lines(rows: Iterable[dict[str, Any]]) -> None:
    write = sys.stdout.write
    for row in rows:
        write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, right: Sequence[str] = (),
          footer: Sequence[Any] | None = None, caption: str | None = None) -> None:  # fmt: skip
    """A plain aligned table on stdout (bold header on a terminal).

    Hand-made rather than rich: a table of a few thousand rows prints in milliseconds,
    and the command does not pay rich's import. Every cell has its control characters
    replaced, so a value from the log cannot drive the terminal.
    """
    cells = [["" if v is None else str(v).translate(_CONTROLS) for v in row] for row in rows]
    foot = ["" if v is None else str(v) for v in footer] if footer is not None else None
    widths = [len(c) for c in columns]
    for row in (*cells, *([foot] if foot else [])):
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    aligned = [name in right for name in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            (v.rjust(w) if r else v.ljust(w)) for v, w, r in zip(values, widths, aligned, strict=True)
        ).rstrip()

    bold = is_terminal()
    out: list[str] = []
    if title:
        out.append(title)
    head = line(list(columns))
    out.append(f"\x1b[1m{head}\x1b[0m" if bold else head)
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(row) for row in cells)
    if foot:
        out.append("  ".join("-" * w for w in widths))
        out.append(line(foot))
    if caption:
        out.append(caption)
    sys.stdout.write("\n".join(out) + "\n")


def is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def clean(text: str) -> str:
    """A value from the log with its control characters replaced (safe on a terminal)."""
    return text.translate(_CONTROLS)


def number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


#: C0 controls and DEL: a value from the log may carry terminal escapes.
_CONTROLS = {c: "?" for c in (*range(0x20), 0x7F)}


def short_time(text: str | None, filters: Filters) -> str:
    """An index time in the filters' zone, to the minute."""
    if not text:
        return ""
    return _minute(text[:16] if len(text) > 16 and text.endswith("Z") else text, filters.zone)


@lru_cache(maxsize=8192)
def _minute(text: str, zone: Any) -> str:
    import datetime as dt

    try:
        moment = dt.datetime.fromisoformat(text + ":00+00:00" if len(text) == 16 else text)
    except ValueError:
        return text
    return str(zone.localize(moment).strftime("%Y-%m-%d %H:%M"))
