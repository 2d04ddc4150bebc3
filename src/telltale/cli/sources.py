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

from telltale.cli.clients import add_client_argument, check_names
from telltale.cli.paths import PROFILES
from telltale.discovery import DiscoveryIssue, DiscoveryOptions, DiscoveryResult, check_root, discover
from telltale.discovery.api import ProbedPlace, UserHome
from telltale.events.envelope import path_hash
from telltale.events.redaction import redact, redact_document
from telltale.exitcodes import ExitCode
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
    add_client_argument(parser)
    parser.add_argument(
        "--project-config",
        action="append",
        default=[],
        metavar="FILE",
        help="YAML project roots (repeatable; default: $TELLTALE_PROJECT_CONFIG, else ~/github and ~/projects)",
    )
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default="user",
        help="user (default): this user's stores; system: every local account's home from the account database "
        "(system accounts and missing homes skipped), each store listed with its user",
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
        # The hash events carry in ``telltale.source.path_hash``: this resolves one to its store.
        "path_hash": path_hash(source.path),
        "root_type": source.root_type.value,
        "found_by": source.found_by,
        "store_root": display_path(source.store_root),
    }
    if source.user:
        record["user"] = source.user
    reason = unsupported_reason(source.kind)
    if reason is not None:
        record.update({"status": "unsupported", "reason": reason})
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


def home_record(home: UserHome) -> dict[str, str | int]:
    """One account a system-profile discovery considered (``status``: scanned, or why skipped)."""
    return {"type": "home", "user": home.user, "uid": home.uid, "home": display_path(home.home), "status": home.status}


def write_json(result: DiscoveryResult, out: TextIO) -> None:
    encoder = msgspec.json.Encoder()
    for home in result.homes:
        out.write(encoder.encode(redact_document(home_record(home))).decode("utf-8") + "\n")
    for source in result.sources:
        out.write(encoder.encode(redact_document(source_record(source))).decode("utf-8") + "\n")
    for issue in result.errors:
        out.write(encoder.encode(redact_document(issue_record(issue))).decode("utf-8") + "\n")


def write_table(result: DiscoveryResult, out: TextIO, err: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if result.homes:
        homes = Table(title="Local accounts")
        for column in ("user", "uid", "home", "status"):
            homes.add_column(column, overflow="fold")
        for home in result.homes:
            homes.add_row(Text(home.user), str(home.uid), Text(display_path(home.home)), home.status)
        Console(file=out).print(homes)
    title = "Session stores" + (" (fixture tree)" if result.fixture_tree else "")
    per_user = bool(result.homes)
    if result.sources:
        table = Table(title=title)
        for column in ("user",) * per_user + ("client", "kind", "path", "root type", "found by", "status"):
            table.add_column(column, overflow="fold")
        for source in result.sources:
            reason = unsupported_reason(source.kind)
            table.add_row(
                *(Text(source.user),) * per_user,
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


#: What moves each kind of store root (the environment variables discovery reads for it).
_ROOT_VARIABLES: dict[str, tuple[str, ...]] = {
    "home": ("HOME",),
    "codex_home": ("CODEX_HOME", "HOME"),
    "data_home": ("XDG_DATA_HOME", "HOME") if sys.platform.startswith("linux") else (
        ("LOCALAPPDATA", "APPDATA", "USERPROFILE") if sys.platform == "win32" else ("HOME",)),
    "project_local": ("TELLTALE_PROJECT_CONFIG", "--project-config"),
    "editor_user": ("HOME",) if sys.platform != "win32" else ("APPDATA", "USERPROFILE"),
}
#: Variables that move one kind's store besides its root's and its spec's ``env_paths``.
_KIND_VARIABLES: dict[str, tuple[str, ...]] = {
    "opencode.sqlite": ("OPENCODE_DB",),
}


def variables(kinds: tuple[str, ...]) -> list[str]:
    """The environment variables (and flags) that move the stores of ``kinds``."""
    from telltale.sources.registry import REGISTRY

    specs = {spec.kind: spec for spec in REGISTRY}
    names: list[str] = []
    for kind in kinds:
        spec = specs.get(kind)
        names.extend(_KIND_VARIABLES.get(kind, ()))
        if spec is not None:
            names.extend(name for name, _ in spec.env_paths)
            names.extend(_ROOT_VARIABLES.get(spec.root_type.value, ()))
    return list(dict.fromkeys(names))


def probe_record(place: ProbedPlace) -> dict[str, Any]:
    return {
        "type": "probe",
        "path": display_path(place.path),
        "status": place.status,
        "kinds": list(place.kinds),
        "found_by": place.found_by,
        "variables": variables(place.kinds),
    }


def write_probes(result: DiscoveryResult, out: TextIO, *, as_json: bool) -> None:
    """Every place looked in, with what was there and what would move it (nothing usable found)."""
    if as_json:
        encoder = msgspec.json.Encoder()
        for place in result.probed:
            out.write(encoder.encode(probe_record(place)).decode("utf-8") + "\n")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="Places probed")
    for column in ("path", "status", "kinds", "moved by"):
        table.add_column(column, overflow="fold")
    for place in result.probed:
        record = probe_record(place)
        table.add_row(Text(record["path"]), place.status, ", ".join(place.kinds), ", ".join(record["variables"]))
    Console(file=out).print(table)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when at least one usable store was found (rejected candidates are listed as
    errors but are warnings), 1 when none was (stores that are only ``unsupported`` do not
    count as usable); then every place probed is listed with its status."""
    clients = check_names(args.client or ())
    check_root(args.root)
    options = DiscoveryOptions(
        root=args.root,
        clients=clients,
        project_configs=tuple(args.project_config),
        user_homes=args.profile == "system" and args.root == ".",
    )
    result = discover(options)
    as_json = args.json or not sys.stdout.isatty()
    if as_json:
        write_json(result, sys.stdout)
    else:
        write_table(result, sys.stdout, sys.stderr)
    usable = [s for s in result.sources if unsupported_reason(s.kind) is None]
    if not usable:
        write_probes(result, sys.stdout, as_json=as_json)
        where = display_path(args.root)
        if args.root == ".":
            where = "every local account's home" if options.user_homes else "this host's environment"
        found = "no session stores found" if not result.sources else "no readable session stores found"
        print(redact(f"telltale: {found} (root: {where}); the places probed are listed above with their status and "
              "the variables that move each store"), file=sys.stderr)
    sys.stdout.flush()
    return ExitCode.OK if usable else ExitCode.FAILED
