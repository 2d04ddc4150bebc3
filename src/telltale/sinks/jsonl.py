"""The local JSONL sink: the first, durable write of every event.

Appends whole lines and fsyncs before any cursor moves. Rotation is size-based and
happens only between writes, so a line is never split across files; rotated files are
``<name>.1`` (newest) … ``<name>.<keep>``.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence

import msgspec

from telltale import faults
from telltale.errors import OutputError

DEFAULT_MAX_SIZE = 100 * 1024 * 1024
DEFAULT_KEEP = 5
_NEWLINE = b"\n"


def _iov_max() -> int:
    try:
        return max(2, min(int(os.sysconf("SC_IOV_MAX")), 1024)) & ~1
    except (AttributeError, ValueError, OSError):
        return 16


_IOV_MAX = _iov_max()


def _failure(what: str, exc: OSError) -> OutputError:
    """One line: what failed, why, and (disk full) how to recover."""
    message = f"{what}: {exc.strerror}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        message += (
            "; free space and run the same command again; nothing is lost (cursors move only after their events "
            "are written)"
        )
    return OutputError(message)


class HeldEvents(msgspec.Struct, frozen=True):
    """A non-empty log file (the current one, or the newest rotated one)."""

    path: str
    device: int
    inode: int
    size: int


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_lines(fd: int, lines: Sequence[bytes]) -> int:
    """Write each line and its newline; ``writev`` in batches where available."""
    if not hasattr(os, "writev"):
        payload = _NEWLINE.join((*lines, b""))
        _write_all(fd, payload)
        return len(payload)
    iov: list[bytes] = [_NEWLINE] * (2 * len(lines))
    iov[::2] = lines
    total = 0
    for start in range(0, len(iov), _IOV_MAX):
        part = iov[start : start + _IOV_MAX]
        want = sum(map(len, part))
        done = os.writev(fd, part)
        if done < want:  # a short write: finish this batch from where it stopped
            _write_all(fd, b"".join(part)[done:])
        total += want
    return total


class JsonlSink:
    name = "jsonl"

    def __init__(self, path: str, *, max_size: int = DEFAULT_MAX_SIZE, keep: int = DEFAULT_KEEP,
                 fsync: bool = True, mode: int = 0o600, dir_mode: int = 0o700, group: int | None = None) -> None:
        self.path = os.path.abspath(path)
        self.max_size = max_size
        self.keep = max(0, keep)
        #: ``False`` only for additional outputs that asked for it (``fsync: false``): the local
        #: log is always fsynced, because cursors advance on it.
        self.fsync = fsync
        #: Mode of a file this sink creates (the local log: 0640, see DECISIONS).
        self.mode = mode
        #: Group of the files (and the directory) this sink creates, for a forwarder (``--log-group``).
        self.group = group
        parent = os.path.dirname(self.path)
        try:
            created = not os.path.isdir(parent)
            os.makedirs(parent, mode=dir_mode, exist_ok=True)
            if created:
                if group is not None and hasattr(os, "chown"):
                    os.chown(parent, -1, group)
                os.chmod(parent, dir_mode)  # whatever the umask
        except OSError as exc:
            raise OutputError(f"cannot create log directory {parent}: {exc.strerror}") from exc

    def identity(self) -> tuple[int, int, int]:
        """(device, inode, size) of the current file, creating it (0600) when absent."""
        try:
            fd = self._open()
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _failure(f"cannot open event log {self.path}", exc) from exc
        return st.st_dev, st.st_ino, st.st_size

    def held_events(self) -> HeldEvents | None:
        """The log file that already holds events, if any (rotated files count)."""
        for path in (self.path, f"{self.path}.1"):
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_size > 0:
                return HeldEvents(path, st.st_dev, st.st_ino, st.st_size)
        return None

    def rotate_if_needed(self, incoming: int) -> None:
        """Rotate before a write of ``incoming`` bytes would cross the size limit."""
        if self.max_size <= 0:
            return
        try:
            size = os.stat(self.path).st_size
        except FileNotFoundError:
            return
        if size == 0 or size + incoming <= self.max_size:
            return
        try:
            if self.keep == 0:
                os.unlink(self.path)
            else:
                oldest = f"{self.path}.{self.keep}"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(oldest)
                for index in range(self.keep - 1, 0, -1):
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(f"{self.path}.{index}", f"{self.path}.{index + 1}")
                os.replace(self.path, f"{self.path}.1")
            self._fsync_dir()
        except OSError as exc:
            raise _failure(f"cannot rotate event log {self.path}", exc) from exc

    def write(self, lines: Sequence[bytes]) -> int:
        """Append ``lines`` (each without newline) and fsync. Returns bytes written.

        Where ``writev`` exists the lines go to the kernel as they are, with no joined
        copy of the window: the scan runs this on a writer thread, and a join would hold
        the GIL for the whole copy while the scan waits.
        """
        if not lines:
            return 0
        try:
            fd = self._open()
            try:
                written = faults.write("write", fd, lines, _write_lines)
                faults.hit("fsync")
                if self.fsync:
                    os.fsync(fd)
                faults.hit("written")
            finally:
                os.close(fd)
        except OSError as exc:
            raise _failure(f"cannot write event log {self.path}", exc) from exc
        return written

    def _open(self) -> int:
        """Open for appending; a file this creates gets exactly ``mode`` (whatever the umask)."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, self.mode)
        except FileExistsError:
            return os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            if self.group is not None and hasattr(os, "fchown"):
                os.fchown(fd, -1, self.group)  # before the mode: a chown may clear it
            if hasattr(os, "fchmod"):
                os.fchmod(fd, self.mode)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # never leave a log behind with the wrong group or mode
            raise
        return fd

    def _fsync_dir(self) -> None:
        if not hasattr(os, "O_DIRECTORY"):
            return
        fd = os.open(os.path.dirname(self.path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
