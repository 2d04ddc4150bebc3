"""OpenCode posture: the global config folder (``share`` and MCP servers, v1 and v2 layouts).

OpenCode's config keys live here only, so that shared code holds no vendor field name.
"""

from __future__ import annotations

import os

import msgspec

from telltale.inventory.model import McpServer, Posture, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    command_basename,
    decode_field,
    decode_json,
    env_names,
    env_path,
    header_names,
    mcp_transport,
    server_name,
    token,
    url_host,
)


class _OpenCodeConfig(msgspec.Struct):
    mcp: msgspec.Raw = msgspec.Raw()
    share: msgspec.Raw = msgspec.Raw()


class _OpenCodeMcp(msgspec.Struct):
    type: str | None = None
    command: list[str] | str | None = None
    url: str | None = None
    environment: dict[str, msgspec.Raw] | None = None
    env: dict[str, msgspec.Raw] | None = None
    headers: dict[str, msgspec.Raw] | None = None
    enabled: bool | None = None
    disabled: bool | None = None


def _opencode_server(name: str, raw: msgspec.Raw) -> McpServer | None:
    try:
        entry = msgspec.json.decode(raw, type=_OpenCodeMcp)
    except msgspec.DecodeError:
        return None
    command = entry.command[0] if isinstance(entry.command, list) and entry.command else entry.command
    enabled = entry.enabled if entry.enabled is not None else (
        not entry.disabled if entry.disabled is not None else None
    )
    return McpServer(
        name=server_name(name),
        scope="user",
        transport=mcp_transport(entry.type, "http" if entry.url and not command else "stdio"),
        command=command_basename(command) if isinstance(command, str) else None,
        url_host=url_host(entry.url) if entry.url else None,
        env_names=env_names([*(entry.environment or {}), *(entry.env or {})]),
        header_names=header_names(entry.headers or {}),
        enabled=enabled,
    )


def read_opencode(ctx: PostureContext) -> Posture:
    """The global OpenCode config: ``$XDG_CONFIG_HOME/opencode`` or ``~/.config/opencode``."""
    b = Builder()
    folder = os.path.join(env_path(ctx, "XDG_CONFIG_HOME") or os.path.join(ctx.home, ".config"), "opencode")
    sharing: str | None = None
    for file_name in ("opencode.json", "opencode.jsonc", "config.json"):
        data = b.read("config", os.path.join(folder, file_name))
        if data is None:
            continue
        config = decode_json(data, _OpenCodeConfig, jsonc=True)
        if config is None:
            b.malformed()
            continue
        share = decode_field(b, config.share, str, "share_malformed")
        if share is not None:
            sharing = token(share)
        entries = decode_field(b, config.mcp, dict[str, msgspec.Raw], "mcp_servers_malformed") or {}
        # OpenCode v2 nests servers under ``mcp.servers``; v1 puts them under ``mcp``.
        if "servers" in entries:
            nested = decode_field(b, entries["servers"], dict[str, msgspec.Raw], "mcp_servers_malformed")
            if nested is not None and all(_looks_like_opencode_server(v) for v in nested.values()):
                entries = nested
        if entries:
            add_servers(b, entries, "user", _opencode_server)
    return b.build(Telemetry(), sharing=sharing)


def _looks_like_opencode_server(raw: msgspec.Raw) -> bool:
    try:
        entry = msgspec.json.decode(raw, type=_OpenCodeMcp)
    except msgspec.DecodeError:
        return False
    return entry.type is not None or entry.command is not None or entry.url is not None
