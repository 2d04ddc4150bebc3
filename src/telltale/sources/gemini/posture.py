"""Gemini CLI and Qwen Code posture: ``settings.json`` (JSON with comments).

One module for both: Qwen Code is a Gemini CLI fork and keeps the same settings shape
(``telemetry``, ``privacy``, ``general.sessionRetention``, ``mcpServers``); only the folder
differs (``~/.gemini`` and ``~/.qwen``). Their keys live here only.

Approval: ``general.defaultApprovalMode`` (``default``, ``auto_edit``, ``plan``; YOLO is
a command-line choice only), older builds' ``tools.autoAccept`` / top-level
``autoAccept`` (auto-approve read-only tools) → ``permission_mode``;
``security.disableYoloMode`` → note ``yolo_disabled``; ``tools.sandbox`` / ``sandbox``
(a boolean or ``docker``/``podman``/a profile) → ``sandbox_mode``. Metadata only: MCP
servers by name, transport, command basename, URL host and variable names.
"""

from __future__ import annotations

import os
import re

import msgspec

from telltale.inventory.model import McpServer, Posture, Retention, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    command_basename,
    decode_field,
    decode_json,
    env_names,
    header_names,
    server_name,
    token,
    url_host,
)


class _GeminiTelemetry(msgspec.Struct):
    enabled: bool | None = None
    target: str | None = None
    otlpEndpoint: str | None = None
    logPrompts: bool | None = None


class _GeminiPrivacy(msgspec.Struct):
    usageStatisticsEnabled: bool | None = None


class _GeminiRetention(msgspec.Struct):
    enabled: bool | None = None
    maxAge: str | None = None


class _GeminiGeneral(msgspec.Struct):
    sessionRetention: msgspec.Raw = msgspec.Raw()
    defaultApprovalMode: msgspec.Raw = msgspec.Raw()


class _GeminiTools(msgspec.Struct):
    autoAccept: msgspec.Raw = msgspec.Raw()
    sandbox: msgspec.Raw = msgspec.Raw()
    approvalMode: msgspec.Raw = msgspec.Raw()


class _GeminiSecurity(msgspec.Struct):
    disableYoloMode: msgspec.Raw = msgspec.Raw()


class _GeminiSettings(msgspec.Struct):
    telemetry: msgspec.Raw = msgspec.Raw()
    usageStatisticsEnabled: msgspec.Raw = msgspec.Raw()
    privacy: msgspec.Raw = msgspec.Raw()
    general: msgspec.Raw = msgspec.Raw()
    mcpServers: msgspec.Raw = msgspec.Raw()
    tools: msgspec.Raw = msgspec.Raw()
    security: msgspec.Raw = msgspec.Raw()
    autoAccept: msgspec.Raw = msgspec.Raw()  # v1 (flat) settings
    sandbox: msgspec.Raw = msgspec.Raw()  # v1 (flat) settings


class _GeminiMcp(msgspec.Struct):
    command: str | None = None
    url: str | None = None
    httpUrl: str | None = None
    env: dict[str, msgspec.Raw] | None = None
    headers: dict[str, msgspec.Raw] | None = None


_AGE_RE = re.compile(r"\s*(\d{1,6})\s*([hdwm])\s*")
_AGE_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30}


def parse_age_days(value: str) -> int | None:
    """``"30d"``, ``"2w"``, ``"12h"``, ``"1m"`` → whole days (at least 1), else None."""
    match = _AGE_RE.fullmatch(value)
    if match is None:
        return None
    return max(1, round(int(match.group(1)) * _AGE_DAYS[match.group(2)]))


def _gemini_server(name: str, raw: msgspec.Raw) -> McpServer | None:
    try:
        entry = msgspec.json.decode(raw, type=_GeminiMcp)
    except msgspec.DecodeError:
        return None
    if entry.httpUrl:
        transport, url = "http", entry.httpUrl
    elif entry.url:
        transport, url = "sse", entry.url
    else:
        transport, url = "stdio", None
    return McpServer(
        name=server_name(name),
        scope="user",
        transport=transport,
        command=command_basename(entry.command) if entry.command else None,
        url_host=url_host(url) if url else None,
        env_names=env_names(entry.env or {}),
        header_names=header_names(entry.headers or {}),
    )


def _sandbox_mode(b: Builder, raw: msgspec.Raw) -> str | None:
    value = decode_field(b, raw, object, "sandbox_malformed")
    if isinstance(value, bool):
        return "enabled" if value else "disabled"
    if isinstance(value, str) and value:
        return token(value)
    if value is not None:
        b.note("sandbox_malformed")
    return None


def _approval(b: Builder, settings: _GeminiSettings, general: _GeminiGeneral | None) -> tuple[str | None, str | None]:
    """(permission mode, sandbox mode) from the v2 nested or v1 flat settings."""
    mode = decode_field(b, general.defaultApprovalMode, str, "approval_malformed") if general else None
    tools = decode_field(b, settings.tools, _GeminiTools, "tools_malformed")
    if mode is None and tools is not None:
        mode = decode_field(b, tools.approvalMode, str, "approval_malformed")
    auto = decode_field(b, tools.autoAccept, bool, "approval_malformed") if tools is not None else None
    if auto is None:
        auto = decode_field(b, settings.autoAccept, bool, "approval_malformed")
    permission = token(mode) if mode else ("auto_accept" if auto else None)
    security = decode_field(b, settings.security, _GeminiSecurity, "security_malformed")
    if security is not None and decode_field(b, security.disableYoloMode, bool, "security_malformed"):
        b.note("yolo_disabled")
    sandbox = _sandbox_mode(b, tools.sandbox) if tools is not None and tools.sandbox else None
    if sandbox is None and settings.sandbox:
        sandbox = _sandbox_mode(b, settings.sandbox)
    return permission, sandbox


def _read_gemini_like(ctx: PostureContext, folder: str) -> Posture:
    b = Builder()
    data = b.read("user_settings", os.path.join(ctx.home, folder, "settings.json"))
    if data is None:
        return b.build(Telemetry())
    settings = decode_json(data, _GeminiSettings, jsonc=True)
    if settings is None:
        b.malformed()
        return b.build(Telemetry())
    tel = decode_field(b, settings.telemetry, _GeminiTelemetry, "telemetry_malformed")
    usage = decode_field(b, settings.usageStatisticsEnabled, bool, "privacy_malformed")
    privacy = decode_field(b, settings.privacy, _GeminiPrivacy, "privacy_malformed")
    if privacy is not None and privacy.usageStatisticsEnabled is not None:
        usage = privacy.usageStatisticsEnabled
    retention: Retention | None = None
    general = decode_field(b, settings.general, _GeminiGeneral, "general_malformed")
    if general is not None:
        policy = decode_field(b, general.sessionRetention, _GeminiRetention, "retention_invalid")
        if policy is not None and policy.enabled is not None:
            days = parse_age_days(policy.maxAge) if policy.maxAge else None
            if policy.maxAge and days is None:
                b.note("retention_invalid")
            retention = Retention(deletes_sessions=policy.enabled, source="settings",
                                  days=days if policy.enabled else None)
    permission_mode, sandbox_mode = _approval(b, settings, general)
    entries = decode_field(b, settings.mcpServers, dict[str, msgspec.Raw], "mcp_servers_malformed")
    if entries:
        add_servers(b, entries, "user", _gemini_server)
    host = url_host(tel.otlpEndpoint) if tel is not None and tel.otlpEndpoint else None
    telemetry = Telemetry(
        otel_export=tel.enabled if tel is not None else None,
        exporters=[t] if tel is not None and (t := token(tel.target)) else [],
        endpoint_hosts=[host] if host else [],
        prompt_logging=tel.logPrompts if tel is not None else None,
        vendor_analytics=usage,
    )
    return b.build(telemetry, retention=retention, permission_mode=permission_mode, sandbox_mode=sandbox_mode)


def read_gemini(ctx: PostureContext) -> Posture:
    """``~/.gemini/settings.json`` (JSON with comments)."""
    return _read_gemini_like(ctx, ".gemini")


def read_qwen(ctx: PostureContext) -> Posture:
    """``~/.qwen/settings.json``: Qwen Code is a Gemini CLI fork with the same shape."""
    return _read_gemini_like(ctx, ".qwen")
