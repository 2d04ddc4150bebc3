"""Goose's posture: its ``config.yaml`` (metadata only).

``GOOSE_MODE`` is the permission mode (``auto`` runs every tool without asking,
``approve``, ``smart_approve``, ``chat``); ``extensions`` are MCP servers (``stdio``,
``sse``, ``streamable_http``) or in-process ones (``builtin``, ``platform``, ``frontend``;
counted, not servers). Only those two keys are kept: provider names, models and anything
else in the file are not retained, and ``secrets.yaml`` and the keyring are never opened.
The file is ``~/.config/goose/config.yaml`` on Linux and macOS (``$XDG_CONFIG_HOME/goose``),
``%APPDATA%\\Block\\goose\\config\\config.yaml`` on Windows, and
``$GOOSE_PATH_ROOT/config/config.yaml`` when that is set.
"""

from __future__ import annotations

import os
from typing import Any

from telltale.inventory.model import McpServer, Posture, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    command_basename,
    env_names,
    env_path,
    header_names,
    mcp_transport,
    server_name,
    token,
    url_host,
)

#: Extension types that run in Goose's process (no MCP server to report).
IN_PROCESS = frozenset({"builtin", "platform", "frontend", "inline_python"})


def config_path(ctx: PostureContext) -> str:
    root = env_path(ctx, "GOOSE_PATH_ROOT")
    if root is not None:
        return os.path.join(root, "config", "config.yaml")
    if ctx.platform == "win32":
        appdata = env_path(ctx, "APPDATA") or os.path.join(ctx.home, "AppData", "Roaming")
        return os.path.join(appdata, "Block", "goose", "config", "config.yaml")
    xdg = env_path(ctx, "XDG_CONFIG_HOME") or os.path.join(ctx.home, ".config")
    return os.path.join(xdg, "goose", "config.yaml")


def _server(name: str, entry: Any) -> McpServer | None:
    if not isinstance(entry, dict):
        return None
    kind = entry.get("type")
    command = entry.get("cmd")
    uri = entry.get("uri")
    envs = entry.get("envs")
    headers = entry.get("headers")
    env_keys = [*(envs if isinstance(envs, dict) else {}), *(entry.get("env_keys") or [])]
    return McpServer(
        name=server_name(str(name)),
        scope="user",
        transport=mcp_transport(kind.replace("_", "-") if isinstance(kind, str) else None, "stdio"),
        command=command_basename(command) if isinstance(command, str) else None,
        url_host=url_host(uri) if isinstance(uri, str) else None,
        env_names=env_names(k for k in env_keys if isinstance(k, str)),
        header_names=header_names(headers if isinstance(headers, dict) else {}),
        enabled=entry["enabled"] if isinstance(entry.get("enabled"), bool) else None,
    )


def read_goose(ctx: PostureContext) -> Posture:
    b = Builder()
    data = b.read("config", config_path(ctx))
    mode: str | None = None
    if data is not None:
        import yaml  # only when Goose's config exists: every scan's inventory runs this reader

        loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # both are safe loaders
        try:
            doc = yaml.load(data.decode("utf-8"), Loader=loader)
        except (yaml.YAMLError, UnicodeDecodeError, RecursionError):
            doc = None
            b.malformed()
        if isinstance(doc, dict):
            raw_mode = doc.get("GOOSE_MODE")
            mode = token(raw_mode) if isinstance(raw_mode, str) else None
            extensions = doc.get("extensions")
            if isinstance(extensions, dict):
                servers = {k: v for k, v in extensions.items()
                           if not (isinstance(v, dict) and v.get("type") in IN_PROCESS)}
                builtin = len(extensions) - len(servers)
                if builtin:
                    b.note(f"builtin_extensions_{min(builtin, 999)}")
                add_servers(b, {str(k): v for k, v in servers.items()}, "user", _server)
            elif extensions is not None:
                b.note("extensions_malformed")
        elif doc is not None:
            b.malformed()
    env_mode = ctx.env.get("GOOSE_MODE", "").strip()
    if env_mode:
        mode = token(env_mode)  # the environment wins over the file, as in Goose
    return b.build(Telemetry(), permission_mode=mode)
