"""``telltale report -o FILE.html``: one self-contained HTML page over the index, with the
read side's filters: overview, sessions, timelines, detections. It reads only the index,
the log spans it names and, with ``--content full``, the agents' own stores."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from telltale.cli import readside

_CONTENT_HELP = (
    "how much text the page holds: none (actions, sizes and hashes; no command, path, URL or project), "
    "redacted (commands, paths, URLs), log (default: what the log holds), full (also texts read back from "
    "the agents' stores on this machine, where a record still matches the log's hash)"
)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report", help="one self-contained HTML page: overview, sessions, timelines, detections",
        description="Write one self-contained HTML page from the local index: an overview, the sessions, each "
        "session's timeline and the detections; everything in it is redacted.",
    )
    p.add_argument("-o", "--output", required=True, metavar="FILE.html", help="where to write the page ('-': stdout)")
    p.add_argument("--content", choices=("none", "redacted", "log", "full"), default="log", help=_CONTENT_HELP)
    p.add_argument("--force", action="store_true", help="replace FILE.html if it exists")
    readside.add_paths(p)
    readside.add_filters(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from telltale.errors import UsageError
    from telltale.report.data import Options, collect
    from telltale.report.render import render

    target = args.output
    if target != "-":
        target = os.path.abspath(os.path.expanduser(target))
        if os.path.isdir(target):
            raise UsageError(f"--output {target} is a directory: name a file such as report.html")
        if os.path.exists(target) and not args.force:
            raise UsageError(f"--output {target} exists: pass --force to replace it")
        if not os.path.isdir(os.path.dirname(target)):
            raise UsageError(f"--output {target}: its directory does not exist")
    filters = readside.filters_of(args)
    conn = readside.open_index(args)
    filters = readside.with_clients(filters, args, conn)  # the same --client as every command
    try:
        options = Options(
            content=args.content, store_text=args.content == "full", log_path=readside.log_path_of(args, conn),
            state_path=readside.state_path_of(args),
        )  # fmt: skip
        data = collect(conn, filters, options)
    finally:
        conn.close()
    page = render(data).encode("utf-8")
    if target == "-":
        sys.stdout.buffer.write(page)
        return 0
    _write(target, page)
    counts = data["overview"]["counts"]
    print(
        f"report: {target} ({len(page) / 1e6:.1f} MB): {counts['sessions']} sessions, {counts['events']} events, "
        f"{counts['detections']} detections",
        file=sys.stderr,
    )
    return 0


def _write(target: str, page: bytes) -> None:
    """Write beside the target and rename: a reader never sees half a page."""
    from telltale.errors import TelltaleError

    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(page)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise TelltaleError(f"cannot write the report to {target}: {exc.strerror or exc}") from exc
