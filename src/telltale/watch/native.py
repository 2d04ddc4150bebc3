"""Native file-system notifications as a wake-up: which directories, and the watcher thread.

Every watched directory is subscribed *non-recursively*, one watch each, and Telltale
enumerates the subdirectories of recursive stores itself. That keeps three promises a
recursive OS subscription would not: a fixed upper bound on watches (``--max-watches``),
no watch ever placed through a symbolic link inside a store (a link to ``/`` in a project
directory must not make us watch the whole disk), and OpenCode directories watched
without recursion (WATCH-1). New subdirectories show up as events in their parent; the
watch loop then rediscovers and subscribes them.

Events only wake the loop. What is new is decided by stat fingerprints and cursors in
the pipeline, so a lost or duplicated event costs a rescan, never an event.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from telltale.discovery.api import StoreRoot
from telltale.discovery.walk import MAX_WALK_DEPTH, WalkTarget
from telltale.sources.registry import spec_for

#: Default upper bound on native watches (one per directory).
DEFAULT_MAX_WATCHES = 8192
#: Distinct changed paths held between two scans before the loop gives up on the detail
#: and rescans everything instead (bounds memory under an event storm).
INBOX_LIMIT = 100_000


@dataclass
class WatchPlan:
    """The directories to subscribe, in priority order, and those left over."""

    directories: list[str] = field(default_factory=list)
    #: Directories beyond ``--max-watches`` (covered by metadata sampling instead).
    unwatched: list[str] = field(default_factory=list)
    #: Directory -> the store root it belongs to.
    owner: dict[str, str] = field(default_factory=dict)
    limit: int = DEFAULT_MAX_WATCHES

    @property
    def limited(self) -> bool:
        return bool(self.unwatched)

    @property
    def total(self) -> int:
        return len(self.directories) + len(self.unwatched)


def _targets(kinds: Iterable[str]) -> list[WalkTarget]:
    out: list[WalkTarget] = []
    for kind in kinds:
        try:
            spec = spec_for(kind)
        except KeyError:
            continue
        out.append(WalkTarget(spec=spec, root_type=spec.root_type, found_by="watch"))
    return out


def anchor_directories(pending: Iterable[str]) -> list[str]:
    """For store roots that do not exist yet, the nearest existing ancestor of each.

    Watching that directory (non-recursively) is enough to notice the next path component
    appear; rediscovery then moves the anchor one level down until the store root exists.
    Components are checked with ``lstat``: an anchor is a real directory, never a link.
    """
    anchors: dict[str, None] = {}
    for path in pending:
        current = os.path.dirname(path.rstrip(os.sep)) or os.sep
        while True:
            try:
                st = os.lstat(current)
            except OSError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                anchors[current] = None
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return sorted(anchors)


def plan_watches(
    roots: Sequence[StoreRoot], max_watches: int = DEFAULT_MAX_WATCHES, anchors: Sequence[str] = ()
) -> WatchPlan:
    """Every directory worth a watch, breadth first across roots, at most ``max_watches``.

    Store roots come first (so a first session anywhere is noticed), then the roots'
    subdirectories level by level, only as deep as the roots' kinds can hold sources, then
    (while the limit allows) the anchors of store roots that do not exist yet. Links below a root are never entered; a
    directory reached twice (bind mounts) once.
    """
    plan = WatchPlan(limit=max_watches)
    seen: set[tuple[int, int]] = set()
    # (directory, depth below its root, root path, targets)
    level: list[tuple[str, int, str, list[WalkTarget]]] = []
    for root in sorted(roots, key=lambda r: r.path):
        try:
            st = os.stat(root.path)  # the root itself may sit behind a link, as in discovery
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        targets = _targets(root.kinds) if root.recursive else []
        level.append((root.path, 1, root.path, targets))
    while level:
        following: list[tuple[str, int, str, list[WalkTarget]]] = []
        for directory, depth, root_path, targets in level:
            if len(plan.directories) < max_watches:
                plan.directories.append(directory)
            else:
                plan.unwatched.append(directory)
            plan.owner[directory] = root_path
            if not targets or depth >= MAX_WALK_DEPTH or not any(t.descends(depth) for t in targets):
                continue
            following.extend(
                (child, depth + 1, root_path, targets) for child in _subdirectories(directory, seen)
            )
        level = following
    # Anchors last: directories that hold sources come first under the watch limit.
    for anchor in anchors:
        try:
            st = os.stat(anchor)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if len(plan.directories) < max_watches:
            plan.directories.append(anchor)
            plan.owner[anchor] = anchor
    return plan


def _subdirectories(directory: str, seen: set[tuple[int, int]]) -> list[str]:
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []  # unreadable or gone: discovery reports it, the watch just skips it
    out: list[str] = []
    for entry in entries:
        try:
            if entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
                continue
            st = entry.stat(follow_symlinks=False)
            if st.st_ino == 0:
                st = os.lstat(entry.path)
        except OSError:
            continue
        identity = (st.st_dev, st.st_ino)
        if identity in seen:
            continue
        seen.add(identity)
        out.append(entry.path)
    return out


@dataclass
class Drained:
    """What the watcher threads delivered since the last drain."""

    changes: set[tuple[int, str]]
    first_at: float | None
    overflow: bool
    errors: list[str]
    stopped: bool


class Inbox:
    """Where watcher threads leave changes and the main loop waits for them.

    Changes are a set (a path changed twice is one entry); past ``limit`` distinct entries
    only an ``overflow`` flag remains and the loop rescans everything.
    """

    def __init__(self, limit: int = INBOX_LIMIT, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self._cond = threading.Condition(threading.Lock())
        self._changes: set[tuple[int, str]] = set()
        self._first_at: float | None = None
        self._overflow = False
        self._errors: list[str] = []
        self._stopped = False

    def put(self, changes: Iterable[tuple[int, str]]) -> None:
        with self._cond:
            if self._first_at is None:
                self._first_at = self.clock()
            if not self._overflow:
                self._changes.update(changes)
                if len(self._changes) > self.limit:
                    self._overflow = True
                    self._changes = set()
            self._cond.notify_all()

    def fail(self, reason: str) -> None:
        with self._cond:
            self._errors.append(reason)
            if self._first_at is None:
                self._first_at = self.clock()
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def wait(self, timeout: float | None) -> None:
        """Block until something arrives, ``stop`` is called or ``timeout`` passes."""
        with self._cond:
            if self._changes or self._overflow or self._errors or self._stopped:
                return
            self._cond.wait(timeout)

    def drain(self) -> Drained:
        with self._cond:
            out = Drained(
                changes=self._changes,
                first_at=self._first_at,
                overflow=self._overflow,
                errors=self._errors,
                stopped=self._stopped,
            )
            self._changes = set()
            self._first_at = None
            self._overflow = False
            self._errors = []
            return out


#: Builds the notifier: ``(paths, debug, force_polling, poll_delay_ms, recursive,
#: ignore_permission_denied)``, watchfiles' ``RustNotify`` signature.
NotifyFactory = Callable[[list[str], bool, bool, int, bool, bool], Any]


def rust_notify_factory() -> NotifyFactory:
    from watchfiles._rust_notify import RustNotify

    factory: NotifyFactory = RustNotify
    return factory


class NativeWatcher:
    """One non-recursive notifier over a list of directories, drained by one thread."""

    #: Notifier poll step: how often its loop checks for changes and for ``stop``.
    STEP_MS = 50
    #: Longest a change is held back to be grouped with others inside the notifier.
    DEBOUNCE_MS = 50
    #: The notifier returns "timeout" this often when idle (the thread then loops).
    TIMEOUT_MS = 5_000

    def __init__(self, directories: Sequence[str], inbox: Inbox, factory: NotifyFactory | None = None) -> None:
        self.directories = list(directories)
        self.inbox = inbox
        self._factory = factory
        self._stop = threading.Event()
        self._notify: Any = None
        self._thread: threading.Thread | None = None
        #: Some directories may have been skipped (unreadable, or ``tolerant`` start).
        self.partial = False

    def start(self, *, tolerant: bool = False) -> None:
        """Subscribe every directory.

        Strict (default): raises ``FileNotFoundError`` when a directory vanished since it
        was planned (the caller re-plans) and ``OSError`` when the OS refuses a watch (say
        its watch limit), so no directory goes unwatched silently. A directory we may not
        read is skipped (discovery cannot read it either); ``partial`` then says so.
        ``tolerant`` skips whatever cannot be watched: the last resort after re-planning.
        """
        if not self.directories:
            return
        factory = self._factory or rust_notify_factory()
        if tolerant:
            self._notify = factory(self.directories, False, False, 300, False, True)
            self.partial = True
        else:
            try:
                self._notify = factory(self.directories, False, False, 300, False, False)
            except PermissionError:
                self._notify = factory(self.directories, False, False, 300, False, True)
                self.partial = True
        self._thread = threading.Thread(target=self._run, name="telltale-watch-native", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        notify = self._notify
        while not self._stop.is_set():
            try:
                result = notify.watch(self.DEBOUNCE_MS, self.STEP_MS, self.TIMEOUT_MS, self._stop)
            except Exception as exc:  # the OS watcher failed (queue overflow, limit, ...)
                self.inbox.fail(type(exc).__name__)
                return
            if isinstance(result, set):
                self.inbox.put(result)
            elif result == "stop":
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._notify is not None:
            with contextlib.suppress(Exception):  # already closed, or never fully started
                self._notify.close()
            self._notify = None
