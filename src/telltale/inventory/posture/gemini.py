"""Gemini CLI and Qwen Code posture: ``settings.json`` (JSON with comments).

One module for both: Qwen Code is a Gemini CLI fork and keeps the same settings shape
(``telemetry``, ``privacy``, ``general.sessionRetention``, ``mcpServers``); only the folder
differs (``~/.gemini`` and ``~/.qwen``). Their keys live here only.
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


class _GeminiSettings(msgspec.Struct):
    telemetry: msgspec.Raw = msgspec.Raw()
    usageStatisticsEnabled: msgspec.Raw = msgspec.Raw()
    privacy: msgspec.Raw = msgspec.Raw()
    general: msgspec.Raw = msgspec.Raw()
    mcpServers: msgspec.Raw = msgspec.Raw()


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
    return b.build(telemetry, retention=retention)


def read_gemini(ctx: PostureContext) -> Posture:
    """``~/.gemini/settings.json`` (JSON with comments)."""
    return _read_gemini_like(ctx, ".gemini")


def read_qwen(ctx: PostureContext) -> Posture:
    """``~/.qwen/settings.json``: Qwen Code is a Gemini CLI fork with the same shape."""
    return _read_gemini_like(ctx, ".qwen")
