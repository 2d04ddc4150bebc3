"""Cline-family posture: MCP servers and auto-approval, from the extensions' own settings files.

Read for every editor ``User`` directory (the same editors discovery searches):

* ``globalStorage/<extension id>/settings/cline_mcp_settings.json`` (Cline) or
  ``mcp_settings.json`` (Roo Code, Kilo Code): ``mcpServers{name: {command, args, env,
  url, type, disabled, autoApprove (Cline) | alwaysAllow (Roo, Kilo)}}``; the Cline CLI
  keeps the same file in ``$CLINE_DIR/data/settings`` (default ``~/.cline``);
* the editor's ``settings.json`` (JSONC): Roo Code's and Kilo Code's
  ``<prefix>.allowedCommands`` (command prefixes run without asking; ``*`` allows every
  command) and ``<prefix>.deniedCommands``.

Metadata only: server names, transports, a command's basename, a URL's host, env names,
whether tools are auto-approved, how many command prefixes are allowed; never a value.
Cline's other auto-approval switches live in the editor's ``globalState`` database (or the
CLI's ``globalState.json``, which can hold API keys); neither is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import msgspec

from telltale.discovery.editors import editor_user_dirs
from telltale.discovery.roots import EnvView, Flavour, Platform
from telltale.inventory.model import McpServer, Posture, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    command_basename,
    decode_json,
    env_names,
    env_path,
    header_names,
    mcp_transport,
    server_name,
    url_host,
)
from telltale.sources.cline.forks import FORKS, Fork

#: MCP settings file name per client.
_MCP_FILE = {"cline": "cline_mcp_settings.json", "roo": "mcp_settings.json", "kilo": "mcp_settings.json"}
#: VS Code settings prefix per client (Cline keeps no command allow-list in settings.json).
_SETTINGS_PREFIX = {"roo": "roo-cline", "kilo": "kilo-code"}


class _Mcp(msgspec.Struct):
    command: str | None = None
    url: str | None = None
    type: str | None = None
    transportType: str | None = None
    env: dict[str, msgspec.Raw] | None = None
    headers: dict[str, msgspec.Raw] | None = None
    disabled: bool | None = None
    autoApprove: list[msgspec.Raw] | None = None
    alwaysAllow: list[msgspec.Raw] | None = None


class _McpFile(msgspec.Struct):
    mcpServers: dict[str, msgspec.Raw] = {}


def _platform(ctx: PostureContext) -> Platform:
    return {"win32": Platform.WINDOWS, "darwin": Platform.DARWIN}.get(ctx.platform, Platform.LINUX)


def _user_dirs(ctx: PostureContext) -> list[str]:
    platform = _platform(ctx)
    dirs = editor_user_dirs(Flavour(platform), EnvView(ctx.env, platform), ctx.home)
    return list(dict.fromkeys(d.path for d in dirs))


def _server(b: Builder, scope: str) -> Callable[[str, msgspec.Raw], McpServer | None]:
    def convert(name: str, raw: msgspec.Raw) -> McpServer | None:
        try:
            entry = msgspec.json.decode(raw, type=_Mcp)
        except msgspec.DecodeError:
            return None
        approved = entry.autoApprove or entry.alwaysAllow
        if approved:
            b.note("mcp_tools_auto_approved")
        transport = entry.type or entry.transportType
        return McpServer(
            name=server_name(name),
            scope=scope,
            transport=mcp_transport(transport, "http" if entry.url and not entry.command else "stdio"),
            command=command_basename(entry.command) if entry.command else None,
            url_host=url_host(entry.url) if entry.url else None,
            env_names=env_names(entry.env or {}),
            header_names=header_names(entry.headers or {}),
            enabled=not entry.disabled if entry.disabled is not None else None,
        )

    return convert


def _read_mcp(b: Builder, path: str, scope: str) -> None:
    data = b.read("mcp_settings", path)
    if data is None:
        return
    config = decode_json(data, _McpFile, jsonc=True)
    if config is None:
        b.malformed()
        return
    add_servers(b, config.mcpServers, scope, _server(b, scope))


def _read_allowed_commands(b: Builder, path: str, prefix: str) -> None:
    data = b.read("editor_settings", path)
    if data is None:
        return
    settings = decode_json(data, dict[str, msgspec.Raw], jsonc=True)
    if settings is None:
        b.malformed()
        return
    allowed = _string_list(settings.get(f"{prefix}.allowedCommands"))
    if allowed:
        b.note("auto_approved_commands")
        if "*" in allowed:
            b.note("auto_approved_commands_all")
    if _string_list(settings.get(f"{prefix}.deniedCommands")):
        b.note("denied_commands")


def _string_list(raw: msgspec.Raw | None) -> list[str]:
    if raw is None:
        return []
    try:
        return msgspec.json.decode(raw, type=list[str])
    except msgspec.DecodeError:
        return []


def _reader(fork: Fork) -> Callable[[PostureContext], Posture]:
    def read(ctx: PostureContext) -> Posture:
        b = Builder()
        for user_dir in _user_dirs(ctx):
            storage = os.path.join(user_dir, "globalStorage")
            for extension in fork.extension_ids:
                path = os.path.join(storage, extension, "settings", _MCP_FILE[fork.client])
                if os.path.lexists(path):
                    _read_mcp(b, path, "user")
            prefix = _SETTINGS_PREFIX.get(fork.client)
            settings = os.path.join(user_dir, "settings.json")
            if prefix is not None and os.path.lexists(settings):
                _read_allowed_commands(b, settings, prefix)
        if fork.client == "cline":
            base = env_path(ctx, "CLINE_DIR") or os.path.join(ctx.home, ".cline")
            path = os.path.join(base, "data", "settings", _MCP_FILE["cline"])
            if os.path.lexists(path):
                _read_mcp(b, path, "cli")
        return b.build(Telemetry())

    return read


_BY_CLIENT = {fork.client: fork for fork in FORKS}
#: The posture readers of the three forks (``AgentProbe.posture`` keys ``cline``, ``roo``, ``kilo``).
read_cline = _reader(_BY_CLIENT["cline"])
read_roo = _reader(_BY_CLIENT["roo"])
read_kilo = _reader(_BY_CLIENT["kilo"])
