"""Durable scan state: one SQLite file holding cursors and what suppresses re-emission.

Exactly-once into the local JSONL output is kept with a write-ahead intent:

1. ``begin_window`` records the intended cursors and the JSONL file's size before the
   write (committed, fsynced by SQLite);
2. the sink appends and fsyncs the events;
3. ``commit_window`` installs the cursors and clears the intent in one transaction.

A scan killed between 1 and 3 leaves the intent behind. ``recover`` then looks at the
JSONL file: if the whole write is there, the cursors are installed (the events are
already durable); otherwise the file is cut back to its size before the write and the
cursors stay. Either way no event is lost or written twice.

Everything else that suppresses re-emission travels with the intent too: the window's
``meta`` entries (the inventory digest, source-removal marks) are recorded in step 1 and
installed with the cursors, by ``commit_window`` or by ``recover``. State that only
decided *whether* to emit, written after the events, would re-emit them after a kill.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

import msgspec

from telltale import faults
from telltale.errors import StateError

#: The recovery step for a state database that cannot be used any more.
MOVE_ASIDE = "move it aside to rescan from the beginning; event ids are stable, so downstream dedupe is safe"
#: The recovery step after a full disk.
FREE_SPACE = (
    "free space and run the same command again; nothing is lost (cursors move only after their events are written)"
)
_WRITABLE = "make it and its directory writable by this user, or pass another --state-path"
#: First bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
#: ``meta`` key set by the first commit: a state without it has never recorded anything.
META_INITIALISED = "initialised"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cursors (
    source_key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    cursor BLOB NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pending_window (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    log_path TEXT NOT NULL,
    log_device INTEGER NOT NULL,
    log_inode INTEGER NOT NULL,
    start_size INTEGER NOT NULL,
    end_size INTEGER NOT NULL,
    cursors BLOB NOT NULL,
    windows BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS detect_windows (
    session_key TEXT PRIMARY KEY,
    window BLOB NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS pending_meta (
    key TEXT PRIMARY KEY,
    value BLOB
);
"""


class CursorUpdate(msgspec.Struct, frozen=True):
    source_key: str
    kind: str
    path: str
    cursor: bytes


class PendingWindow(msgspec.Struct, frozen=True):
    log_path: str
    log_device: int
    log_inode: int
    start_size: int
    end_size: int
    cursors: list[CursorUpdate]
    windows: dict[str, bytes]
    #: ``meta`` entries installed with the cursors (``None`` deletes the key).
    meta: dict[str, bytes | None] = {}


_cursor_list = msgspec.msgpack.Decoder(list[CursorUpdate])
_window_map = msgspec.msgpack.Decoder(dict[str, bytes])
_pack = msgspec.msgpack.Encoder()


_SET_META = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"


class WindowCommit:
    """A step's share of a window's commit: ``meta`` entries, then ``after(conn)``.

    The pipeline also records ``meta`` with the window's intent, so a window finished by
    :meth:`StateStore.recover` after a kill installs it too (installing it twice is
    harmless). ``after`` is for what only lives in memory.
    """

    __slots__ = ("after", "meta")

    def __init__(self, meta: dict[str, bytes | None], after: Callable[[Any], None] | None = None) -> None:
        self.meta = meta
        self.after = after

    def __call__(self, conn: Any) -> None:
        if conn is not None:
            for key, value in self.meta.items():
                if value is None:
                    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
                else:
                    conn.execute(_SET_META, (key, value))
        if self.after is not None:
            self.after(conn)


def source_key(kind: str, path: str) -> str:
    return f"{kind}\x1f{path}"


def explain(exc: BaseException) -> tuple[str, str]:
    """(what happened, the recovery step) for an error on the state database."""
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "the disk is full", FREE_SPACE
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return f"it cannot be written ({exc.strerror})", _WRITABLE
        return f"it cannot be used ({exc.strerror})", MOVE_ASIDE
    if isinstance(exc, msgspec.DecodeError):
        return "it holds a record that cannot be decoded", MOVE_ASIDE
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    text = str(exc)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "the disk is full (SQLite: database or disk is full)", FREE_SPACE
    if name.startswith("SQLITE_NOTADB") or "not a database" in text:
        return "it is not a SQLite database", MOVE_ASIDE
    if name.startswith("SQLITE_CORRUPT") or "malformed" in text:
        return "it is damaged (database disk image is malformed)", MOVE_ASIDE
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        return "it cannot be written (read-only)", _WRITABLE
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return "it cannot be opened", "check that it and its directory are readable and writable by this user"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return "it is busy (another process held a SQLite lock on it too long)", "run the same command again later"
    if name.startswith("SQLITE_IOERR"):
        return f"it could not be read or written ({name})", f"check the disk; if it persists, {MOVE_ASIDE}"
    if "no such table" in text or "no such column" in text or "has no column" in text:
        return "it has an unexpected schema (not a Telltale state database?)", MOVE_ASIDE
    return f"it failed ({name or type(exc).__name__})", MOVE_ASIDE


def state_error(path: str, exc: BaseException) -> StateError:
    what, recovery = explain(exc)
    return StateError(path, what, recovery)


@contextlib.contextmanager
def state_errors(path: str) -> Iterator[None]:
    """Turn an SQLite (or decoding) error on the state database into one clear StateError."""
    try:
        yield
    except (sqlite3.Error, msgspec.DecodeError) as exc:
        raise state_error(path, exc) from exc


#: State files (device, inode) this process has opened through SQLite.
_OPENED_BY_SQLITE: set[tuple[int, int]] = set()


def note_sqlite_open(path: str) -> None:
    """Record that this process holds an SQLite connection to ``path`` (see below)."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        _OPENED_BY_SQLITE.add((st.st_dev, st.st_ino))


def check_state_file(path: str) -> None:
    """Refuse an existing, non-empty state that is not an SQLite database, before anything
    (the lock included) is written beside it.

    A file this process already opened through SQLite is not opened again here: POSIX
    record locks belong to the process, and closing *any* descriptor of the file drops
    them all, SQLite's WAL locks included (sqlite.org/howtocorrupt.html, 2.2). A ``watch``
    that re-read the header at each rediscovery with its connection open dropped its locks,
    and the next writer to open the state did not see the watch's last commit (it read a
    source again from the start). SQLite itself refuses a non-database from then on.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise state_error(path, exc) from None
    if (st.st_dev, st.st_ino) in _OPENED_BY_SQLITE:
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise state_error(path, exc) from None
    if head and head != SQLITE_HEADER:
        raise StateError(path, "it is not a SQLite database", MOVE_ASIDE)


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _guarded(method: Callable[_P, _T]) -> Callable[_P, _T]:
    """A StateStore method whose SQLite errors become a StateError naming the path."""

    @functools.wraps(method)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return method(*args, **kwargs)
        except (sqlite3.Error, msgspec.DecodeError) as exc:
            store = args[0]
            raise state_error(getattr(store, "path", "?"), exc) from exc

    return wrapper


class StateStore:
    """The scanner's state database. Not shared with any agent store."""

    def __init__(self, path: str) -> None:
        self.path = path
        parent = os.path.dirname(os.path.abspath(path))
        check_state_file(path)
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if not os.path.exists(path):
                # Create with 0600 before SQLite opens it, so it is never world-readable.
                fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
                os.close(fd)
        except OSError as exc:
            raise state_error(path, exc) from exc
        try:
            self.conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA busy_timeout=30000")
            note_sqlite_open(path)
            self.conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise state_error(path, exc) from exc
        with contextlib.suppress(OSError):
            os.chmod(path, 0o600)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # closing checkpoints the WAL: may meet a full disk
            self.conn.close()

    @_guarded
    def is_new(self) -> bool:
        """Nothing was ever committed to this state (new, or emptied to 0 bytes)."""
        row = self.conn.execute(
            "SELECT (SELECT count(*) FROM meta WHERE key IN (?, 'fingerprints')) + "
            "EXISTS(SELECT 1 FROM cursors) + EXISTS(SELECT 1 FROM pending_window)",
            (META_INITIALISED,),
        ).fetchone()
        return int(row[0]) == 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; any SQLite error in it (the caller's too) is a StateError."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except (sqlite3.Error, msgspec.DecodeError) as exc:
            if self.conn.in_transaction:  # a failed COMMIT (disk full) leaves it open
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise state_error(self.path, exc) from exc

    # -- cursors -------------------------------------------------------------------
    @_guarded
    def cursor(self, kind: str, path: str) -> bytes | None:
        row = self.conn.execute(
            "SELECT cursor FROM cursors WHERE source_key = ?", (source_key(kind, path),)
        ).fetchone()
        return bytes(row[0]) if row else None

    def cursor_keys(self) -> list[tuple[str, str, str]]:
        """Every cursor row's key, kind and path (not the cursors themselves)."""
        rows = self.conn.execute("SELECT source_key, kind, path FROM cursors").fetchall()
        return [(str(k), str(kind), str(p)) for k, kind, p in rows]

    def cursor_row(self, key: str) -> tuple[bytes, float] | None:
        """One source's cursor and when it was last committed."""
        row = self.conn.execute("SELECT cursor, updated_at FROM cursors WHERE source_key = ?", (key,)).fetchone()
        return (bytes(row[0]), float(row[1])) if row else None

    def prune_sources(self, keys: Iterable[str]) -> None:
        """Forget removed sources: their cursor rows and removal marks."""
        keys = list(keys)
        with self.transaction() as conn:
            conn.executemany("DELETE FROM cursors WHERE source_key = ?", [(k,) for k in keys])
            conn.executemany("DELETE FROM meta WHERE key = ?", [("removed:" + k,) for k in keys])

    @_guarded
    def cursor_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM cursors").fetchone()[0])

    def _install(self, conn: sqlite3.Connection, cursors: Iterable[CursorUpdate], windows: dict[str, bytes]) -> None:
        now = time.time()
        conn.executemany(
            "INSERT INTO cursors(source_key, kind, path, cursor, updated_at) VALUES (?,?,?,?,?) "
            "ON CONFLICT(source_key) DO UPDATE SET cursor=excluded.cursor, updated_at=excluded.updated_at",
            [(c.source_key, c.kind, c.path, c.cursor, now) for c in cursors],
        )
        conn.executemany(
            "INSERT INTO detect_windows(session_key, window, updated_at) VALUES (?,?,?) "
            "ON CONFLICT(session_key) DO UPDATE SET window=excluded.window, updated_at=excluded.updated_at",
            [(k, v, now) for k, v in windows.items()],
        )

    # -- detection windows ---------------------------------------------------------
    @_guarded
    def has_detect_windows(self) -> bool:
        """Whether any session's detection window is stored (none before a first scan)."""
        try:
            return self.conn.execute("SELECT 1 FROM detect_windows LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError:  # a read-only state from before the table: look each up
            return True

    def detect_windows(self, keys: Iterable[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for key in keys:
            row = self.conn.execute("SELECT window FROM detect_windows WHERE session_key = ?", (key,)).fetchone()
            if row:
                out[key] = bytes(row[0])
        return out

    # -- meta ----------------------------------------------------------------------
    @_guarded
    def meta(self, key: str) -> bytes | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return bytes(row[0]) if row else None

    def set_meta(self, conn: sqlite3.Connection, key: str, value: bytes) -> None:
        conn.execute(_SET_META, (key, value))

    def meta_prefixed(self, prefix: str) -> dict[str, bytes]:
        """Every ``meta`` entry whose key starts with ``prefix``."""
        rows = self.conn.execute(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
        ).fetchall()
        return {str(k): bytes(v) for k, v in rows}

    def _install_meta(self, conn: sqlite3.Connection, meta: dict[str, bytes | None]) -> None:
        for key, value in meta.items():
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.set_meta(conn, key, value)

    # -- write-ahead windows -------------------------------------------------------
    def begin_window(self, pending: PendingWindow) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO pending_window(id, log_path, log_device, log_inode, start_size, end_size,"
                " cursors, windows) VALUES (1,?,?,?,?,?,?,?)",
                (
                    pending.log_path,
                    pending.log_device,
                    pending.log_inode,
                    pending.start_size,
                    pending.end_size,
                    _pack.encode(pending.cursors),
                    _pack.encode(pending.windows),
                ),
            )
            conn.execute("DELETE FROM pending_meta")
            conn.executemany("INSERT INTO pending_meta(key, value) VALUES (?, ?)", list(pending.meta.items()))
        faults.hit("begin")

    def commit_window(self, pending: PendingWindow, extra: Any = None) -> None:
        """Install the window's cursors and clear the intent; ``extra(conn)`` joins the transaction."""
        with self.transaction() as conn:
            self._install(conn, pending.cursors, pending.windows)
            self._install_meta(conn, pending.meta)
            conn.execute("DELETE FROM pending_window WHERE id = 1")
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", (META_INITIALISED, str(time.time()).encode())
            )
            conn.execute("DELETE FROM pending_meta")
            if extra is not None:
                extra(conn)
            faults.hit("commit")
        faults.hit("committed")

    def abandon_window(self) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM pending_window WHERE id = 1")
            conn.execute("DELETE FROM pending_meta")

    @_guarded
    def pending(self) -> PendingWindow | None:
        row = self.conn.execute(
            "SELECT log_path, log_device, log_inode, start_size, end_size, cursors, windows "
            "FROM pending_window WHERE id = 1"
        ).fetchone()
        if row is None:
            return None
        meta = {str(k): (bytes(v) if v is not None else None)
                for k, v in self.conn.execute("SELECT key, value FROM pending_meta")}
        return PendingWindow(
            log_path=row[0],
            log_device=row[1],
            log_inode=row[2],
            start_size=row[3],
            end_size=row[4],
            cursors=_cursor_list.decode(row[5]),
            windows=_window_map.decode(row[6]),
            meta=meta,
        )

    @_guarded
    def recover(self, extra_for: Any = None) -> str | None:
        """Finish or undo a window a killed scan left behind. Returns what was done.

        ``extra_for(pending, data)`` may return a callable joining the commit transaction
        (used to enqueue the recovered events for remote sinks).
        """
        pending = self.pending()
        if pending is None:
            return None
        try:
            st = os.stat(pending.log_path)
        except FileNotFoundError:
            self.abandon_window()
            return "abandoned"
        same_file = (st.st_dev, st.st_ino) == (pending.log_device, pending.log_inode)
        if same_file and st.st_size >= pending.end_size:
            data = b""
            if extra_for is not None:
                with open(pending.log_path, "rb") as fh:
                    fh.seek(pending.start_size)
                    data = fh.read(pending.end_size - pending.start_size)
            faults.hit("recover")
            self.commit_window(pending, extra_for(pending, data) if extra_for is not None else None)
            return "committed"
        if same_file and st.st_size > pending.start_size:
            # A torn write: cut the file back to where the window began.
            with open(pending.log_path, "r+b") as fh:
                fh.truncate(pending.start_size)
                fh.flush()
                os.fsync(fh.fileno())
        self.abandon_window()
        return "rolled_back"
