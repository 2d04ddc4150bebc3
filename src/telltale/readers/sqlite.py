"""Read-only snapshot reader for agent SQLite stores (OpenCode, OpenClaw, ...).

Agents keep their stores open while we scan, so the reader must never write, checkpoint,
lock for writing or create a file beside the database. SQLite's ``mode=ro`` alone is not
enough: it still creates ``-wal``/``-shm`` beside a WAL database when they are absent, and
a reader writes its read mark into a live ``-shm``. So the opening strategy follows what
the directory holds (the database header's bytes 18-19 say WAL when they are 2):

=====================================  ==========================================
state beside the database              how it is opened
=====================================  ==========================================
WAL header, no ``-wal`` (agent idle)   ``immutable=1``: no locks, no sidecars
WAL header, ``-wal`` and ``-shm``      ``mode=ro&readonly_shm=1``: uses the live
                                       sidecars read-only, sees committed WAL frames
WAL header, ``-wal`` but no ``-shm``   private copy of database and WAL in a 0700
(exclusive-locking writer)             temporary directory, opened there
rollback-journal header                ``mode=ro``: readers create nothing; a hot
                                       ``-journal`` fails with ``hot_journal``
=====================================  ==========================================

Every connection runs ``PRAGMA query_only=1`` with a 5-second busy timeout; a lock that
outlasts it raises ``SourceError("locked")`` and the next scan retries. One acquisition is
one read transaction (``BEGIN`` … ``ROLLBACK``), so all queries see one snapshot.

Admission (the seed's fixed limits, no public configuration): at most
:data:`MAX_ROWS` delivered rows, :data:`MAX_BYTES` aggregate projected bytes and
:data:`MAX_CELL_BYTES` per TEXT/BLOB cell or UTF-8 column name, all inclusive. Every
column occurrence of every delivered row is charged its name's UTF-8 bytes plus its
value: TEXT and BLOB bytes as SQLite exposes them, 0 for NULL, 8 for a number, whether or
not the caller uses the column. A query returning no rows checks its column names and
charges nothing. Exceeding a limit raises ``SourceError("over_budget")``.

API::

    with SqliteSnapshot(path) as snap:           # opened, BEGIN issued
        snap.mode                                # "immutable" | "read_only" | "private_copy" | ...
        snap.tables()                            # frozenset of table names
        snap.columns("part")                     # column names (PRAGMA table_info), in order
        snap.has_rows("session_message")         # at least one row?
        for row in snap.query(sql, params):      # admitted rows: dict column -> cell
            row["id"]
        snap.admission                           # shared Admission (rows, bytes charged)
        snap.verify_unchanged()                  # before trusting an immutable read
                                                 # ROLLBACK and close on exit

Cells are ``str`` (TEXT that is valid UTF-8), ``bytes`` (BLOB, or TEXT that is not valid
UTF-8), ``int``, ``float`` or ``None``. :func:`quote_ident` quotes an identifier.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import tempfile
import urllib.parse
from collections.abc import Iterator, Sequence
from typing import Any

from telltale.errors import SourceError

#: Delivered rows per acquisition, shared by every query of the snapshot.
MAX_ROWS = 100_000
#: Aggregate projected bytes (column names plus values) per acquisition.
MAX_BYTES = 134_217_728
#: One TEXT/BLOB cell or one UTF-8 column name.
MAX_CELL_BYTES = 8_388_608
#: Charge of a numeric cell.
NUMERIC_CELL_BYTES = 8
#: How long a lock may hold us before the source fails as ``locked``.
BUSY_TIMEOUT_MS = 5_000

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100
FETCH_CHUNK = 512

Cell = str | bytes | int | float | None
Row = dict[str, Cell]


class _Text:
    """TEXT cell as SQLite exposed it, before admission decides whether to decode it."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (table or column name) for interpolation."""
    return '"' + name.replace('"', '""') + '"'


class Admission:
    """The fixed admission budget of one acquisition (or one window of it)."""

    def __init__(self) -> None:
        self.rows = 0
        self.bytes = 0

    def check_names(self, names: Sequence[str]) -> list[int]:
        """UTF-8 byte length of each column name, each checked against the cell limit."""
        lengths = []
        for name in names:
            size = len(name.encode("utf-8", "surrogatepass"))
            if size > MAX_CELL_BYTES:
                raise SourceError("over_budget", f"column name of {size} bytes exceeds {MAX_CELL_BYTES}")
            lengths.append(size)
        return lengths

    def admit(self, cells: Sequence[Any], name_lengths: Sequence[int], names: Sequence[str]) -> Row:
        """Charge one delivered row and build it; raises before anything is retained."""
        self.rows += 1
        if self.rows > MAX_ROWS:
            raise SourceError("over_budget", f"more than {MAX_ROWS} delivered rows")
        charge = 0
        for value, name_len in zip(cells, name_lengths, strict=True):
            charge += name_len
            if isinstance(value, _Text | bytes):
                size = len(value.raw) if isinstance(value, _Text) else len(value)
                if size > MAX_CELL_BYTES:
                    raise SourceError("over_budget", f"cell of {size} bytes exceeds {MAX_CELL_BYTES}")
                charge += size
            elif value is not None:
                charge += NUMERIC_CELL_BYTES
        self.bytes += charge
        if self.bytes > MAX_BYTES:
            raise SourceError("over_budget", f"more than {MAX_BYTES} projected bytes")
        row: Row = {}
        for name, value in zip(names, cells, strict=True):
            if isinstance(value, _Text):
                try:
                    row[name] = value.raw.decode("utf-8")
                except UnicodeDecodeError:
                    row[name] = value.raw
            else:
                row[name] = value
        return row


def _sqlite_uri(path: str, query: str) -> str:
    """A ``file:`` URI with every special character of the path escaped."""
    posix = path.replace(os.sep, "/") if os.sep != "/" else path
    if not posix.startswith("/"):
        posix = "/" + posix  # Windows drive paths: file:///C:/...
    return "file://" + urllib.parse.quote(posix, safe="/:") + "?" + query


def _lstat_regular(path: str, what: str) -> os.stat_result | None:
    """lstat a file that must be a regular non-symlink file when it exists."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise SourceError("unreadable", f"{what}: permission denied") from exc
    except OSError as exc:
        raise SourceError("unreadable", f"{what}: errno={exc.errno}") from exc
    if stat.S_ISLNK(st.st_mode):
        raise SourceError("unreadable", f"{what} is a symlink")
    if not stat.S_ISREG(st.st_mode):
        raise SourceError("unreadable", f"{what} is not a regular file")
    return st


def _read_header(path: str) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise SourceError("vanished", "database disappeared before it could be read") from exc
    except PermissionError as exc:
        raise SourceError("unreadable", "database: permission denied") from exc
    except OSError as exc:
        raise SourceError("unreadable", f"database: errno={exc.errno}") from exc
    try:
        return os.read(fd, HEADER_BYTES)
    finally:
        os.close(fd)



def cell_int(value: object) -> int | None:
    """An integer cell as an int (a REAL is truncated); ``None`` for anything else, a
    boolean included (it is a number to Python, never a row id or a count here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)

def _error(exc: sqlite3.Error) -> SourceError:
    """Map an SQLite error to a bounded, content-free source failure."""
    name = str(getattr(exc, "sqlite_errorname", "") or type(exc).__name__)
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return SourceError("locked", f"{name} after {BUSY_TIMEOUT_MS} ms busy timeout")
    if name == "SQLITE_READONLY_ROLLBACK":
        return SourceError("hot_journal", "a hot rollback journal cannot be replayed read-only")
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        return SourceError("corrupt", name)
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH", "SQLITE_IOERR")):
        return SourceError("unreadable", name)
    if name == "SQLITE_ERROR":
        return SourceError("schema", name)
    return SourceError("unreadable", name)


class SqliteSnapshot:
    """One read-only snapshot of one database file; see the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.mode = ""
        self.admission = Admission()
        self._conn: sqlite3.Connection | None = None
        self._private_dir: str | None = None
        self._db_stat: os.stat_result | None = None

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> SqliteSnapshot:
        try:
            self._open()
        except BaseException:
            self._close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _open(self) -> None:
        st = _lstat_regular(self.path, "database")
        if st is None:
            raise SourceError("vanished", "database disappeared before it could be read")
        self._db_stat = st
        header = _read_header(self.path)
        if header and not header.startswith(SQLITE_MAGIC):
            raise SourceError("not_sqlite", "file does not carry the SQLite header")
        wal_mode = len(header) >= 20 and header[18] == 2 and header[19] == 2
        wal = _lstat_regular(self.path + "-wal", "-wal sidecar")
        shm = _lstat_regular(self.path + "-shm", "-shm sidecar")
        if wal_mode and wal is None:
            # The agent is not running: read the file as it is, with no locks and no sidecars.
            self.mode = "immutable"
            uri = _sqlite_uri(self.path, "immutable=1")
        elif wal_mode and shm is not None:
            # Live sidecars: read committed WAL frames; never write a read mark into -shm.
            self.mode = "read_only_wal"
            uri = _sqlite_uri(self.path, "mode=ro&readonly_shm=1")
        elif wal_mode:
            # -wal without -shm (an exclusive-locking writer): read a private copy.
            self.mode = "private_copy"
            uri = _sqlite_uri(self._private_copy(), "mode=ro")
        else:
            _lstat_regular(self.path + "-journal", "-journal sidecar")
            self.mode = "read_only"
            uri = _sqlite_uri(self.path, "mode=ro")
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=BUSY_TIMEOUT_MS / 1000.0,
                isolation_level=None,
                check_same_thread=True,
            )
        except sqlite3.Error as exc:
            raise _error(exc) from exc
        self._conn = conn
        conn.text_factory = _Text
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA query_only=1")
            conn.execute("PRAGMA trusted_schema=0")
            conn.execute("BEGIN")
            # A first read takes the snapshot (and the shared lock) now, not at first query.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise _error(exc) from exc

    def _private_copy(self) -> str:
        """Copy database and WAL into a private directory; fail if they moved meanwhile."""
        before = (_lstat_regular(self.path, "database"), _lstat_regular(self.path + "-wal", "-wal sidecar"))
        self._private_dir = tempfile.mkdtemp(prefix="telltale-sqlite-")
        target = os.path.join(self._private_dir, "copy.db")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        try:
            for src, dst in ((self.path, target), (self.path + "-wal", target + "-wal")):
                fd = os.open(src, flags)
                with os.fdopen(fd, "rb") as fin, open(dst, "wb") as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
        except OSError as exc:
            raise SourceError("unreadable", f"private copy failed: errno={exc.errno}") from exc
        after = (_lstat_regular(self.path, "database"), _lstat_regular(self.path + "-wal", "-wal sidecar"))
        if [_fingerprint(s) for s in before] != [_fingerprint(s) for s in after]:
            raise SourceError("locked", "database changed while it was copied")
        return target

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            conn.close()
        if self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None

    def verify_unchanged(self) -> None:
        """After an immutable read: fail if the file changed underneath (agent started)."""
        if self.mode != "immutable":
            return
        now = _lstat_regular(self.path, "database")
        if now is None or _fingerprint(now) != _fingerprint(self._db_stat):
            raise SourceError("locked", "database changed during an immutable read")

    # -- introspection ---------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        if self._conn is None:
            raise SourceError("unreadable", "snapshot is closed")
        try:
            return self._conn.execute(sql, tuple(params))
        except sqlite3.Error as exc:
            raise _error(exc) from exc

    @staticmethod
    def _text(value: object) -> str:
        if isinstance(value, _Text):
            return value.raw.decode("utf-8", "replace")
        return str(value)

    def tables(self) -> frozenset[str]:
        """Names of the ordinary tables in the database (schema introspection, not charged)."""
        cur = self._execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return frozenset(self._text(r[0]) for r in cur.fetchall())

    def columns(self, table: str) -> tuple[str, ...]:
        """Column names of a table in declaration order; empty when it does not exist."""
        cur = self._execute(f"PRAGMA table_info({quote_ident(table)})")
        return tuple(self._text(r[1]) for r in cur.fetchall())

    def has_rows(self, table: str) -> bool:
        """Whether a table holds at least one row (an existence probe, not charged)."""
        cur = self._execute(f"SELECT 1 FROM {quote_ident(table)} LIMIT 1")
        return cur.fetchone() is not None

    # -- admitted reads --------------------------------------------------------------
    def query(self, sql: str, params: Sequence[Any] = ()) -> Iterator[Row]:
        """Run one SELECT and yield its rows, each admitted (charged) before it is built."""
        cur = self._execute(sql, params)
        names = [d[0] for d in (cur.description or ())]
        name_lengths = self.admission.check_names(names)
        try:
            while True:
                chunk = cur.fetchmany(FETCH_CHUNK)
                if not chunk:
                    break
                for cells in chunk:
                    yield self.admission.admit(cells, name_lengths, names)
        except sqlite3.Error as exc:
            raise _error(exc) from exc
        finally:
            cur.close()

    def query_all(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return list(self.query(sql, params))


def _fingerprint(st: os.stat_result | None) -> tuple[int, int, int, int] | None:
    if st is None:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
