"""Host root rules: Home, CodexHome and DataHome per platform (seed "Host Root Rules").

Everything here is pure: it reads an injected environment mapping and builds path
strings in the syntax of an injected platform (``posixpath`` or ``ntpath``), so the
Windows and macOS rules are testable on Linux. Nothing touches the filesystem.
"""

from __future__ import annotations

import enum
import ntpath
import posixpath
import sys
from collections.abc import Mapping

import msgspec

from telltale.errors import UsageError


class Platform(enum.StrEnum):
    LINUX = "linux"
    DARWIN = "darwin"
    WINDOWS = "windows"


def current_platform() -> Platform:
    """The running host's platform family (anything not Windows or macOS is Linux-like)."""
    if sys.platform.startswith("win"):
        return Platform.WINDOWS
    if sys.platform == "darwin":
        return Platform.DARWIN
    return Platform.LINUX


def parse_platform(value: str | None) -> Platform:
    if value is None:
        return current_platform()
    try:
        return Platform(value)
    except ValueError:
        valid = ", ".join(p.value for p in Platform)
        raise UsageError(f"unknown platform {value!r}; valid platforms: {valid}") from None


class Flavour(msgspec.Struct, frozen=True):
    """Path syntax of one platform: joins, normalisation and the path-list separator."""

    platform: Platform

    @property
    def windows(self) -> bool:
        return self.platform is Platform.WINDOWS

    @property
    def pathsep(self) -> str:
        return ";" if self.windows else ":"

    def join(self, base: str, *parts: str) -> str:
        return ntpath.join(base, *parts) if self.windows else posixpath.join(base, *parts)

    def normpath(self, path: str) -> str:
        """Lexical normalisation (``..`` folded without touching the filesystem)."""
        return ntpath.normpath(path) if self.windows else posixpath.normpath(path)

    def isabs(self, path: str) -> bool:
        return ntpath.isabs(path) if self.windows else posixpath.isabs(path)

    def basename(self, path: str) -> str:
        return ntpath.basename(path) if self.windows else posixpath.basename(path)

    def dirname(self, path: str) -> str:
        return ntpath.dirname(path) if self.windows else posixpath.dirname(path)

    def key(self, path: str) -> str:
        """A comparison key for de-duplicating paths (case-folded on Windows)."""
        norm = self.normpath(path)
        return ntpath.normcase(norm) if self.windows else norm

    def prefixes(self, path: str) -> list[str]:
        """Every ancestor of ``path`` from the top down, ending with ``path`` itself."""
        out = [path]
        current = path
        while True:
            parent = self.dirname(current)
            if not parent or parent == current:
                break
            out.append(parent)
            current = parent
        out.reverse()
        return out

    def split_list(self, value: str) -> list[str]:
        """Split a platform-native path list, dropping empty elements."""
        return [item for item in value.split(self.pathsep) if item]


class EnvView:
    """Read-only view of an environment; Windows names are case-insensitive.

    ``get`` treats an empty value as unset: an empty ``HOME`` or ``CODEX_HOME`` would
    otherwise resolve stores against the scanner's working directory.
    """

    def __init__(self, env: Mapping[str, str], platform: Platform) -> None:
        self._env = env
        self._folded: dict[str, str] | None = None
        if platform is Platform.WINDOWS:
            self._folded = {}
            for name, value in env.items():
                self._folded.setdefault(name.upper(), value)

    def raw(self, name: str) -> str | None:
        if self._folded is not None:
            return self._folded.get(name.upper())
        return self._env.get(name)

    def get(self, name: str) -> str | None:
        value = self.raw(name)
        return value if value else None


class RootSet(msgspec.Struct, frozen=True):
    """The resolved host roots of one discovery.

    ``found_by`` labels say where each root came from (``home``, ``env:CODEX_HOME``,
    ``explicit_root``...) and become ``Source.found_by``.
    """

    flavour: Flavour
    explicit: bool
    home: str | None
    codex_home: str | None
    codex_home_found_by: str
    data_home: str | None
    home_found_by: str
    data_home_found_by: str


def resolve_home(env: EnvView, platform: Platform) -> str | None:
    """``HOME``; on Windows ``HOME`` first, then ``USERPROFILE`` (ROOT-1, ROOT-2)."""
    home = env.get("HOME")
    if home is None and platform is Platform.WINDOWS:
        home = env.get("USERPROFILE")
    return home


def default_data_home(flavour: Flavour, home: str) -> str:
    """DataHome below a home directory, when no environment variable decides it."""
    if flavour.platform is Platform.DARWIN:
        return flavour.join(home, "Library", "Application Support")
    if flavour.platform is Platform.WINDOWS:
        return flavour.join(home, "AppData", "Local")
    return flavour.join(home, ".local", "share")


def data_home_anchor(env: EnvView, flavour: Flavour, home: str | None) -> tuple[str, tuple[str, ...]] | None:
    """DataHome as (anchor, parts below it): the anchor is what the environment named.

    Linux: nonempty ``XDG_DATA_HOME``, else ``~/.local/share``; macOS:
    ``~/Library/Application Support``; Windows: ``LOCALAPPDATA``, then ``APPDATA``, then
    ``~\\AppData\\Local`` (ROOT-4, ROOT-5, ROOT-6). Callers that validate path components
    check the anchor and everything below it.
    """
    platform = flavour.platform
    if platform is Platform.LINUX:
        xdg = env.get("XDG_DATA_HOME")
        if xdg is not None:
            return xdg, ()
    elif platform is Platform.WINDOWS:
        for name in ("LOCALAPPDATA", "APPDATA"):
            value = env.get(name)
            if value is not None:
                return value, ()
    if home is None:
        return None
    if platform is Platform.DARWIN:
        return home, ("Library", "Application Support")
    if platform is Platform.WINDOWS:
        return home, ("AppData", "Local")
    return home, (".local", "share")


def resolve_data_home(env: EnvView, flavour: Flavour, home: str | None) -> str | None:
    """DataHome per platform as one path (see :func:`data_home_anchor`)."""
    anchor = data_home_anchor(env, flavour, home)
    if anchor is None:
        return None
    base, parts = anchor
    return flavour.join(base, *parts) if parts else base


def environment_roots(env: EnvView, platform: Platform) -> RootSet:
    """Roots for the default ``--root .``: resolved from the scanner's environment."""
    flavour = Flavour(platform)
    home = resolve_home(env, platform)
    codex_env = env.get("CODEX_HOME")
    if codex_env is not None:
        codex_home: str | None = codex_env
        codex_found_by = "env:CODEX_HOME"
    else:
        codex_home = flavour.join(home, ".codex") if home is not None else None
        codex_found_by = "codex_home"
    return RootSet(
        flavour=flavour,
        explicit=False,
        home=home,
        codex_home=codex_home,
        codex_home_found_by=codex_found_by,
        data_home=resolve_data_home(env, flavour, home),
        home_found_by="home",
        data_home_found_by="data_home",
    )


def explicit_roots(root: str, platform: Platform) -> RootSet:
    """Roots for an explicit ``--root DIR``: DIR is the home; no environment is read."""
    return _home_defaults(root, platform, ("explicit_root", "explicit_root", "explicit_root"))


def account_roots(home: str, platform: Platform) -> RootSet:
    """Roots of one account's home in the system profile: the defaults below the home the
    account database names. No environment is read — the service's is not the user's, and
    the user's (``CODEX_HOME``, ``CLAUDE_CONFIG_DIR``...) is invisible to it."""
    return _home_defaults(home, platform, ("home", "codex_home", "data_home"))


def _home_defaults(home: str, platform: Platform, found_by: tuple[str, str, str]) -> RootSet:
    """Every root at its default place below ``home``; ``found_by``: how the home, the Codex
    home and the data home are said to be found."""
    flavour = Flavour(platform)
    return RootSet(
        flavour=flavour,
        explicit=True,
        home=home,
        codex_home=flavour.join(home, ".codex"),
        codex_home_found_by=found_by[1],
        data_home=default_data_home(flavour, home),
        home_found_by=found_by[0],
        data_home_found_by=found_by[2],
    )
