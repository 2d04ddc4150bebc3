"""Codex posture: ``config.toml`` (``[otel]``, ``[analytics]``, approvals, sandbox, MCP servers).

Codex's TOML keys live here only, so that shared code holds no vendor field name.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

import msgspec

from telltale.inventory.model import McpServer, Posture, Telemetry
from telltale.inventory.posture.common import (
    Builder,
    PostureContext,
    add_servers,
    command_basename,
    convert_field,
    env_names,
    env_path,
    header_names,
    server_name,
    token,
    url_host,
)


class _CodexOtel(msgspec.Struct):
    exporter: object = None
    trace_exporter: object = None
    metrics_exporter: object = None
    log_user_prompt: bool | None = None


class _CodexToggle(msgspec.Struct):
    enabled: bool | None = None


class _CodexMcp(msgspec.Struct):
    command: str | None = None
    url: str | None = None
    env: dict[str, object] | None = None
    env_vars: list[str] | None = None
    http_headers: dict[str, object] | None = None
    env_http_headers: dict[str, object] | None = None
    bearer_token_env_var: str | None = None
    enabled: bool | None = None


def _codex_exporter(value: object) -> tuple[str | None, str | None]:
    """``"none"`` / ``"otlp-http"`` / ``{otlp-http = {endpoint = ...}}`` → (kind, host)."""
    if isinstance(value, str):
        return token(value), None
    if isinstance(value, dict) and len(value) == 1:
        ((kind, body),) = value.items()
        host = None
        if isinstance(body, dict) and isinstance(body.get("endpoint"), str):
            host = url_host(body["endpoint"])
        return token(kind), host
    return None, None


def _codex_server(name: str, value: object) -> McpServer | None:
    try:
        entry = msgspec.convert(value, type=_CodexMcp)
    except msgspec.ValidationError:
        return None
    names = list(entry.env or {}) + list(entry.env_vars or [])
    if entry.bearer_token_env_var:
        names.append(entry.bearer_token_env_var)
    names += [v for v in (entry.env_http_headers or {}).values() if isinstance(v, str)]
    return McpServer(
        name=server_name(name),
        scope="user",
        transport="http" if entry.url and not entry.command else "stdio",
        command=command_basename(entry.command) if entry.command else None,
        url_host=url_host(entry.url) if entry.url else None,
        env_names=env_names(names),
        header_names=header_names([*(entry.http_headers or {}), *(entry.env_http_headers or {})]),
        enabled=entry.enabled,
    )


def read_codex(ctx: PostureContext) -> Posture:
    """``$CODEX_HOME/config.toml`` (or ``~/.codex/config.toml``)."""
    b = Builder()
    codex_home = env_path(ctx, "CODEX_HOME") or os.path.join(ctx.home, ".codex")
    data = b.read("config", os.path.join(codex_home, "config.toml"))
    if data is None:
        return b.build(Telemetry())
    try:
        doc: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        b.malformed()
        return b.build(Telemetry())

    otel = convert_field(b, doc.get("otel"), _CodexOtel, "otel_malformed")
    exporters: set[str] = set()
    hosts: set[str] = set()
    otel_export: bool | None = None
    if otel is not None:
        for value in (otel.exporter, otel.trace_exporter, otel.metrics_exporter):
            kind, host = _codex_exporter(value)
            if kind is None:
                continue
            exporters.add(kind)
            if host:
                hosts.add(host)
            otel_export = otel_export or kind != "none"
    analytics = convert_field(b, doc.get("analytics"), _CodexToggle, "analytics_malformed")

    servers = convert_field(b, doc.get("mcp_servers"), dict[str, object], "mcp_servers_malformed")
    if servers:
        add_servers(b, servers, "user", _codex_server)

    telemetry = Telemetry(
        otel_export=otel_export,
        exporters=sorted(exporters),
        endpoint_hosts=sorted(hosts),
        prompt_logging=otel.log_user_prompt if otel is not None else None,
        vendor_analytics=analytics.enabled if analytics is not None else None,
    )
    return b.build(
        telemetry,
        permission_mode=token(doc.get("approval_policy")),
        sandbox_mode=token(doc.get("sandbox_mode")),
    )
