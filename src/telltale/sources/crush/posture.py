"""Crush's posture: its global ``crush.json`` (metadata only).

``mcp`` servers (``stdio``, ``http``, ``sse``; by name, launcher basename, URL host and the
*names* of their variables and headers) and ``permissions.allowed_tools`` (tools that run
without asking; counted, and ``permissions_skip_requests`` when the file turns asking off).
The file also holds provider API keys (``providers.*.api_key``): the decoder names only the
fields it keeps, so nothing else is retained. ``crush --yolo`` is a command-line flag and is
not visible here. The file is ``$CRUSH_GLOBAL_CONFIG/crush.json``, else
``$XDG_CONFIG_HOME/crush/crush.json`` or ``~/.config/crush/crush.json``
(``%LOCALAPPDATA%\\crush\\crush.json`` on Windows).
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
)


class _Config(msgspec.Struct):
    mcp: msgspec.Raw = msgspec.Raw()
    permissions: msgspec.Raw = msgspec.Raw()


class _Permissions(msgspec.Struct):
    allowed_tools: list[msgspec.Raw] | None = None
    skip_requests: bool | None = None


def config_path(ctx: PostureContext) -> str:
    folder = env_path(ctx, "CRUSH_GLOBAL_CONFIG")
    if folder is None:
        if ctx.platform == "win32":
            folder = os.path.join(env_path(ctx, "LOCALAPPDATA") or os.path.join(ctx.home, "AppData", "Local"),
                                  "crush")
        else:
            folder = os.path.join(env_path(ctx, "XDG_CONFIG_HOME") or os.path.join(ctx.home, ".config"), "crush")
    return os.path.join(folder, "crush.json")


def read_crush(ctx: PostureContext) -> Posture:
    b = Builder()
    data = b.read("config", config_path(ctx))
    if data is not None:
        config = decode_json(data, _Config, jsonc=True)
        if config is None:
            b.malformed()
        else:
            servers = decode_field(b, config.mcp, dict[str, msgspec.Raw], "mcp_servers_malformed") or {}
            add_servers(b, servers, "user", json_mcp_server)
            perms = decode_field(b, config.permissions, _Permissions, "permissions_malformed")
            if perms is not None:
                if perms.allowed_tools:
                    b.note(f"allowed_tools_{min(len(perms.allowed_tools), 999)}")
                if perms.skip_requests:
                    b.note("permissions_skip_requests")
    return b.build(Telemetry())
