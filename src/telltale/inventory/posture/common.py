"""Vendor-neutral parts of the posture readers: bounded reading, decoding, sanitizing.

Kept apart from the per-vendor modules so that no vendor field name sits in shared code
(project standard). Everything a reader returns passes through the sanitizers here, so what
leaves the package carries no secret: booleans, short enumeration tokens, URL hosts, command
basenames and the *names* of environment variables and headers. A missing, oversized or
malformed file becomes a :class:`SettingsFile` status (and content-free ``notes``), never an
error; :func:`read_bounded` refuses credential file names as a second line of defence.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
import stat
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import msgspec

from telltale.inventory.model import (
    FileStatus,
    McpServer,
    Posture,
    SettingsFile,
    Telemetry,
    path_hash,
)

#: Largest settings file read (a vendor reader may pass a larger bound for a known big file).
SETTINGS_BOUND = 1 << 20
#: MCP servers kept per file and scope; the rest are counted in a note.
MAX_MCP_SERVERS = 256

#: Credential file names of any agent: never opened whatever a reader asks for. Kept here, not
#: per vendor, because the refusal must not depend on a vendor module remembering it.
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


class PostureContext(msgspec.Struct, frozen=True):
    """Where to look: the inspected home, its environment, platform and system root."""

    home: str
    env: Mapping[str, str]
    platform: str
    system_root: str | None


class Builder(msgspec.Struct):
    """Accumulates a posture while its files are read."""

    files: list[SettingsFile] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    mcp: list[McpServer] = msgspec.field(default_factory=list)

    def note(self, token: str) -> None:
        if token not in self.notes:
            self.notes.append(token)

    def read(self, role: str, path: str, bound: int = SETTINGS_BOUND) -> bytes | None:
        status, data = read_bounded(path, bound)
        self.files.append(SettingsFile(role=role, path_hash=path_hash(path), status=status))
        return data

    def malformed(self) -> None:
        """Mark the file just read as malformed: it was read but its content does not decode."""
        last = self.files[-1]
        self.files[-1] = SettingsFile(role=last.role, path_hash=last.path_hash, status="malformed")

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
    if basename(path).lower() in CREDENTIAL_FILE_NAMES:
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


def decode_json(data: bytes, typ: type[T], *, jsonc: bool = False) -> T | None:
    """A whole settings file into the reader's top-level struct; None when malformed."""
    try:
        return msgspec.json.decode(strip_jsonc(data) if jsonc else data, type=typ)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None


def decode_field(b: Builder, raw: msgspec.Raw, typ: type[T], note: str) -> T | None:
    """Decode one field independently, so a mistyped field spoils only itself."""
    if not raw:
        return None
    try:
        return msgspec.json.decode(raw, type=typ)
    except msgspec.DecodeError:
        b.note(note)
        return None


def convert_field(b: Builder, value: object, typ: type[T], note: str) -> T | None:
    """``msgspec.convert`` counterpart of :func:`decode_field` for TOML tables."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, type=typ)
    except msgspec.ValidationError:
        b.note(note)
        return None


# -- sanitizers: what may leave the package ------------------------------------------------

def basename(path: str) -> str:
    """Last component under either separator: settings may name Windows paths on POSIX."""
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
    name = basename(text.rstrip("/\\"))
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
    """Environment variable names only (never values), deduplicated and sorted."""
    return sorted({n for n in names if _ENV_NAME_RE.fullmatch(n)})


def header_names(names: Iterable[str]) -> list[str]:
    """HTTP header names only (never values), deduplicated and sorted."""
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


def mcp_transport(value: str | None, default: str) -> str:
    """A configured MCP transport value as ``stdio``/``sse``/``http``/``ws``, else ``other``.

    Values, not field names: the agents spell the same transports differently (``local`` and
    ``remote`` are OpenCode's, ``streamable-http`` several agents'), and one mapping keeps the
    report comparable across agents.
    """
    if value is None:
        return default
    lowered = value.lower()
    if lowered in {"stdio", "sse", "http", "ws", "local", "remote"}:
        return {"local": "stdio", "remote": "http"}.get(lowered, lowered)
    if lowered in {"streamable-http", "streamable_http", "streamablehttp"}:
        return "http"
    return "other"


class McpEntry(msgspec.Struct):
    """The common JSON shape of one MCP server entry (Cursor's ``mcp.json``, Crush's ``mcp``):
    only what the posture keeps; env and header *values* are never decoded."""

    type: str | None = None
    command: str | None = None
    url: str | None = None
    env: dict[str, msgspec.Raw] | None = None
    headers: dict[str, msgspec.Raw] | None = None
    disabled: bool | None = None


def json_mcp_server(name: str, raw: msgspec.Raw) -> McpServer | None:
    """A user-scope :class:`McpServer` from an entry of the common shape; None when malformed."""
    try:
        entry = msgspec.json.decode(raw, type=McpEntry)
    except msgspec.DecodeError:
        return None
    return McpServer(
        name=server_name(name),
        scope="user",
        transport=mcp_transport(entry.type, "http" if entry.url and not entry.command else "stdio"),
        command=command_basename(entry.command) if entry.command else None,
        url_host=url_host(entry.url) if entry.url else None,
        env_names=env_names(entry.env or {}),
        header_names=header_names(entry.headers or {}),
        enabled=(not entry.disabled) if entry.disabled is not None else None,
    )


def add_servers(
    b: Builder,
    entries: Mapping[str, T],
    scope: str,
    convert: Callable[[str, T], McpServer | None],
) -> None:
    """Convert ``entries`` in name order, keeping at most MAX_MCP_SERVERS; failures become notes."""
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


def env_path(ctx: PostureContext, name: str) -> str | None:
    """An absolute path from the inspected environment; a relative one would follow our cwd."""
    value = ctx.env.get(name, "").strip()
    if value and (os.path.isabs(value) or (ctx.platform == "win32" and ntpath.isabs(value))):
        return value
    return None
