"""Source specifications (stores declared as data) and discovered source instances."""

from __future__ import annotations

import enum
import fnmatch
import functools
import re
from collections.abc import Callable

import msgspec


class RootType(enum.StrEnum):
    """Which host root a store's relative path hangs from."""

    HOME = "home"
    CODEX_HOME = "codex_home"
    DATA_HOME = "data_home"
    PROJECT_LOCAL = "project_local"
    #: Below a VS Code-family editor's ``User`` directory (see ``telltale.discovery.editors``).
    EDITOR_USER = "editor_user"


class StoreLayout(enum.StrEnum):
    """How a store's files are enumerated below its root directory."""

    FILES = "files"  # every file matching the patterns is one source
    SQLITE = "sqlite"  # one database file is one source


class UnsupportedReason(enum.StrEnum):
    """Why a discovered store cannot be read (DECISIONS "Statuses")."""

    ENCRYPTED = "encrypted"  # encrypted at rest (Windsurf, Antigravity ``.pb``, Trae)
    UNKNOWN_FORMAT = "unknown_format"  # a layout or version this build does not recognise
    NO_DECODER = "no_decoder"  # the format is known but undocumented (protobuf without a schema)


class SourceSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where one kind of store lives and how its files are recognised.

    ``relative_path`` hangs from ``root_type`` on a real host; ``fixture_relative_path``
    hangs from a checked-in fixture root. ``file_patterns`` are matched against the file
    name (case-sensitive); ``exclude_patterns`` win over them. When ``parent_dir`` is
    set, a file only matches when its immediate parent directory has that name.
    ``also_relative_paths`` are more directories of the same store below the same root
    (one agent writing the same layout under two folders). ``env_paths`` are
    ``(VARIABLE, relative path)`` pairs: when host discovery sees the variable set, the
    store is also searched below its value (searched in addition to the home-relative
    paths: a scanner service may not share the user's environment).

    ``locator`` names a function of the agent's package that returns more directories to
    search (Crush's project index, Goose's ``GOOSE_PATH_ROOT``), walked like the others.

    A spec with ``unsupported`` set declares a store Telltale finds but cannot read: its
    files are discovered, listed and reported (status ``unsupported`` with that reason)
    so the blind spot is visible, and no adapter ever opens them (``adapter`` is empty).
    """

    client: str
    kind: str
    root_type: RootType
    relative_path: str
    file_patterns: tuple[str, ...]
    recursive: bool
    fixture_relative_path: str
    adapter: str  # "module:attribute" of the source-owned adapter
    layout: StoreLayout = StoreLayout.FILES
    exclude_patterns: tuple[str, ...] = ()
    parent_dir: str | None = None
    description: str = ""
    #: For ``EDITOR_USER`` stores: the editor ids searched (``telltale.discovery.editors``);
    #: empty means every editor (an extension can be installed in any of them).
    editors: tuple[str, ...] = ()
    also_relative_paths: tuple[str, ...] = ()
    env_paths: tuple[tuple[str, str], ...] = ()
    unsupported: UnsupportedReason | None = None
    #: ``"module:function"`` naming more store directories of this kind from the host
    #: (an agent's own index file, its own variables): see ``telltale.discovery.locate``.
    locator: str = ""

    def matches(self, name: str, parent: str | None = None) -> bool:
        return self.name_test()(name, parent)

    def name_test(self) -> Callable[[str, str | None], bool]:
        """``(name, parent directory name) -> bool``, as :meth:`matches`: for a walk that
        tests every entry of a store against the same specs."""
        return _name_test(self.file_patterns, self.exclude_patterns, self.parent_dir)


@functools.cache
def _name_test(
    file_patterns: tuple[str, ...], exclude_patterns: tuple[str, ...], parent_dir: str | None
) -> Callable[[str, str | None], bool]:
    files = _matcher(file_patterns)
    exclude = _matcher(exclude_patterns) if exclude_patterns else None
    if parent_dir is None and exclude is None:
        return lambda name, _parent: files(name)

    def test(name: str, parent: str | None) -> bool:
        if parent_dir is not None and parent != parent_dir:
            return False
        if exclude is not None and exclude(name):
            return False
        return files(name)

    return test


@functools.cache
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """``name -> bool`` for ``fnmatch`` patterns (case-sensitive, as ``fnmatchcase``):
    discovery matches every directory entry of every store against them.

    The specs' patterns are exact names, ``*suffix`` and a few more with ``*`` only: those
    are matched with ``str`` methods. Compiling them as regular expressions was ~12 ms of
    every scan (``re`` compiles in Python); a pattern with ``?`` or ``[`` still is one.
    """
    exact: set[str] = set()
    suffixes: list[str] = []
    globs: list[Callable[[str], bool]] = []
    classes: list[str] = []
    for pattern in patterns:
        if not _WILD.intersection(pattern):
            exact.add(pattern)
        elif _CLASS.intersection(pattern):
            classes.append(pattern)
        elif pattern.startswith("*") and "*" not in pattern[1:]:
            suffixes.append(pattern[1:])
        else:
            globs.append(_star_glob(pattern))
    ends = tuple(suffixes)
    rx = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in classes)).match if classes else None

    def match(name: str) -> bool:
        if name in exact or (ends and name.endswith(ends)):
            return True
        return any(g(name) for g in globs) or (rx is not None and rx(name) is not None)

    return match


#: Pattern characters: any wildcard, and the ones a ``str`` method cannot follow.
_WILD = frozenset("*?[")
_CLASS = frozenset("?[")


def _star_glob(pattern: str) -> Callable[[str], bool]:
    """A pattern whose only wildcard is ``*`` (any run of characters, as ``fnmatch``)."""
    head, *middle, tail = pattern.split("*")
    shortest = len(head) + len(tail) + sum(map(len, middle))

    def match(name: str) -> bool:
        if len(name) < shortest or not name.startswith(head) or not name.endswith(tail):
            return False
        at, end = len(head), len(name) - len(tail)
        for part in middle:
            found = name.find(part, at, end)
            if found < 0:
                return False
            at = found + len(part)
        return True

    return match


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """One discovered store instance (a transcript file or a database).

    ``store_root`` is the directory it was found under (what watch subscribes to);
    ``found_by`` says how (``home``, ``codex_home``, ``data_home``, ``env:CLAUDE_CONFIG_DIR``,
    ``opencode_db``, ``opencode_channel``, ``project:<name>``, ``fixture``, ``explicit_root``).
    ``user`` is the account whose home it was found in by a system-profile discovery (its
    events carry it as ``user.name``); empty means the account Telltale runs as.
    """

    client: str
    kind: str
    path: str
    root_type: RootType
    store_root: str
    found_by: str
    device: int = 0
    inode: int = 0
    user: str = ""

    def sort_key(self) -> tuple[str, str, str]:
        return (self.client, self.kind, self.path)
