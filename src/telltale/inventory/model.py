"""Inventory data model: what the inventory reports, as plain msgspec Structs.

Everything here is JSON-encodable with ``msgspec.json.encode`` and carries no path, no
setting value that could be a secret and no transcript content: paths appear only as
``path_hash`` (see :func:`path_hash`), MCP servers only by name, transport, command
basename, URL host and environment/header *names*.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from telltale.digest import blake2b

#: Bump when a field changes meaning; part of the digest so consumers re-emit.
INVENTORY_SCHEMA_VERSION = 1

Confidence = Literal["confirmed", "partial", "absent"]
SignalKind = Literal["executable", "package", "extension", "global_storage", "desktop_bundle", "app_data"]
FileStatus = Literal["ok", "missing", "too_large", "malformed", "unreadable", "not_regular"]


def path_hash(path: str) -> str:
    """Short, stable, unkeyed hash of a path (blake2b-64, hex), so events never carry paths.

    Unkeyed on purpose: the same path hashes the same on every scan and host, which is
    what change detection and cross-source correlation need. It hides paths from casual
    readers of telemetry, not from someone who can guess candidate paths.
    """
    return blake2b(path.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


class Signal(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One piece of metadata-only install evidence.

    ``name`` is the public probe name (executable, npm package, extension id, desktop
    probe id such as ``claude-desktop``); ``location`` a non-path label of where it was
    found (``PATH``, ``npm``, ``nvm``, ``pnpm``, ``bun``, ``vscode``, ``cursor``...);
    ``version`` only when the directory name itself carries it (extension folders,
    desktop bundle version folders). ``definitive`` is false for ambiguous evidence (the
    ``copilot`` launcher name, INV-10).
    """

    kind: SignalKind
    name: str
    path_hash: str
    location: str
    definitive: bool = True
    version: str | None = None

    def sort_key(self) -> tuple[str, str, str, str, str]:
        return (self.kind, self.name, self.location, self.version or "", self.path_hash)


class SettingsFile(msgspec.Struct, frozen=True, kw_only=True):
    """Outcome of reading one of an agent's own settings files (never its content)."""

    role: str  # user_settings, managed_settings, global_config, config, managed_config
    path_hash: str
    status: FileStatus


class Retention(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How long the agent itself keeps session evidence before deleting it.

    ``days`` None with ``deletes_sessions`` false means the agent is not known to delete
    sessions. ``source`` says where the value came from: ``default`` (documented default,
    no setting), ``settings`` (the user's file) or ``managed`` (administrator policy).
    """

    deletes_sessions: bool
    source: Literal["default", "settings", "managed"]
    days: int | None = None


class Telemetry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The agent's own telemetry switches as its settings files set them.

    ``None`` means "not determinable from the files" (the setting may still come from the
    user's shell environment, which the inventory does not see). Endpoint *hosts* only;
    exporter headers (credentials) are never read out.
    """

    otel_export: bool | None = None
    exporters: list[str] = msgspec.field(default_factory=list)
    endpoint_hosts: list[str] = msgspec.field(default_factory=list)
    prompt_logging: bool | None = None
    vendor_analytics: bool | None = None
    error_reporting: bool | None = None


class McpServer(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One configured MCP server, reduced to facts that carry no secret.

    ``command`` is the basename of the launcher only (arguments may hold tokens);
    ``url_host`` the host of a remote server's URL (no path, query or credentials);
    ``env_names`` and ``header_names`` the *names* of configured variables/headers, never
    their values. ``scope``: ``user``, ``project`` (``project_hash`` names the project
    path by hash) or ``managed``.
    """

    name: str
    scope: str
    transport: str
    command: str | None = None
    url_host: str | None = None
    env_names: list[str] = msgspec.field(default_factory=list)
    header_names: list[str] = msgspec.field(default_factory=list)
    enabled: bool | None = None
    project_hash: str | None = None


class Posture(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Configuration posture of one installed agent, from its own settings files only.

    ``notes`` are short content-free tokens (``mcp_entry_malformed``...) for problems that
    did not stop the rest of the posture from being read.
    """

    files: list[SettingsFile]
    telemetry: Telemetry
    retention: Retention | None = None
    permission_mode: str | None = None
    sandbox_mode: str | None = None
    sharing: str | None = None
    mcp_servers: list[McpServer] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)


class AgentInventory(msgspec.Struct, frozen=True, kw_only=True):
    """Inventory verdict for one agent: installed flag, confidence and the evidence."""

    agent: str
    installed: bool
    confidence: Confidence
    signals: list[Signal]
    posture: Posture | None = None


class InventorySnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """One inventory run. Deterministic for a given filesystem: no clock, sorted lists."""

    schema_version: int
    platform: str
    agents: list[AgentInventory]

    def digest(self) -> str:
        """Hex digest of the whole snapshot, so a scan emits inventory only on change."""
        return blake2b(msgspec.json.encode(self), digest_size=16).hexdigest()

    def agent(self, name: str) -> AgentInventory:
        for entry in self.agents:
            if entry.agent == name:
                return entry
        raise KeyError(name)


#: INV-3: the inventory is taken at most this often by default (here, not in ``snapshot``:
#: a scan checks the cadence without importing the posture readers).
DEFAULT_INVENTORY_INTERVAL = 86_400.0


def inventory_due(last_run: float | None, now: float, interval: float = DEFAULT_INVENTORY_INTERVAL) -> bool:
    """Whether a scan should run the inventory now (INV-3: configurable cadence).

    ``last_run`` and ``now`` are monotonic seconds; ``interval`` 0 runs it on every scan.
    A clock that went backwards counts as due rather than silencing inventory.
    """
    if interval < 0:
        raise ValueError("inventory interval must be >= 0")
    if last_run is None or now < last_run:
        return True
    return now - last_run >= interval
