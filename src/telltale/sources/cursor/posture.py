"""Cursor's posture: its own settings files in ``~/.cursor`` (metadata only).

* ``mcp.json`` — MCP servers (``mcpServers``), by name, transport, launcher basename, URL
  host and the *names* of their environment variables and headers;
* ``cli-config.json`` — the ``cursor-agent`` CLI's ``approvalMode`` (``unrestricted`` is
  its run-everything, "yolo" mode) and how many allow/deny rules it has. The file also
  caches sign-in information (``authInfo``); the decoder below names only the fields it
  keeps, so nothing else of the file is retained or reported;
* ``permissions.json`` — allowlists that let terminal commands and MCP tools run without
  approval (counted), and whether auto-run guidance is set.

``CURSOR_CONFIG_DIR`` moves the CLI's folder, and on Linux ``XDG_CONFIG_HOME/cursor`` holds
``cli-config.json`` when set. The IDE's own run mode is kept in its ``state.vscdb``
application state, whose key is not documented; it is not read.
"""

from __future__ import annotations

import os

import msgspec

from telltale.inventory.model import Posture, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    decode_field,
    decode_json,
    env_path,
    json_mcp_server,
    token,
)


class _McpFile(msgspec.Struct):
    mcpServers: msgspec.Raw = msgspec.Raw()


class _Permissions(msgspec.Struct):
    allow: list[msgspec.Raw] | None = None
    deny: list[msgspec.Raw] | None = None


class _CliConfig(msgspec.Struct):
    approvalMode: msgspec.Raw = msgspec.Raw()
    permissions: msgspec.Raw = msgspec.Raw()


class _PermissionsFile(msgspec.Struct):
    terminalAllowlist: list[msgspec.Raw] | None = None
    mcpAllowlist: list[msgspec.Raw] | None = None
    autoRun: msgspec.Raw = msgspec.Raw()


def _count_note(b: Builder, label: str, items: list[msgspec.Raw] | None) -> None:
    if items:
        b.note(f"{label}_{min(len(items), 999)}")


def read_cursor(ctx: PostureContext) -> Posture:
    b = Builder()
    folder = os.path.join(ctx.home, ".cursor")
    data = b.read("mcp_config", os.path.join(folder, "mcp.json"))
    if data is not None:
        config = decode_json(data, _McpFile, jsonc=True)
        if config is None:
            b.malformed()
        else:
            entries = decode_field(b, config.mcpServers, dict[str, msgspec.Raw], "mcp_servers_malformed") or {}
            if entries:
                add_servers(b, entries, "user", json_mcp_server)

    cli_dir = env_path(ctx, "CURSOR_CONFIG_DIR")
    if cli_dir is None and ctx.platform == "linux" and (xdg := env_path(ctx, "XDG_CONFIG_HOME")):
        cli_dir = os.path.join(xdg, "cursor")
    permission_mode: str | None = None
    data = b.read("cli_config", os.path.join(cli_dir or folder, "cli-config.json"))
    if data is not None:
        cli = decode_json(data, _CliConfig)
        if cli is None:
            b.malformed()
        else:
            mode = decode_field(b, cli.approvalMode, str, "approval_mode_malformed")
            permission_mode = token(mode) if mode is not None else None
            perms = decode_field(b, cli.permissions, _Permissions, "permissions_malformed")
            if perms is not None:
                _count_note(b, "cli_allow_rules", perms.allow)
                _count_note(b, "cli_deny_rules", perms.deny)

    data = b.read("permissions", os.path.join(folder, "permissions.json"))
    if data is not None:
        allow = decode_json(data, _PermissionsFile, jsonc=True)
        if allow is None:
            b.malformed()
        else:
            _count_note(b, "terminal_allowlist", allow.terminalAllowlist)
            _count_note(b, "mcp_allowlist", allow.mcpAllowlist)
            if allow.autoRun:
                b.note("auto_run_guidance")
    return b.build(Telemetry(), permission_mode=permission_mode)
