"""Which file-system events matter, decided from path names alone (WATCH-3/4/6/8).

Native notifications arrive by the thousand (an agent appending to a transcript, SQLite
touching its ``-shm`` on every read), so the filter must be cheap and must not itself
touch the file system: no ``stat``, no ``realpath`` (WATCH-8). Everything it needs, the
store roots and the set of known source paths, comes from the last discovery.

Decisions:

* ``TARGETED`` – a known source changed: scan that source only;
* ``REDISCOVER`` – a path that may be (or hold, or have held) a source appeared or went
  away, or a store root itself changed: discover again, then scan what is new;
* ``IGNORE`` – SQLite ``-shm``/``-journal`` churn, siblings of an ``OPENCODE_DB``
  override, names no selected kind can match, paths outside every store root.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from telltale.discovery.api import StoreRoot
from telltale.discovery.opencode import OPENCODE_KIND, is_candidate_name
from telltale.sources.registry import spec_for
from telltale.sources.spec import SourceSpec, StoreLayout

#: ``watchfiles`` change codes (``watchfiles.Change``).
ADDED, MODIFIED, DELETED = 1, 2, 3

#: Sidecars SQLite readers and writers create next to a database.
WAL_SUFFIX = "-wal"
IGNORED_SIDECARS = ("-shm", "-journal")


class Action(enum.Enum):
    IGNORE = "ignore"
    TARGETED = "targeted"
    REDISCOVER = "rediscover"


@dataclass(frozen=True)
class Decision:
    action: Action
    #: The source path to scan (a ``-wal`` event names its main database here).
    path: str = ""


_IGNORE = Decision(Action.IGNORE)
_REDISCOVER = Decision(Action.REDISCOVER)


@dataclass(frozen=True)
class _Root:
    path: str
    prefix: str  # path + separator, so "is below" is one startswith
    recursive: bool
    exact: frozenset[str]
    specs: tuple[SourceSpec, ...]
    sqlite_specs: tuple[SourceSpec, ...]
    opencode: bool


def _specs(kinds: Iterable[str]) -> tuple[SourceSpec, ...]:
    out: list[SourceSpec] = []
    for kind in kinds:
        try:
            out.append(spec_for(kind))
        except KeyError:  # a kind this build does not know: nothing can match it
            continue
    return tuple(out)


class PathFilter:
    """Classifies ``(change, path)`` pairs against the roots and sources of one discovery."""

    def __init__(
        self, roots: Iterable[StoreRoot], sources: Mapping[str, str], pending: Iterable[str] = ()
    ) -> None:
        """``sources`` maps each known source path to its kind; ``pending`` lists store
        roots that do not exist yet (their anchors' events matter only on their way)."""
        sep = os.sep
        self._pending = tuple(p.rstrip(sep) for p in pending)
        built: list[_Root] = []
        for root in roots:
            specs = _specs(root.kinds)
            built.append(
                _Root(
                    path=root.path,
                    prefix=root.path.rstrip(sep) + sep,
                    recursive=root.recursive,
                    exact=frozenset(root.exact_files),
                    specs=specs,
                    sqlite_specs=tuple(s for s in specs if s.layout is StoreLayout.SQLITE),
                    opencode=OPENCODE_KIND in root.kinds,
                )
            )
        # Deepest root first: a path belongs to the most specific root that covers it.
        self._roots = sorted(built, key=lambda r: len(r.path), reverse=True)
        self._root_paths = frozenset(r.path for r in built)
        self._sources = dict(sources)
        self._sqlite_sources = frozenset(
            p for p, kind in self._sources.items() if _is_sqlite_kind(kind)
        )

    # -- classification ----------------------------------------------------------------
    def classify(self, change: int, path: str) -> Decision:
        if path in self._root_paths:
            return _REDISCOVER  # a store root itself was created, removed or renamed
        if self._pending:
            below = path.rstrip(os.sep) + os.sep
            if any(p == path or p.startswith(below) for p in self._pending):
                return _REDISCOVER  # a component on the way to a store root that does not exist yet
        parent, name = os.path.split(path)
        root = self._root_for(parent)
        if root is None:
            return _IGNORE
        # SQLite sidecars first: a -wal names its main file (WATCH-3), -shm/-journal are
        # reader and writer bookkeeping (WATCH-4). Only for names that are, or could be,
        # a database of this root: a Claude project directory may well end in "-journal".
        for suffix in IGNORED_SIDECARS:
            if name.endswith(suffix) and self._is_database(root, parent, name[: -len(suffix)]):
                return _IGNORE
        if name.endswith(WAL_SUFFIX):
            main_name = name[: -len(WAL_SUFFIX)]
            if self._is_database(root, parent, main_name):
                main = path[: -len(WAL_SUFFIX)]
                if main in self._sources:
                    return Decision(Action.TARGETED, main)
                return _REDISCOVER  # a WAL for a database not known yet: it is being created
        if root.exact and parent == root.path and name not in root.exact:
            return _IGNORE  # an unrelated sibling of an OPENCODE_DB override (WATCH-6)
        if path in self._sources:
            if change == DELETED:
                return _REDISCOVER
            return Decision(Action.TARGETED, path)  # modified, or replaced (added over it)
        if self._could_match(root, parent, name):
            return _REDISCOVER
        if root.recursive and change in (ADDED, DELETED):
            # Without a lookup we cannot tell a new directory from a stray file, and a new
            # directory of a recursive store may already hold sources.
            return _REDISCOVER
        return _IGNORE

    def targets(self, changes: Iterable[tuple[int, str]]) -> tuple[set[str], bool]:
        """Classify a batch: the known sources to scan and whether to rediscover."""
        paths: set[str] = set()
        rediscover = False
        for change, path in changes:
            decision = self.classify(change, path)
            if decision.action is Action.TARGETED:
                paths.add(decision.path)
            elif decision.action is Action.REDISCOVER:
                rediscover = True
        return paths, rediscover

    # -- helpers -----------------------------------------------------------------------
    def _root_for(self, parent: str) -> _Root | None:
        for root in self._roots:
            if parent == root.path:
                return root
            if root.recursive and parent.startswith(root.prefix):
                return root
        return None

    def _is_database(self, root: _Root, parent: str, name: str) -> bool:
        """Whether ``parent/name`` is a known database or a database name this root may hold."""
        if not name:
            return False
        full = os.path.join(parent, name)
        if full in self._sqlite_sources:
            return True
        if parent == root.path and name in root.exact:
            return True  # an arbitrary OPENCODE_DB name, present or not
        if root.opencode and not root.exact and parent == root.path and is_candidate_name(name, channels=True):
            return True
        parent_name = os.path.basename(parent)
        return any(spec.matches(name, parent_name) for spec in root.sqlite_specs)

    def _could_match(self, root: _Root, parent: str, name: str) -> bool:
        if parent == root.path and name in root.exact:
            return True
        if root.exact:
            return False
        if root.opencode and parent == root.path and is_candidate_name(name, channels=True):
            return True
        parent_name = os.path.basename(parent)
        return any(spec.matches(name, parent_name) for spec in root.specs)


def _is_sqlite_kind(kind: str) -> bool:
    try:
        return spec_for(kind).layout is StoreLayout.SQLITE
    except KeyError:
        return False


def is_sqlite_kind(kind: str) -> bool:
    """Whether sources of ``kind`` are SQLite databases (sampled as main + ``-wal`` pairs)."""
    return _is_sqlite_kind(kind)
