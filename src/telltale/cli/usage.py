"""``telltale usage daily|monthly|session|model``: tokens and cost, in ccusage's columns."""

from __future__ import annotations

import argparse
from typing import Any

from telltale.cli import readside

_VIEWS = ("daily", "monthly", "session", "model")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "usage",
        help="tokens (input, cache creation, cache read, output, total) and cost",
        description=(
            "Token usage (input, cache creation, cache read, output, total) and cost from the local index, per "
            "day, month, session or model; each provider response is counted once."
        ),
    )
    p.add_argument(
        "view", nargs="?", choices=_VIEWS, default="daily", help="group by: " + ", ".join(_VIEWS) + " (default daily)"
    )
    readside.add_paths(p)
    readside.add_filters(p, severity=False)
    readside.add_output(p)
    p.set_defaults(handler=run)


def _cost(value: float | None, complete: bool) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.2f}" + ("" if complete else " + unknown")


def run(args: argparse.Namespace) -> int:
    from telltale.index.usage import report

    filters = readside.filters_of(args)  # a bad --since is reported before a missing index
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)
    try:
        rows, total = report(conn, args.view, filters)
    finally:
        conn.close()
    if args.json:
        readside.json_lines([*(r.as_dict(args.view) for r in rows), {"totals": total.as_dict(args.view)}])
        return 0
    label = {"daily": "date", "monthly": "month", "session": "session", "model": "model"}[args.view]
    columns = (label, "models", "input", "cache create", "cache read", "output", "total", "cost (USD)")
    n = readside.number
    readside.table(
        f"Token usage by {label}" + (f" ({filters.zone.name} time)" if args.view in ("daily", "monthly") else ""),
        columns,
        (
            (r.key, ", ".join(sorted(r.models)), n(r.input), n(r.cache_creation), n(r.cache_read), n(r.output),
             n(r.total), _cost(r.cost, r.unpriced_tokens == 0))
            for r in rows
        ),
        right=columns[2:],
        footer=("Total", "", n(total.input), n(total.cache_creation), n(total.cache_read), n(total.output),
                n(total.total), _cost(total.cost, total.unpriced_tokens == 0)),
        caption=None if rows else "no usage matches",
    )
    return 0
