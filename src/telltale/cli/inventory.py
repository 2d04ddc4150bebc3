"""``telltale inventory``: which agent tools appear installed, and how they are configured.

Metadata only (see docs/inventory.md). With ``--root`` the given directory is inspected as
a home directory: the environment is not consulted, PATH is probed only when ``--path``
is given and system-wide locations only when ``--system-root`` is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import msgspec

from telltale.discovery import check_root
from telltale.errors import UsageError
from telltale.inventory.model import AgentInventory, InventorySnapshot
from telltale.inventory.snapshot import PLATFORMS, take_inventory


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inventory",
        help="list installed agent tools (metadata only) and their configuration posture",
        description="Find which AI coding agents appear installed, from metadata only (PATH, package "
        "roots, editor extensions, globalStorage, desktop bundles), and summarise their own "
        "settings (retention, telemetry, MCP servers). Never reads session contents.",
    )
    parser.add_argument("--root", metavar="DIR", help="inspect DIR as the home directory instead of the real "
                        "home; the environment is then ignored")
    parser.add_argument("--path", metavar="PATH", help="PATH value to probe for launchers (default: $PATH; "
                        "none with --root)")
    parser.add_argument("--system-root", metavar="DIR", help="directory standing for / in system-wide probes "
                        "(default: / ; not consulted with --root unless given)")
    parser.add_argument("--platform", choices=PLATFORMS, help="platform whose layout to probe (default: this "
                        "host's)")
    parser.add_argument("--no-posture", action="store_true", help="skip reading the agents' settings files")
    parser.add_argument("--json", action="store_true", help="JSON lines (the default when output is not a "
                        "terminal): one per agent, then a summary")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    platform = args.platform or sys.platform
    if args.root is not None:
        check_root(args.root)
        root = Path(args.root)
        if args.system_root is not None and not Path(args.system_root).is_dir():
            raise UsageError(f"--system-root is not a directory: {args.system_root}")
        snapshot = take_inventory(
            str(root.resolve()), {}, platform,
            path_env=args.path if args.path is not None else "",
            system_root=args.system_root,
            consult_system=args.system_root is not None,
            posture=not args.no_posture,
        )
    else:
        snapshot = take_inventory(
            str(Path.home()), os.environ, platform,
            path_env=args.path,
            system_root=args.system_root,
            posture=not args.no_posture,
        )
    if args.json or not sys.stdout.isatty():
        write_json_lines(snapshot)
    else:
        write_table(snapshot)
    return 0


def json_lines(snapshot: InventorySnapshot) -> list[bytes]:
    """One ``record: agent`` line per agent, then one ``record: summary`` line.

    Every string passes the redactor, as the inventory events of a scan do: MCP server
    names, launcher basenames and URL hosts come from the user's own files.
    """
    from telltale.events.redaction import redact_document

    lines = [
        msgspec.json.encode(redact_document({"record": "agent", **msgspec.to_builtins(agent)}))
        for agent in snapshot.agents
    ]
    summary = {
        "record": "summary",
        "schema_version": snapshot.schema_version,
        "platform": snapshot.platform,
        "digest": snapshot.digest(),
        "agents": len(snapshot.agents),
        "installed": [a.agent for a in snapshot.agents if a.installed],
        "partial": [a.agent for a in snapshot.agents if a.confidence == "partial"],
    }
    lines.append(msgspec.json.encode(redact_document(summary)))
    return lines


def write_json_lines(snapshot: InventorySnapshot) -> None:
    out = sys.stdout.buffer
    for line in json_lines(snapshot):
        out.write(line + b"\n")
    out.flush()


def _evidence(agent: AgentInventory) -> str:
    parts: list[str] = []
    for s in agent.signals:
        label = f"{s.kind} {s.name}"
        if s.version:
            label += f"@{s.version}"
        label += f" ({s.location})"
        if not s.definitive:
            label += " [ambiguous]"
        if label not in parts:
            parts.append(label)
    return "\n".join(parts) or "-"


def _posture(agent: AgentInventory) -> str:
    p = agent.posture
    if p is None:
        return "-"
    bits: list[str] = []
    if p.retention is not None:
        if p.retention.deletes_sessions:
            bits.append(f"deletes sessions after {p.retention.days}d ({p.retention.source})")
        else:
            bits.append("keeps sessions")
    t = p.telemetry
    if t.otel_export is not None:
        bits.append("otel " + ("on" if t.otel_export else "off"))
    if t.prompt_logging:
        bits.append("prompt logging on")
    if t.vendor_analytics is False:
        bits.append("vendor analytics off")
    if p.permission_mode:
        bits.append(f"permissions {p.permission_mode}")
    if p.sandbox_mode:
        bits.append(f"sandbox {p.sandbox_mode}")
    if p.sharing:
        bits.append(f"sharing {p.sharing}")
    if p.mcp_servers:
        bits.append(f"{len(p.mcp_servers)} MCP server(s): " + ", ".join(sorted({s.name for s in p.mcp_servers})))
    bad = [f"{f.role} {f.status}" for f in p.files if f.status not in ("ok", "missing")]
    bits += bad + p.notes
    return "\n".join(bits) or "defaults"


def write_table(snapshot: InventorySnapshot, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from telltale.events.redaction import redact

    table = Table(title=f"Agent inventory ({snapshot.platform})")
    table.add_column("Agent")
    table.add_column("Installed")
    table.add_column("Confidence")
    table.add_column("Evidence")
    table.add_column("Posture")
    for agent in snapshot.agents:
        table.add_row(agent.agent, "yes" if agent.installed else "no", agent.confidence, redact(_evidence(agent)),
                      redact(_posture(agent)))
    console = console or Console()
    console.print(table)
    console.print(f"digest {snapshot.digest()}", style="dim")
