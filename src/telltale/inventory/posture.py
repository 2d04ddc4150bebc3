"""Configuration posture of installed agents, read from the agents' own settings files only.

Never a transcript, never a credential file: the readers below name their files
explicitly, and :func:`read_bounded` refuses any credential file name as a second line of
defence. Files are read read-only, up to a size bound; a missing, oversized or malformed
file becomes a :class:`SettingsFile` status (and content-free ``notes``), never an error.

What leaves this module carries no secret: settings are reduced to booleans, short
enumeration tokens, URL hosts, command basenames and the *names* of environment variables
and headers. Vendor field names appear here (and in probes.py) while the vendor modules
under ``telltale.sources`` are being rewritten; see docs/inventory.md.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import stat
import tomllib
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from telltale.inventory.model import (
    FileStatus,
    McpServer,
    Posture,
    Retention,
    SettingsFile,
    Telemetry,
    path_hash,
)

#: Largest settings file read (settings.json, config.toml, opencode.json).
SETTINGS_BOUND = 1 << 20
#: Largest ``~/.claude.json`` read: it also holds per-project state and grows with use.
CLAUDE_GLOBAL_BOUND = 4 << 20
#: MCP servers kept per file and scope; the rest are counted in a note.
MAX_MCP_SERVERS = 256
#: Projects looked at in ``~/.claude.json``.
MAX_PROJECTS = 10_000
#: Claude Code deletes session transcripts older than this many days unless configured.
CLAUDE_DEFAULT_CLEANUP_DAYS = 30

#: File names that hold credentials; never opened whatever a reader asks for.
CREDENTIAL_FILE_NAMES: frozenset[str] = frozenset(
    {
        "auth.json",
        ".credentials.json",
        "credentials.json",
        "oauth_creds.json",
        "google_accounts.json",
        "mcp-oauth-tokens.json",
        "hosts.json",
        "apps.json",
        ".env",
    }
)

_TOKEN_RE = re.compile(r"[A-Za-z0-9_.:+-]{1,64}")
_ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
_HOST_RE = re.compile(r"[a-z0-9._:\[\]-]{1,253}")
_NAME_MAX = 128
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})

T = TypeVar("T")


@dataclass(frozen=True)
class PostureContext:
    """Where to look: the inspected home, its environment, platform and system root."""

    home: str
    env: Mapping[str, str]
    platform: str
    system_root: str | None


@dataclass
class _Builder:
    """Accumulates a posture while its files are read."""

    files: list[SettingsFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    mcp: list[McpServer] = field(default_factory=list)

    def note(self, token: str) -> None:
        if token not in self.notes:
            self.notes.append(token)

    def read(self, role: str, path: str, bound: int = SETTINGS_BOUND) -> bytes | None:
        status, data = read_bounded(path, bound)
        self.files.append(SettingsFile(role=role, path_hash=path_hash(path), status=status))
        return data

    def build(self, telemetry: Telemetry, **kwargs: Any) -> Posture:
        servers = sorted(self.mcp, key=lambda s: (s.scope, s.project_hash or "", s.name))
        return Posture(files=self.files, telemetry=telemetry, mcp_servers=servers, notes=sorted(self.notes),
                       **kwargs)


# -- reading ---------------------------------------------------------------------------------

def read_bounded(path: str, bound: int) -> tuple[FileStatus, bytes | None]:
    """Read a regular file read-only, at most ``bound`` bytes, or say why not.

    Symlinks are followed (dotfile managers link settings files) but the target must be a
    regular file; FIFOs and devices are refused before opening, and O_NONBLOCK guards the
    race. Credential file names are refused outright.
    """
    if _basename(path).lower() in CREDENTIAL_FILE_NAMES:
        raise ValueError("refusing to read a credential file")
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", None
    except (OSError, ValueError):
        return "unreadable", None
    if not stat.S_ISREG(st.st_mode):
        return "not_regular", None
    if st.st_size > bound:
        return "too_large", None
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return "unreadable", None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not_regular", None
        chunks: list[bytes] = []
        remaining = bound + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError:
        return "unreadable", None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > bound:
        return "too_large", None
    return "ok", data


def strip_jsonc(data: bytes) -> bytes:
    """Remove ``//`` and ``/* */`` comments and trailing commas outside strings (JSONC)."""
    text = data.decode("utf-8", "surrogateescape")
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                i += 1  # trailing comma
            else:
                out.append(ch)
                i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out).encode("utf-8", "surrogateescape")


def _decode_json(data: bytes, typ: type[T], *, jsonc: bool = False) -> T | None:
    try:
        return msgspec.json.decode(strip_jsonc(data) if jsonc else data, type=typ)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


def _sub(b: _Builder, raw: msgspec.Raw, typ: type[T], note: str) -> T | None:
    """Decode one field independently, so a mistyped field spoils only itself."""
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw, type=typ)
    except msgspec.DecodeError:
        b.note(note)
        return None


def _conv(b: _Builder, value: object, typ: type[T], note: str) -> T | None:
    """``msgspec.convert`` counterpart of :func:`_sub` for TOML tables."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, type=typ)
    except msgspec.ValidationError:
        b.note(note)
        return None


# -- sanitizers: what may leave this module -------------------------------------------------

def _basename(path: str) -> str:
    return ntpath.basename(posixpath.basename(path))


def command_basename(command: str) -> str | None:
    """The launcher's file name only: arguments and directories may identify or leak."""
    text = command.strip()
    if not text:
        return None
    if text[0] in "\"'":
        end = text.find(text[0], 1)
        text = text[1:end] if end > 0 else text[1:]
    elif re.match(r"^[A-Za-z]:[\\/]", text) is None:
        text = text.split()[0]
    name = _basename(text.rstrip("/\\"))
    return name[:_NAME_MAX] if name and name.isprintable() else None


def url_host(url: str) -> str | None:
    """Host of a URL, lower-case, without credentials, port, path or query."""
    try:
        host = urllib.parse.urlsplit(url.strip()).hostname
    except ValueError:
        return None
    if not host or _HOST_RE.fullmatch(host) is None:
        return None
    return host


def token(value: object) -> str | None:
    """A short enumeration value (permission mode, exporter kind), else ``other``."""
    if not isinstance(value, str):
        return None
    return value if _TOKEN_RE.fullmatch(value) else "other"


def server_name(name: str) -> str:
    """A configured MCP server name, bounded; an unprintable or huge name is hashed."""
    if 0 < len(name) <= _NAME_MAX and name.isprintable():
        return name
    return "#" + path_hash(name)


def env_names(names: Iterable[str]) -> list[str]:
    return sorted({n for n in names if _ENV_NAME_RE.fullmatch(n)})


def header_names(names: Iterable[str]) -> list[str]:
    return sorted({n for n in names if _HEADER_NAME_RE.fullmatch(n)})


def truthy(value: object) -> bool | None:
    """Environment-style boolean: ``1/true/yes/on`` and ``0/false/no/off``; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    return None


def _transport(value: str | None, default: str) -> str:
    if value is None:
        return default
    lowered = value.lower()
    if lowered in {"stdio", "sse", "http", "ws", "local", "remote"}:
        return {"local": "stdio", "remote": "http"}.get(lowered, lowered)
    if lowered in {"streamable-http", "streamable_http", "streamablehttp"}:
        return "http"
    return "other"


def _add_servers(
    b: _Builder,
    entries: Mapping[str, T],
    scope: str,
    convert: Callable[[str, T], McpServer | None],
) -> None:
    kept = 0
    for name in sorted(entries):
        if kept >= MAX_MCP_SERVERS:
            b.note("mcp_servers_truncated")
            break
        server = convert(name, entries[name])
        if server is None:
            b.note("mcp_entry_malformed")
            continue
        b.mcp.append(server)
        kept += 1


def _env_path(ctx: PostureContext, name: str) -> str | None:
    value = ctx.env.get(name, "").strip()
    if value and (os.path.isabs(value) or (ctx.platform == "win32" and ntpath.isabs(value))):
        return value
    return None


# -- Claude Code ------------------------------------------------------------------------------

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
    transport = _transport(entry.type, "http" if entry.url and not entry.command else "stdio")
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


def _claude_servers(b: _Builder, raw: msgspec.Raw, scope: str, project: str | None = None) -> None:
    entries = _sub(b, raw, dict[str, msgspec.Raw], "mcp_servers_malformed")
    if entries:
        _add_servers(b, entries, scope, lambda n, r: _claude_server(n, r, scope, project))


def read_claude(ctx: PostureContext) -> Posture:
    """``settings.json`` (user, managed), ``~/.claude.json`` and ``managed-mcp.json``."""
    b = _Builder()
    config_dir = _env_path(ctx, "CLAUDE_CONFIG_DIR")
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
        settings = _decode_json(data, _ClaudeSettings)
        if settings is None:
            b.files[-1] = SettingsFile(role=role, path_hash=b.files[-1].path_hash, status="malformed")
            continue
        layers.append(("managed" if role == "managed_settings" else "settings", settings))

    # Later layers win: managed settings override the user's.
    env: dict[str, _EnvValue] = {}
    retention = Retention(deletes_sessions=True, source="default", days=CLAUDE_DEFAULT_CLEANUP_DAYS)
    permission_mode: str | None = None
    for source, settings in layers:
        env.update(_sub(b, settings.env, dict[str, _EnvValue], "env_malformed") or {})
        days = _sub(b, settings.cleanupPeriodDays, int, "retention_invalid")
        if days is not None and days < 0:
            b.note("retention_invalid")
        elif days is not None:
            if days == 0:
                b.note("retention_zero")  # documented inconsistently; see docs/inventory.md
            retention = Retention(deletes_sessions=True, source="managed" if source == "managed" else "settings",
                                  days=days)
        perms = _sub(b, settings.permissions, _ClaudePermissions, "permissions_malformed")
        if perms is not None and perms.defaultMode is not None:
            permission_mode = token(perms.defaultMode)

    data = b.read("global_config", global_path, CLAUDE_GLOBAL_BOUND)
    if data is not None:
        glob = _decode_json(data, _ClaudeGlobal)
        if glob is None:
            b.files[-1] = SettingsFile(role="global_config", path_hash=b.files[-1].path_hash, status="malformed")
        else:
            _claude_servers(b, glob.mcpServers, "user")
            projects = _sub(b, glob.projects, dict[str, msgspec.Raw], "projects_malformed") or {}
            for i, project in enumerate(sorted(projects)):
                if i >= MAX_PROJECTS:
                    b.note("projects_truncated")
                    break
                entry = _sub(b, projects[project], _ClaudeProject, "projects_malformed")
                if entry is not None:
                    _claude_servers(b, entry.mcpServers, "project", project)

    managed_dir = _claude_managed_dir(ctx)
    if managed_dir is not None:
        data = b.read("managed_mcp", os.path.join(managed_dir, "managed-mcp.json"))
        if data is not None:
            managed = _decode_json(data, _ClaudeGlobal)
            if managed is None:
                b.files[-1] = SettingsFile(role="managed_mcp", path_hash=b.files[-1].path_hash, status="malformed")
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


# -- Codex ------------------------------------------------------------------------------------

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
    b = _Builder()
    codex_home = _env_path(ctx, "CODEX_HOME") or os.path.join(ctx.home, ".codex")
    data = b.read("config", os.path.join(codex_home, "config.toml"))
    if data is None:
        return b.build(Telemetry())
    try:
        doc: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        b.files[-1] = SettingsFile(role="config", path_hash=b.files[-1].path_hash, status="malformed")
        return b.build(Telemetry())

    otel = _conv(b, doc.get("otel"), _CodexOtel, "otel_malformed")
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
    analytics = _conv(b, doc.get("analytics"), _CodexToggle, "analytics_malformed")

    servers = _conv(b, doc.get("mcp_servers"), dict[str, object], "mcp_servers_malformed")
    if servers:
        _add_servers(b, servers, "user", _codex_server)

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


# -- Gemini CLI and Qwen Code (same settings.json shape) -----------------------------------

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
    b = _Builder()
    data = b.read("user_settings", os.path.join(ctx.home, folder, "settings.json"))
    if data is None:
        return b.build(Telemetry())
    settings = _decode_json(data, _GeminiSettings, jsonc=True)
    if settings is None:
        b.files[-1] = SettingsFile(role="user_settings", path_hash=b.files[-1].path_hash, status="malformed")
        return b.build(Telemetry())
    tel = _sub(b, settings.telemetry, _GeminiTelemetry, "telemetry_malformed")
    usage = _sub(b, settings.usageStatisticsEnabled, bool, "privacy_malformed")
    privacy = _sub(b, settings.privacy, _GeminiPrivacy, "privacy_malformed")
    if privacy is not None and privacy.usageStatisticsEnabled is not None:
        usage = privacy.usageStatisticsEnabled
    retention: Retention | None = None
    general = _sub(b, settings.general, _GeminiGeneral, "general_malformed")
    if general is not None:
        policy = _sub(b, general.sessionRetention, _GeminiRetention, "retention_invalid")
        if policy is not None and policy.enabled is not None:
            days = parse_age_days(policy.maxAge) if policy.maxAge else None
            if policy.maxAge and days is None:
                b.note("retention_invalid")
            retention = Retention(deletes_sessions=policy.enabled, source="settings",
                                  days=days if policy.enabled else None)
    entries = _sub(b, settings.mcpServers, dict[str, msgspec.Raw], "mcp_servers_malformed")
    if entries:
        _add_servers(b, entries, "user", _gemini_server)
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


# -- OpenCode ---------------------------------------------------------------------------------

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
        transport=_transport(entry.type, "http" if entry.url and not command else "stdio"),
        command=command_basename(command) if isinstance(command, str) else None,
        url_host=url_host(entry.url) if entry.url else None,
        env_names=env_names([*(entry.environment or {}), *(entry.env or {})]),
        header_names=header_names(entry.headers or {}),
        enabled=enabled,
    )


def read_opencode(ctx: PostureContext) -> Posture:
    """The global OpenCode config: ``$XDG_CONFIG_HOME/opencode`` or ``~/.config/opencode``."""
    b = _Builder()
    folder = os.path.join(_env_path(ctx, "XDG_CONFIG_HOME") or os.path.join(ctx.home, ".config"), "opencode")
    sharing: str | None = None
    for file_name in ("opencode.json", "opencode.jsonc", "config.json"):
        data = b.read("config", os.path.join(folder, file_name))
        if data is None:
            continue
        config = _decode_json(data, _OpenCodeConfig, jsonc=True)
        if config is None:
            b.files[-1] = SettingsFile(role="config", path_hash=b.files[-1].path_hash, status="malformed")
            continue
        share = _sub(b, config.share, str, "share_malformed")
        if share is not None:
            sharing = token(share)
        entries = _sub(b, config.mcp, dict[str, msgspec.Raw], "mcp_servers_malformed") or {}
        # OpenCode v2 nests servers under ``mcp.servers``; v1 puts them under ``mcp``.
        if "servers" in entries:
            nested = _sub(b, entries["servers"], dict[str, msgspec.Raw], "mcp_servers_malformed")
            if nested is not None and all(_looks_like_opencode_server(v) for v in nested.values()):
                entries = nested
        if entries:
            _add_servers(b, entries, "user", _opencode_server)
    return b.build(Telemetry(), sharing=sharing)


def _looks_like_opencode_server(raw: msgspec.Raw) -> bool:
    try:
        entry = msgspec.json.decode(raw, type=_OpenCodeMcp)
    except msgspec.DecodeError:
        return False
    return entry.type is not None or entry.command is not None or entry.url is not None


#: Posture readers by the key named in ``AgentProbe.posture``.
READERS: dict[str, Callable[[PostureContext], Posture]] = {
    "claude": read_claude,
    "codex": read_codex,
    "gemini": read_gemini,
    "qwen": read_qwen,
    "opencode": read_opencode,
}
