"""Claude Code posture: user and managed ``settings.json``, ``~/.claude.json``, ``managed-mcp.json``.

Claude Code's settings keys and the environment variables it reads for telemetry live here
only, so that shared code holds no vendor field name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import msgspec

from telltale.inventory.model import McpServer, Posture, Retention, Telemetry, path_hash
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
    truthy,
    url_host,
)

#: Largest ``~/.claude.json`` read: it also holds per-project state and grows with use.
CLAUDE_GLOBAL_BOUND = 4 << 20
#: Projects looked at in ``~/.claude.json``.
MAX_PROJECTS = 10_000
#: Claude Code deletes session transcripts older than this many days unless configured.
CLAUDE_DEFAULT_CLEANUP_DAYS = 30


class _ClaudeSettings(msgspec.Struct):
    cleanupPeriodDays: msgspec.Raw = msgspec.Raw()
    env: msgspec.Raw = msgspec.Raw()
    permissions: msgspec.Raw = msgspec.Raw()


class _ClaudePermissions(msgspec.Struct):
    defaultMode: str | None = None


class _ClaudeGlobal(msgspec.Struct):
    mcpServers: msgspec.Raw = msgspec.Raw()
    projects: msgspec.Raw = msgspec.Raw()


class _ClaudeProject(msgspec.Struct):
    mcpServers: msgspec.Raw = msgspec.Raw()


class _ClaudeMcp(msgspec.Struct):
    type: str | None = None
    command: str | None = None
    url: str | None = None
    env: dict[str, msgspec.Raw] | None = None
    headers: dict[str, msgspec.Raw] | None = None


_EnvValue = str | int | float | bool | None

_CLAUDE_EXPORTER_VARS = ("OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER", "OTEL_TRACES_EXPORTER")
_CLAUDE_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


def _claude_managed_dir(ctx: PostureContext) -> str | None:
    if ctx.system_root is None:
        return None
    if ctx.platform == "darwin":
        return os.path.join(ctx.system_root, "Library", "Application Support", "ClaudeCode")
    if ctx.platform == "win32":
        return os.path.join(ctx.system_root, "ProgramData", "ClaudeCode")
    return os.path.join(ctx.system_root, "etc", "claude-code")


def _claude_server(name: str, raw: msgspec.Raw, scope: str, project: str | None) -> McpServer | None:
    try:
        entry = msgspec.json.decode(raw, type=_ClaudeMcp)
    except msgspec.DecodeError:
        return None
    transport = mcp_transport(entry.type, "http" if entry.url and not entry.command else "stdio")
    return McpServer(
        name=server_name(name),
        scope=scope,
        transport=transport,
        command=command_basename(entry.command) if entry.command else None,
        url_host=url_host(entry.url) if entry.url else None,
        env_names=env_names(entry.env or {}),
        header_names=header_names(entry.headers or {}),
        project_hash=path_hash(project) if project is not None else None,
    )


def _claude_servers(b: Builder, raw: msgspec.Raw, scope: str, project: str | None = None) -> None:
    entries = decode_field(b, raw, dict[str, msgspec.Raw], "mcp_servers_malformed")
    if entries:
        add_servers(b, entries, scope, lambda n, r: _claude_server(n, r, scope, project))


def read_claude(ctx: PostureContext) -> Posture:
    """``settings.json`` (user, managed), ``~/.claude.json`` and ``managed-mcp.json``."""
    b = Builder()
    config_dir = env_path(ctx, "CLAUDE_CONFIG_DIR")
    base = config_dir or os.path.join(ctx.home, ".claude")
    global_path = os.path.join(config_dir, ".claude.json") if config_dir else os.path.join(ctx.home, ".claude.json")

    layers: list[tuple[str, _ClaudeSettings]] = []
    for role, path in (
        ("user_settings", os.path.join(base, "settings.json")),
        *(
            (("managed_settings", os.path.join(d, "managed-settings.json")),)
            if (d := _claude_managed_dir(ctx)) else ()
        ),
    ):
        data = b.read(role, path)
        if data is None:
            continue
        settings = decode_json(data, _ClaudeSettings)
        if settings is None:
            b.malformed()
            continue
        layers.append(("managed" if role == "managed_settings" else "settings", settings))

    # Later layers win: managed settings override the user's.
    env: dict[str, _EnvValue] = {}
    retention = Retention(deletes_sessions=True, source="default", days=CLAUDE_DEFAULT_CLEANUP_DAYS)
    permission_mode: str | None = None
    for source, settings in layers:
        env.update(decode_field(b, settings.env, dict[str, _EnvValue], "env_malformed") or {})
        days = decode_field(b, settings.cleanupPeriodDays, int, "retention_invalid")
        if days is not None and days < 0:
            b.note("retention_invalid")
        elif days is not None:
            if days == 0:
                b.note("retention_zero")  # documented inconsistently; see docs/inventory.md
            retention = Retention(deletes_sessions=True, source="managed" if source == "managed" else "settings",
                                  days=days)
        perms = decode_field(b, settings.permissions, _ClaudePermissions, "permissions_malformed")
        if perms is not None and perms.defaultMode is not None:
            permission_mode = token(perms.defaultMode)

    data = b.read("global_config", global_path, CLAUDE_GLOBAL_BOUND)
    if data is not None:
        glob = decode_json(data, _ClaudeGlobal)
        if glob is None:
            b.malformed()
        else:
            _claude_servers(b, glob.mcpServers, "user")
            projects = decode_field(b, glob.projects, dict[str, msgspec.Raw], "projects_malformed") or {}
            for i, project in enumerate(sorted(projects)):
                if i >= MAX_PROJECTS:
                    b.note("projects_truncated")
                    break
                entry = decode_field(b, projects[project], _ClaudeProject, "projects_malformed")
                if entry is not None:
                    _claude_servers(b, entry.mcpServers, "project", project)

    managed_dir = _claude_managed_dir(ctx)
    if managed_dir is not None:
        data = b.read("managed_mcp", os.path.join(managed_dir, "managed-mcp.json"))
        if data is not None:
            managed = decode_json(data, _ClaudeGlobal)
            if managed is None:
                b.malformed()
            else:
                _claude_servers(b, managed.mcpServers, "managed")

    return b.build(_claude_telemetry(env), retention=retention, permission_mode=permission_mode)


def _claude_telemetry(env: Mapping[str, _EnvValue]) -> Telemetry:
    def flag(name: str) -> bool | None:
        return truthy(env[name]) if name in env else None

    vendor = error = None
    if (v := flag("DISABLE_TELEMETRY")) is not None:
        vendor = not v
    if (v := flag("DISABLE_ERROR_REPORTING")) is not None:
        error = not v
    if flag("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"):
        vendor = error = False
    exporters: set[str] = set()
    for name in _CLAUDE_EXPORTER_VARS:
        value = env.get(name)
        if isinstance(value, str):
            exporters |= {t for part in value.split(",") if (t := token(part.strip()))}
    hosts: set[str] = set()
    for name in _CLAUDE_ENDPOINT_VARS:
        endpoint = env.get(name)
        if isinstance(endpoint, str) and (host := url_host(endpoint)):
            hosts.add(host)
    return Telemetry(
        otel_export=flag("CLAUDE_CODE_ENABLE_TELEMETRY"),
        exporters=sorted(exporters),
        endpoint_hosts=sorted(hosts),
        prompt_logging=flag("OTEL_LOG_USER_PROMPTS"),
        vendor_analytics=vendor,
        error_reporting=error,
    )
