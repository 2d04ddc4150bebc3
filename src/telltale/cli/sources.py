"""``telltale sources``: list the session stores discovery finds, and what it rejected.

Read-only and metadata-only, so it is the safe first command on a new host. People on a
terminal get a table; pipes and ``--json`` get JSON lines (``"type": "source"`` objects,
then ``"type": "error"`` objects) so scripts never parse a table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, TextIO

import msgspec

from telltale.discovery import DiscoveryIssue, DiscoveryOptions, DiscoveryResult, discover
from telltale.events.envelope import path_hash
from telltale.sources.registry import unsupported_reason
from telltale.sources.spec import Source


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sources",
        help="list discovered session stores",
        description="List the session stores Telltale would read (client, kind, path, root type, how it "
        "was found) and the candidates it rejected. Reads directory metadata only.",
    )
    parser.add_argument(
        "--root",
        default=".",
        help="'.' (default) resolves stores from this host's environment; any other directory is a "
        "fixture tree or is treated as a home directory",
    )
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        metavar="ID",
        help="only these clients or source kinds (repeatable, or comma-separated)",
    )
    parser.add_argument(
        "--project-config",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML project roots (repeatable; default: $TELLTALE_PROJECT_CONFIG, else ~/github and ~/projects)",
    )
    parser.add_argument("--json", action="store_true", help="JSON lines even on a terminal")
    parser.set_defaults(handler=run)


def display_path(path: str) -> str:
    """A printable form of a path that may hold undecodable bytes (shown as ``\\xNN``)."""
    try:
        raw = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def source_record(source: Source) -> dict[str, str | int]:
    """One listed store; an unreadable one also carries its reason, path hash, size and mtime
    (what a SOC needs to see that this host runs an agent Telltale cannot read)."""
    record: dict[str, str | int] = {
        "type": "source",
        "client": source.client,
        "kind": source.kind,
        "path": display_path(source.path),
        "root_type": source.root_type.value,
        "found_by": source.found_by,
        "store_root": display_path(source.store_root),
    }
    reason = unsupported_reason(source.kind)
    if reason is not None:
        record.update({"status": "unsupported", "reason": reason, "path_hash": path_hash(source.path)})
        try:
            st = os.lstat(source.path)
        except OSError:
            pass
        else:
            record["size"] = st.st_size
            record["mtime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))
    return record


def issue_record(issue: DiscoveryIssue) -> dict[str, str]:
    return {"type": "error", "reason": issue.reason, "path": display_path(issue.path), "detail": issue.detail}


def write_json(result: DiscoveryResult, out: TextIO) -> None:
    encoder = msgspec.json.Encoder()
    for source in result.sources:
        out.write(encoder.encode(source_record(source)).decode("utf-8") + "\n")
    for issue in result.errors:
        out.write(encoder.encode(issue_record(issue)).decode("utf-8") + "\n")


def write_table(result: DiscoveryResult, out: TextIO, err: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    title = "Session stores" + (" (fixture tree)" if result.fixture_tree else "")
    if result.sources:
        table = Table(title=title)
        for column in ("client", "kind", "path", "root type", "found by", "status"):
            table.add_column(column, overflow="fold")
        for source in result.sources:
            reason = unsupported_reason(source.kind)
            table.add_row(
                source.client,
                source.kind,
                Text(display_path(source.path)),
                source.root_type.value,
                Text(source.found_by),
                f"unsupported ({reason})" if reason else "readable",
            )
        Console(file=out).print(table)
    if result.errors:
        errors = Table(title="Discovery errors")
        for column in ("reason", "path", "detail"):
            errors.add_column(column, overflow="fold")
        for issue in result.errors:
            errors.add_row(issue.reason, Text(display_path(issue.path)), Text(issue.detail))
        Console(file=err).print(errors)


def _clients(values: list[str]) -> tuple[str, ...]:
    return tuple(item.strip() for value in values for item in value.split(",") if item.strip())


def run(args: argparse.Namespace) -> int:
    """Exit 0 when readable stores were found and nothing was rejected, 1 otherwise
    (stores that are only ``unsupported`` do not count as usable)."""
    options = DiscoveryOptions(
        root=args.root,
        clients=_clients(args.client),
        project_configs=tuple(args.project_config),
    )
    result = discover(options)
    if args.json or not sys.stdout.isatty():
        write_json(result, sys.stdout)
    else:
        write_table(result, sys.stdout, sys.stderr)
    usable = [s for s in result.sources if unsupported_reason(s.kind) is None]
    if not usable:
        where = "this host's environment" if args.root == "." else display_path(args.root)
        found = "no session stores found" if not result.sources else "no readable session stores found"
        print(f"telltale: {found} (root: {where})", file=sys.stderr)
    sys.stdout.flush()
    return 0 if usable and not result.errors else 1
