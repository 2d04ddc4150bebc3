"""``telltale index rebuild``: derive the read-side index again from the log."""

from __future__ import annotations

import argparse
import os
from typing import Any

from telltale.cli import readside


def register(sub: Any) -> None:
    p = sub.add_parser(
        "index", help="the local index the read commands answer from",
        description="The local index (in the state database) that status, sessions, show, detections and usage "
        "answer from. Scans keep it up to date; rebuild it after restoring or moving a log.",
    )
    inner = p.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    r = inner.add_parser(
        "rebuild", help="rebuild the index from the log (and its rotated files)",
        description="Drop the index and build it again from the JSONL log and its rotated files.",
    )
    readside.add_paths(r)
    r.add_argument(
        "--wait-lock", type=float, default=0.0, metavar="SECONDS",
        help="when another writer holds the state, wait up to SECONDS for it instead of exiting 75 at once",
    )  # fmt: skip
    r.add_argument("--json", action="store_true", help="print the result as JSON")
    r.set_defaults(handler=run_rebuild)


def run_rebuild(args: argparse.Namespace) -> int:
    from telltale.index.rebuild import rebuild
    from telltale.state import StateStore

    state_path = readside.state_path_of(args)
    log_path = args.log_path
    if not log_path:
        log_path = _recorded_log(state_path) or readside.log_path_of(args, None)
    log_path = readside.require_log(os.path.abspath(os.path.expanduser(log_path)))
    import sys

    from telltale.lock import LockHolder, writer_lock

    def waiting(holder: LockHolder | None) -> None:
        who = holder.describe() if holder is not None else "another process"
        print(f"telltale: state {state_path} is in use by {who}; waiting (up to {args.wait_lock:g}s)",
              file=sys.stderr, flush=True)  # fmt: skip

    # A writer of the state like a scan: it takes the state's lock (exit 75 when held).
    with writer_lock(state_path, "index rebuild", wait=args.wait_lock, on_wait=waiting):
        store = StateStore(state_path)
        try:
            with store.transaction() as conn:
                result = rebuild(conn, log_path)
        finally:
            store.close()
    summary = {"log_path": log_path, "files": result.files, "lines": result.lines, "events": result.events,
               "duplicates": result.duplicates}  # fmt: skip
    if args.json:
        readside.json_lines([summary])
    else:
        print(
            f"indexed {result.events:,} events from {result.files} file(s) of {log_path} "
            f"({result.duplicates:,} duplicate lines counted once)"
        )
    return 0


def _recorded_log(state_path: str) -> str | None:
    if not os.path.exists(state_path):
        return None
    from telltale.index.db import IndexMissing, connect, meta

    try:
        conn = connect(state_path)
    except (IndexMissing, Exception):
        return None
    try:
        return meta(conn, "log_path")
    finally:
        conn.close()
