"""``telltale service install|uninstall|status|render``: run Telltale as a service on this host.

``--user`` (default) installs a service of the invoking user (systemd user unit, LaunchAgent,
logon task) that runs with ``--profile user``; ``--system`` one for the host (system unit,
LaunchDaemon, LocalSystem task) running with ``--profile system``: configuration from the
system root only, state in /var/lib/telltale, log in /var/log/telltale.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from telltale.errors import UsageError
from telltale.exitcodes import ExitCode


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "service",
        help="install, remove or inspect Telltale as a systemd/launchd/Task Scheduler service",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="service_command", metavar="SUBCOMMAND", required=True)
    for name, help_text, handler in (
        ("install", "write the service definition (and timer), then enable and start it", _install),
        ("uninstall", "stop, disable and remove the service definition", _uninstall),
        ("status", "installed, enabled, running, and the last scan", _status),
        ("render", "print the service files for review or packaging; change nothing", _render),
    ):
        p = commands.add_parser(name, help=help_text, description=help_text[0].upper() + help_text[1:] + ".")
        scope = p.add_mutually_exclusive_group()
        scope.add_argument("--user", dest="scope", action="store_const", const="user",
                           help="this user's service (default)")
        scope.add_argument("--system", dest="scope", action="store_const", const="system",
                           help="the host's service (needs root / Administrator to install)")
        p.add_argument("--init", choices=("systemd", "launchd", "windows"),
                       help="init system (default: this platform's)")
        if name in ("install", "render"):
            p.add_argument("--mode", choices=("watch", "timer"), default="watch",
                           help="watch: one long-lived `telltale watch` (default); timer: `scan --once` periodically")
            p.add_argument("--every", metavar="DURATION",
                           help="with --mode timer: time between scans, e.g. 90s, 5m (default), 1h")
        if name != "render":
            p.add_argument("--dest", metavar="DIR",
                           help="write/read the files in DIR instead of the init system's directory, and run no "
                           "init-system command (packaging, review, tests)")
        if name == "install":
            p.add_argument("--no-enable", action="store_true", help="write the files only; do not enable or start")
        if name == "uninstall":
            p.add_argument("--no-disable", action="store_true", help="remove the files only; do not stop or disable")
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        p.set_defaults(handler=handler, scope=None)


def _spec(args: argparse.Namespace) -> Any:
    from telltale.cli.paths import profile_log_dir, profile_state_dir
    from telltale.service.spec import DEFAULT_EVERY, Scope, ServiceSpec, parse_every

    if args.every is not None and args.mode != "timer":
        raise UsageError("--every goes with --mode timer")
    scope: Scope = "system" if args.scope == "system" else "user"
    every = parse_every(args.every) if args.every is not None else DEFAULT_EVERY
    return ServiceSpec(scope=scope, mode=args.mode, every=every, state_dir=profile_state_dir(scope),
                       log_dir=profile_log_dir(scope))


def _kind(args: argparse.Namespace) -> str:
    from telltale.service.manage import platform_kind

    return str(args.init or platform_kind())


def _print(data: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))


def _install(args: argparse.Namespace) -> int:
    from telltale.service.manage import install

    spec = _spec(args)
    result = install(_kind(args), spec, dest=args.dest, enable=not args.no_enable)
    lines = [f"wrote {p}" for p in result.written] + [f"removed {p}" for p in result.removed]
    lines += [f"ran {c}" for c in result.commands]
    if args.no_enable or args.dest:
        lines.append("not enabled (--no-enable/--dest): the init system has not been told")
    _print({"written": result.written, "removed": result.removed, "commands": result.commands,
            "exec": spec.argv}, args.json, lines)
    return ExitCode.OK


def _uninstall(args: argparse.Namespace) -> int:
    from telltale.service.manage import uninstall

    result = uninstall(_kind(args), args.scope or "user", dest=args.dest, disable=not args.no_disable)
    lines = [f"removed {p}" for p in result.removed] or ["not installed: nothing to remove"]
    lines += [f"ran {c}" for c in result.commands]
    _print({"removed": result.removed, "commands": result.commands}, args.json, lines)
    return ExitCode.OK


def _status(args: argparse.Namespace) -> int:
    from telltale.cli.paths import profile_state_path
    from telltale.service.manage import state

    scope = args.scope or "user"
    info = state(_kind(args), scope, args.dest)
    info["last_scan"] = _last_scan(profile_state_path(scope))
    lines = [
        f"installed: {'yes (' + ', '.join(info['files']) + ')' if info['installed'] else 'no'}"
        + (f", mode {info['mode']}" if info["mode"] else ""),
        f"enabled: {info['enabled']}",
        f"running: {info['running']}" + (f" (timer {info['timer']})" if "timer" in info else ""),
    ]
    scan = info["last_scan"]
    if scan is None:
        lines.append("last scan: none recorded")
    else:
        lines.append(f"last scan: {scan['at']} ({scan['duration_s'] or 0:.2f} s), result {scan['result']}: "
                     f"{scan['emitted']:,} events, {scan['detections']} detections")
    _print(info, args.json, lines)
    return ExitCode.OK


def _last_scan(state_path: str) -> dict[str, Any] | None:
    """The read side's last scan of the profile's state, or ``None`` when there is none yet."""
    import os

    if not os.path.exists(state_path):
        return None
    from telltale.index import status
    from telltale.index.db import connect

    conn = connect(state_path)
    try:
        scan: dict[str, Any] | None = status.last_scan(conn)
        return scan
    finally:
        conn.close()


def _render(args: argparse.Namespace) -> int:
    from telltale.service.manage import render

    files = render(_kind(args), _spec(args))
    if args.json:
        sys.stdout.write(json.dumps({n: d.decode("utf-16" if n.endswith(".xml") else "utf-8")
                                     for n, d in files.items()}) + "\n")
        return ExitCode.OK
    for name, data in files.items():
        text = data.decode("utf-16") if name.endswith(".xml") else data.decode()
        sys.stdout.write(f"# {name}\n{text}\n")
    return ExitCode.OK
