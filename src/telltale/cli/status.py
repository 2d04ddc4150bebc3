"""``telltale status``: is Telltale healthy? Last scan, sources by state, health events,
delivery backlog, the state lock, the paths."""

from __future__ import annotations

import argparse
from typing import Any

from telltale.cli import readside


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        help="last scan, source states, health events, delivery backlog, lock holder",
        description=(
            "What Telltale knows now, from the local index: the last scan, source states, recent health events "
            "(--since, default 7d), the delivery backlog, who holds the state lock and running watches."
        ),
    )
    readside.add_paths(p)
    readside.add_filters(p, severity=False, session=False, since="7d")
    readside.add_output(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from telltale.index import status

    state_path = readside.state_path_of(args)
    filters = readside.filters_of(args)  # a bad --since is reported before a missing index
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)
    try:
        report: dict[str, Any] = {
            "state_path": state_path,
            "log_path": readside.log_path_of(args, conn),
            "last_scan": status.last_scan(conn),
            "scans": status.scans_count(conn),
            "index": status.index_counts(conn),
            "health": status.health(conn, filters),
            "delivery": status.delivery(conn),
            "lock": status.lock_holder(state_path),
            "watch": status.watch_processes(),
        }
    finally:
        conn.close()
    if args.json:
        readside.json_lines([report])
        return 0
    _print(report, filters)
    return 0


def _print(report: dict[str, Any], filters: Any) -> None:
    import sys

    lines: list[str] = []

    class _Out:
        @staticmethod
        def print(text: str) -> None:
            lines.append(readside.clean(text))

    console = _Out()
    scan = report["last_scan"]
    if scan is None:
        console.print("last scan: none recorded")
    else:
        console.print(
            f"last scan: {readside.short_time(scan['at'], filters)} ({scan['duration_s'] or 0:.2f} s), "
            f"result {scan['result']}: {scan['emitted']:,} events, {scan['quarantined']} quarantined, "
            f"{scan['scanner_errors']} source errors, {scan['detections']} detections"
        )
        for client, counts in scan["sources_by_client"].items():
            states = ", ".join(f"{n} {state}" for state, n in counts.items())
            console.print(f"  {client}: {states}")
    idx = report["index"]
    console.print(f"index: {idx['events']:,} events, {idx['sessions']:,} sessions, {idx['detections']:,} detections"
                  f" over {report['scans']} scans")  # fmt: skip
    health = report["health"]
    if health["counts"]:
        console.print("health events (since " + (readside.short_time(filters.since, filters) or "the start") + "):")
        for action, types in sorted(health["counts"].items()):
            console.print(f"  {action}: " + ", ".join(f"{t} ×{n}" for t, n in sorted(types.items())))
        for event in health["recent"]:
            console.print(
                f"    {readside.short_time(event['at'], filters)} {event['type'] or event['action']}"
                f"{' [' + event['client'] + ']' if event['client'] else ''}: {event['message']}"
            )
    else:
        console.print("health events: none in range")
    if report["delivery"]:
        for sink in report["delivery"]:
            counts = ", ".join(f"{k} {v}" for k, v in sink.items() if isinstance(v, int))
            blocked = f" BLOCKED ({sink['blocked_reason']})" if sink.get("blocked_reason") else ""
            console.print(f"delivery {sink['sink']}: {counts or 'empty'}{blocked}")
    else:
        console.print("delivery: no remote outputs queued")
    lock = report["lock"]
    if lock is None:
        console.print("state lock: free")
    else:
        console.print(f"state lock: held by {lock['describe']}")
    watchers = report["watch"]
    if watchers is None:
        console.print("watch: cannot tell on this platform")
    elif watchers:
        console.print("watch: running (" + ", ".join(f"pid {w['pid']}" for w in watchers) + ")")
    else:
        console.print("watch: not running")
    console.print(f"log: {report['log_path']}")
    console.print(f"state: {report['state_path']}")
    sys.stdout.write("\n".join(lines) + "\n")
