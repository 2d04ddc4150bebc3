"""Metadata sampling: the fallback for writes native notifications can miss (WATCH-9..18).

macOS's notification backend can stay silent about commits to an SQLite WAL that is
already open, and network file systems deliver no events at all. For the stores already
indexed, the sampler therefore compares, round-robin and at a bounded rate, each item's
file identity ``(st_dev, st_ino)``, length and nanosecond mtime with a baseline. It reads
no content, lists no directory and discovers nothing: new stores still come from native
events or rediscovery (WATCH-14/15).

An item is one SQLite database as a ``(main, main-wal)`` pair, one transcript file, or
one directory (whose mtime moves when entries are added or removed). Baselines are
captured *before* a scan acquires a source (:meth:`MetadataSampler.baseline`), never
after, so a commit that lands while the scan runs still differs from the baseline and
triggers another scan (WATCH-11).
"""

from __future__ import annotations

import collections
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Most items sampled in any one-second window (SQLite pairs: WATCH-10).
DEFAULT_RATE = 64
#: How often the watch loop offers the sampler a turn, in seconds.
TICK_SECONDS = 0.25

Stat = Callable[[str], os.stat_result]

#: What one path looked like: (dev, ino, size, mtime_ns), or one of the markers below.
Signature = tuple[int, int, int, int] | str
MISSING = "missing"
REJECTED = "rejected"  # a linked component, or a leaf of the wrong type (WATCH-13)
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Item:
    """One sampled thing.

    ``paths`` are stat'ed together (a database and its ``-wal``); ``anchor`` is the
    directory below which every component down to the leaf's parent must be a real
    directory (``"/"`` checks the whole path, WATCH-13/18); ``directory`` says the leaf is
    a directory rather than a regular file.
    """

    key: str
    paths: tuple[str, ...]
    anchor: str
    directory: bool = False
    #: ``stat`` rather than ``lstat`` the leaf: only for a store root, which discovery
    #: reaches with ``stat`` too (a dotfile manager's linked ``~/.claude``).
    follow_leaf: bool = False


def _components(anchor: str, leaf: str) -> list[str]:
    """The directories strictly below ``anchor`` down to ``leaf``'s parent, top first."""
    parent = os.path.dirname(leaf)
    base = anchor.rstrip(os.sep)
    if not parent.startswith(base + os.sep):
        return []  # the parent is the anchor itself (or not below it): nothing to check
    out: list[str] = []
    current = parent
    while current != base and current.startswith(base + os.sep):
        out.append(current)
        up = os.path.dirname(current)
        if up == current:
            break
        current = up
    out.reverse()
    return out


def signature(item: Item, path: str, lstat: Stat = os.lstat, stat_: Stat = os.stat) -> Signature:
    """Metadata of one path of an item; never opens or reads it."""
    for component in _components(item.anchor, path):
        try:
            st = lstat(component)
        except FileNotFoundError:
            return MISSING
        except OSError:
            return UNREADABLE
        if not stat.S_ISDIR(st.st_mode):  # a symlink (or anything else) on the way
            return REJECTED
    try:
        st = stat_(path) if item.follow_leaf else lstat(path)
    except FileNotFoundError:
        return MISSING
    except OSError:
        return UNREADABLE
    wanted = stat.S_ISDIR if item.directory else stat.S_ISREG
    if not wanted(st.st_mode):
        return REJECTED
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class MetadataSampler:
    """Round-robin metadata sampling of indexed items, at most ``rate`` items per second.

    The rate holds over every one-second window (a sliding log of sample times), not just
    on average. ``clock``, ``lstat`` and ``stat_`` are injectable for tests.
    """

    def __init__(
        self,
        rate: int = DEFAULT_RATE,
        *,
        tick: float = TICK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        lstat: Stat = os.lstat,
        stat_: Stat = os.stat,
    ) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.tick = tick
        self.per_tick = max(1, -(-int(rate * tick * 1000) // 1000))  # ceil(rate * tick)
        self.clock = clock
        self.lstat = lstat
        self.stat = stat_
        self._items: dict[str, Item] = {}
        self._baselines: dict[str, tuple[Signature, ...]] = {}
        self._order: list[str] = []
        self._pos = 0
        self._recent: collections.deque[float] = collections.deque()
        self._next_at = 0.0
        #: Items sampled so far (for tests and the benchmark).
        self.samples = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def keys(self) -> list[str]:
        return list(self._order)

    # -- index -------------------------------------------------------------------------
    def add(self, item: Item) -> bool:
        """Index an item and capture its baseline now (before any scan reads it).

        Returns True when the item is new. Re-adding a known key keeps its baseline.
        """
        if item.key in self._items:
            self._items[item.key] = item
            return False
        self._items[item.key] = item
        self._order.append(item.key)
        self._baselines[item.key] = self._measure(item)
        return True

    def remove(self, key: str) -> None:
        if self._items.pop(key, None) is None:
            return
        self._baselines.pop(key, None)
        index = self._order.index(key)
        del self._order[index]
        if index < self._pos:
            self._pos -= 1
        if self._pos >= len(self._order):
            self._pos = 0

    def retain(self, keys: Iterable[str]) -> None:
        """Drop every item whose key is not in ``keys`` (stores that went away)."""
        keep = set(keys)
        for key in [k for k in self._order if k not in keep]:
            self.remove(key)

    def baseline(self, keys: Iterable[str]) -> None:
        """Capture baselines of these items now: call it before a scan acquires them."""
        for key in keys:
            item = self._items.get(key)
            if item is not None:
                self._baselines[key] = self._measure(item)

    # -- sampling ----------------------------------------------------------------------
    def next_due(self) -> float | None:
        """Clock time of the next useful turn, or None when nothing is indexed."""
        if not self._items:
            return None
        return self._next_at

    def sample(self) -> list[str]:
        """Sample the next items in round-robin order within the rate; return changed keys.

        A changed item's baseline moves to what was seen, so one change is reported once.
        """
        now = self.clock()
        if not self._items or now < self._next_at:
            return []
        self._next_at = now + self.tick
        window = self._recent
        while window and window[0] <= now - 1.0:
            window.popleft()
        budget = min(self.per_tick, self.rate - len(window), len(self._order))
        changed: list[str] = []
        for _ in range(max(0, budget)):
            if self._pos >= len(self._order):
                self._pos = 0
            key = self._order[self._pos]
            self._pos += 1
            window.append(now)
            self.samples += 1
            seen = self._measure(self._items[key])
            if seen != self._baselines.get(key):
                self._baselines[key] = seen
                changed.append(key)
        return changed

    def _measure(self, item: Item) -> tuple[Signature, ...]:
        return tuple(signature(item, path, self.lstat, self.stat) for path in item.paths)


def sqlite_item(path: str) -> Item:
    """A database and its WAL, with every component checked from the file-system root.

    No ``-shm`` or ``-journal``: readers touch those without any commit (WATCH-14).
    """
    return Item(key=path, paths=(path, path + "-wal"), anchor=os.sep)


def file_item(path: str, store_root: str) -> Item:
    """A transcript file; components below its store root must be real directories
    (the root itself may be reached through a link, as discovery allows)."""
    return Item(key=path, paths=(path,), anchor=store_root)


def directory_item(path: str, store_root: str) -> Item:
    """A watched directory: its mtime moves when an entry is added, removed or renamed."""
    return Item(key=path, paths=(path,), anchor=store_root, directory=True, follow_leaf=path == store_root)
