"""Metadata-only install probes: stat, lstat and directory listings, nothing else.

No file is opened and nothing is executed (INV-1, INV-2, INV-9). Listings are bounded and
never descend into an agent's data: globalStorage is listed, its extension folders are
only tested for presence. Glob levels (``*``) do not follow directory symlinks, so a probe
cannot be steered outside the tree it names.
"""

from __future__ import annotations

import ntpath
import os
import stat
from collections.abc import Iterator, Mapping

from telltale.inventory.model import Signal, SignalKind, path_hash
from telltale.inventory.probes import (
    AGENTS,
    EXTENSION_ROOTS,
    GLOBAL_STORAGE_ROOTS,
    NODE_ROOTS,
    WINDOWS_LAUNCHER_SUFFIXES,
    AgentProbe,
    Root,
)

#: Entries looked at per directory listing; a bigger directory is read up to this many.
MAX_LISTING = 20_000
#: Matches kept per ``*`` glob level.
MAX_GLOB_MATCHES = 256
#: Longest version string taken from a directory name.
MAX_VERSION_CHARS = 64
_VERSION_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-+_")


class Probe:
    """One inventory pass over a home (and optionally the system root) for one platform."""

    def __init__(
        self,
        home: str,
        env: Mapping[str, str],
        platform: str,
        *,
        path_env: str | None,
        system_root: str | None,
        agents: tuple[AgentProbe, ...] = AGENTS,
    ) -> None:
        self.home = home
        self.env = env
        self.platform = platform
        self.path_env = path_env
        self.system_root = system_root
        self.agents = agents
        self._found: dict[str, dict[tuple[str, str, str, str], Signal]] = {a.agent: {} for a in agents}

    # -- public -------------------------------------------------------------------------

    def run(self) -> dict[str, list[Signal]]:
        """Every probe, once; returns the signals per agent, sorted."""
        self._executables()
        self._packages()
        self._extensions()
        self._global_storage()
        self._desktop()
        self._app_data()
        return {agent: sorted(found.values(), key=Signal.sort_key) for agent, found in self._found.items()}

    # -- helpers ------------------------------------------------------------------------

    def _add(
        self,
        agent: str,
        kind: SignalKind,
        name: str,
        path: str,
        location: str,
        *,
        definitive: bool = True,
        version: str | None = None,
    ) -> None:
        signal = Signal(
            kind=kind, name=name, path_hash=path_hash(path), location=location,
            definitive=definitive, version=version,
        )
        self._found[agent][(kind, name, location, signal.path_hash)] = signal

    def _is_abs(self, value: str) -> bool:
        return os.path.isabs(value) or (self.platform == "win32" and ntpath.isabs(value))

    def _base(self, base: str) -> str | None:
        if base == "home":
            return self.home
        if base == "system":
            return self.system_root
        if base.startswith("env:"):
            value = self.env.get(base[4:], "").strip()
            return value if value and self._is_abs(value) else None
        raise ValueError(f"unknown root base {base!r}")

    def _roots(self, roots: tuple[Root, ...]) -> Iterator[tuple[Root, str, list[str]]]:
        """Existing directories of the templates that apply to this platform, deduplicated."""
        seen: set[str] = set()
        for root in roots:
            if self.platform not in root.platforms:
                continue
            base = self._base(root.base)
            if base is None:
                continue
            for path, globbed in expand(base, root.parts):
                key = os.path.normcase(os.path.normpath(path))
                if key in seen or not _is_dir(path):
                    continue
                seen.add(key)
                yield root, path, globbed

    # -- probes -------------------------------------------------------------------------

    def _executables(self) -> None:
        """Launchers on PATH (INV-8: with Windows launcher suffixes)."""
        wanted: list[tuple[str, str, bool]] = []
        for agent in self.agents:
            wanted += [(agent.agent, name, True) for name in agent.executables]
            wanted += [(agent.agent, name, False) for name in agent.ambiguous_executables]
        if not wanted:
            return
        for directory in path_dirs(self._path_value(), self.platform):
            for agent_name, name, definitive in wanted:
                for candidate in launcher_names(name, self.platform):
                    full = os.path.join(directory, candidate)
                    if is_executable(full, self.platform):
                        self._add(agent_name, "executable", name, full, "PATH", definitive=definitive)

    def _path_value(self) -> str:
        if self.path_env is not None:
            return self.path_env
        if self.platform == "win32":
            for key, value in self.env.items():
                if key.upper() == "PATH":
                    return value
            return ""
        return self.env.get("PATH", "")

    def _packages(self) -> None:
        """Global Node packages in the npm, nvm, fnm, pnpm and bun roots."""
        wanted = [(a.agent, pkg) for a in self.agents for pkg in a.packages]
        if not wanted:
            return
        for root, path, _ in self._roots(NODE_ROOTS):
            for agent_name, package in wanted:
                full = os.path.join(path, *package.split("/"))
                if _exists_dir_or_link(full):
                    self._add(agent_name, "package", package, full, root.location)

    def _extensions(self) -> None:
        """VS Code-style extension folders ``<publisher>.<name>-<version>``."""
        wanted = [(a.agent, ext.lower()) for a in self.agents for ext in a.extensions]
        if not wanted:
            return
        for root, path, _ in self._roots(EXTENSION_ROOTS):
            for entry_name, is_dir in list_dir(path, links=True):
                if not is_dir or entry_name.startswith("."):
                    continue
                lowered = entry_name.lower()
                for agent_name, ext in wanted:
                    version = extension_version(lowered, ext)
                    if version is not None:
                        self._add(
                            agent_name, "extension", ext, os.path.join(path, entry_name), root.location,
                            version=_clean_version(entry_name[len(ext) + 1:]),
                        )

    def _global_storage(self) -> None:
        """Presence of ``globalStorage/<extension-id>`` (listed, never entered)."""
        wanted = [(a.agent, ext.lower()) for a in self.agents for ext in a.extensions]
        if not wanted:
            return
        for root, path, _ in self._roots(GLOBAL_STORAGE_ROOTS):
            for entry_name, is_dir in list_dir(path):
                if not is_dir:
                    continue
                lowered = entry_name.lower()
                for agent_name, ext in wanted:
                    if lowered == ext:
                        self._add(agent_name, "global_storage", ext, os.path.join(path, entry_name),
                                  root.location)

    def _desktop(self) -> None:
        """Windows desktop bundle executables (INV-4..6); never on macOS/Linux (INV-7)."""
        if self.platform != "win32":
            return
        for agent in self.agents:
            for probe in agent.desktop:
                for full, globbed in expand(self.home, probe.parts):
                    if is_executable(full, self.platform):
                        version = _clean_version(globbed[0]) if probe.version_from_glob and globbed else None
                        self._add(agent.agent, "desktop_bundle", probe.name, full, "desktop", version=version)

    def _app_data(self) -> None:
        """Editor product folders whose presence shows the product ran on this account."""
        for agent in self.agents:
            for probe in agent.app_data:
                full = os.path.join(self.home, *probe.parts)
                if _is_dir(full):
                    self._add(agent.agent, "app_data", probe.name, full, probe.location)


# -- filesystem primitives (metadata only) ---------------------------------------------------

def path_dirs(value: str, platform: str) -> list[str]:
    """PATH entries split with the platform's separator; relative and empty entries dropped.

    A relative entry (``.``) would make the scanner's working directory evidence, so it is
    ignored; Windows entries may be quoted.
    """
    sep = ";" if platform == "win32" else ":"
    out: list[str] = []
    seen: set[str] = set()
    for raw in value.split(sep):
        entry = raw.strip()
        if platform == "win32":
            entry = entry.strip('"').strip()
        if not entry:
            continue
        if not (os.path.isabs(entry) or (platform == "win32" and ntpath.isabs(entry))):
            continue
        if entry not in seen:
            seen.add(entry)
            out.append(entry)
    return out


def launcher_names(name: str, platform: str) -> tuple[str, ...]:
    """File names that launch ``name``: bare on POSIX; bare plus launcher suffixes on Windows."""
    if platform == "win32":
        return (name, *(name + suffix for suffix in WINDOWS_LAUNCHER_SUFFIXES))
    return (name,)


def is_executable(path: str, platform: str) -> bool:
    """A regular file (symlinks followed: launchers usually are links), executable on POSIX."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    return platform == "win32" or bool(st.st_mode & 0o111)


def extension_version(lowered_entry: str, extension_id: str) -> str | None:
    """The version part when ``lowered_entry`` is ``<extension_id>-<digit>...``, else None.

    The digit check keeps ``github.copilot`` from matching ``github.copilot-chat-0.1.0``.
    """
    prefix = extension_id + "-"
    if lowered_entry.startswith(prefix) and lowered_entry[len(prefix):][:1].isdigit():
        return lowered_entry[len(prefix):]
    return None


def expand(base: str, parts: tuple[str, ...]) -> Iterator[tuple[str, list[str]]]:
    """Paths for ``parts`` under ``base``; ``*`` matches real (non-symlink) directories."""
    paths: list[tuple[str, list[str]]] = [(base, [])]
    for part in parts:
        nxt: list[tuple[str, list[str]]] = []
        for path, globbed in paths:
            if part == "*":
                matches = [name for name, is_dir in list_dir(path) if is_dir]
                for name in sorted(matches)[:MAX_GLOB_MATCHES]:
                    nxt.append((os.path.join(path, name), [*globbed, name]))
            else:
                nxt.append((os.path.join(path, part), globbed))
        paths = nxt
        if not paths:
            return
    yield from paths


def list_dir(path: str, *, links: bool = False) -> list[tuple[str, bool]]:
    """Up to MAX_LISTING ``(name, is directory)`` entries; [] when unreadable.

    A symlink counts as a directory only with ``links`` (an extension folder linked in by
    a developer); never for glob levels.
    """
    out: list[tuple[str, bool]] = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                if len(out) >= MAX_LISTING:
                    break
                try:
                    is_dir = entry.is_dir(follow_symlinks=False) or (links and entry.is_symlink())
                except OSError:
                    is_dir = False
                out.append((entry.name, is_dir))
    except (OSError, ValueError):
        return []
    return out


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _exists_dir_or_link(path: str) -> bool:
    """A package folder, or the symlink pnpm and ``npm link`` put in its place."""
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISDIR(mode) or stat.S_ISLNK(mode)


def _clean_version(text: str) -> str | None:
    """A bounded version label from a directory name, or None when it does not look like one."""
    if not text or len(text) > MAX_VERSION_CHARS or not set(text) <= _VERSION_CHARS:
        return None
    return text
