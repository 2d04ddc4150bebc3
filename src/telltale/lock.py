"""One writer per state database: an advisory lock beside it, and who holds it.

Every command that writes a state database (``scan``, each ``watch`` iteration,
``delivery run``, ``delivery retry-blocked``) holds ``<state>.lock`` from before the
state is opened to after its last commit. Two writers on one state would each read the
same cursors and emit the same events; with the lock the second one waits or exits 75.

The lock is ``flock`` on POSIX and ``msvcrt.locking`` on Windows, taken directly rather
than through ``filelock``: filelock 4 takes ~95 ms to import (half of a no-change
``scan --once``), silently swaps in a marker-file protocol on file systems without
``flock``, and records no holder that a reader could show. Both primitives are released
by the kernel when the holder dies, so a SIGKILLed scan never leaves the state locked.

The holder writes a small record into the lock file (pid, command, start time, host);
:func:`holder` reads it *without locking anything*, so ``telltale status``, ``--dry-run``
and ``delivery status`` never delay a writer. A record whose process is gone (killed
holder) or whose pid now belongs to another process (Linux: start time differs) is stale
and reads as "not held".
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import time
from collections.abc import Callable, Iterator

import msgspec

from telltale.errors import OutputError, StateLocked
from telltale.hostname import hostname

#: Suffix of the lock file beside the state database.
LOCK_SUFFIX = ".lock"
#: Seconds between attempts while waiting for the lock.
POLL_SECONDS = 0.1
#: Bytes of holder record read at most (a record is ~150 bytes).
_RECORD_MAX = 4096
#: Windows locks a byte range and refuses reads inside it: lock one byte far past the
#: record so readers can still read the record at offset 0.
_WINDOWS_LOCK_OFFSET = 1 << 30


class LockHolder(msgspec.Struct, frozen=True):
    """The writer holding a state's lock."""

    pid: int
    #: What it runs, e.g. ``scan --once``, ``watch``, ``delivery run``.
    command: str
    #: When it took the lock (Unix time, seconds).
    since: float
    host: str = ""

    def describe(self) -> str:
        when = dt.datetime.fromtimestamp(self.since, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        where = f" on {self.host}" if self.host and self.host != hostname() else ""
        return f"pid {self.pid}{where} (telltale {self.command}) since {when}"


class _Record(msgspec.Struct, frozen=True):
    pid: int
    command: str
    since: float
    host: str = ""
    #: Process start time where the OS gives one (Linux: clock ticks since boot).
    start: str | None = None


_decode_record = msgspec.json.Decoder(_Record)


def lock_path(state_path: str) -> str:
    return os.path.abspath(state_path) + LOCK_SUFFIX


def holder(state_path: str) -> LockHolder | None:
    """Who holds the lock of ``state_path`` now, or None. Never blocks, never locks."""
    record = _read_record(lock_path(state_path))
    if record is None or not _alive(record):
        return None
    return LockHolder(pid=record.pid, command=record.command, since=record.since, host=record.host)


@contextlib.contextmanager
def writer_lock(
    state_path: str,
    command: str,
    *,
    wait: float | None = 0.0,
    on_wait: Callable[[LockHolder | None], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[None]:
    """Hold the writer lock of ``state_path`` for the ``with`` block.

    ``wait``: seconds to wait for a held lock (0: do not wait; None: as long as it takes).
    ``on_wait(holder)`` is called when waiting starts and whenever the holder changes.
    ``stop()`` true ends a wait early. A lock not taken raises :class:`StateLocked`
    (exit 75) naming the holder.
    """
    fd = _acquire(lock_path(state_path), command, wait, on_wait, stop)
    try:
        yield
    finally:
        _release(fd)


# -- acquisition -----------------------------------------------------------------------
def _open(path: str) -> int:
    """Open (create, 0600) the lock file; a link there is refused, never followed."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        return os.open(path, flags, 0o600)
    except OSError as exc:
        raise OutputError(f"cannot open the state lock {path}: {exc.strerror}") from exc


def _acquire(
    path: str,
    command: str,
    wait: float | None,
    on_wait: Callable[[LockHolder | None], None] | None,
    stop: Callable[[], bool] | None,
) -> int:
    fd = _open(path)
    deadline = None if wait is None else time.monotonic() + max(wait, 0.0)
    shown: tuple[int, float] | bool | None = False  # the holder last shown (False: none yet)
    try:
        while not _locked(fd, path):
            current = _current_holder(path)
            now = time.monotonic()
            if (deadline is not None and now >= deadline) or (stop is not None and stop()):
                raise StateLocked(path, current)
            key = (current.pid, current.since) if current is not None else None
            if on_wait is not None and key != shown:
                on_wait(current)
            shown = key
            time.sleep(POLL_SECONDS if deadline is None else min(POLL_SECONDS, max(deadline - now, 0.0)))
        _write_record(fd, command)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _locked(fd: int, path: str) -> bool:
    try:
        return _try_lock(fd)
    except OSError as exc:  # e.g. ENOLCK: a network file system without lock support
        raise OutputError(f"cannot lock the state {path}: {exc.strerror}") from exc


def _current_holder(path: str) -> LockHolder | None:
    """The holder of a lock just found taken; its record may lag the lock by a moment."""
    for _ in range(5):
        record = _read_record(path)
        if record is not None and _alive(record):
            return LockHolder(pid=record.pid, command=record.command, since=record.since, host=record.host)
        time.sleep(0.02)
    return None


def _release(fd: int) -> None:
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # a clean exit leaves no record behind
        _unlock(fd)
    finally:
        os.close(fd)


def _write_record(fd: int, command: str) -> None:
    record = _Record(
        pid=os.getpid(), command=command, since=time.time(), host=hostname(),
        start=_start_token(os.getpid()),
    )
    data = msgspec.json.encode(record)
    with contextlib.suppress(OSError):  # the record is informative; the lock is what counts
        # Written over the old record, then cut to length: a reader never sees an empty file
        # while the lock is held (at worst a torn record, which reads as "holder not known").
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data)
        os.ftruncate(fd, len(data))


def _read_record(path: str) -> _Record | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        data = os.read(fd, _RECORD_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return _decode_record.decode(data) if data else None
    except msgspec.DecodeError:  # torn by a writer taking the lock this instant
        return None


def _alive(record: _Record) -> bool:
    if record.host and record.host != hostname():
        return True  # a shared state on another host: its pid means nothing here
    if record.pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - os.kill(pid, 0) would terminate it
        return True
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    except OSError:
        return False
    start = _start_token(record.pid)
    return record.start is None or start is None or start == record.start


def _start_token(pid: int) -> str | None:
    """The process's start time (Linux), telling a reused pid from the holder."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


# -- the platform primitive ------------------------------------------------------------
if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import errno
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
