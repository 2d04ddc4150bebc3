"""The local JSONL sink: the first, durable write of every event.

Appends whole lines and fsyncs before any cursor moves. Rotation is size-based and
happens only between writes, so a line is never split across files; rotated files are
``<name>.1`` (newest) … ``<name>.<keep>``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from telltale.errors import OutputError

DEFAULT_MAX_SIZE = 100 * 1024 * 1024
DEFAULT_KEEP = 5


class JsonlSink:
    name = "jsonl"

    def __init__(self, path: str, *, max_size: int = DEFAULT_MAX_SIZE, keep: int = DEFAULT_KEEP) -> None:
        self.path = os.path.abspath(path)
        self.max_size = max_size
        self.keep = max(0, keep)
        parent = os.path.dirname(self.path)
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create log directory {parent}: {exc.strerror}") from exc

    def identity(self) -> tuple[int, int, int]:
        """(device, inode, size) of the current file, creating it (0600) when absent."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise OutputError(f"cannot open event log {self.path}: {exc.strerror}") from exc
        return st.st_dev, st.st_ino, st.st_size

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
            raise OutputError(f"cannot rotate event log: {exc.strerror}") from exc

    def write(self, lines: Sequence[bytes]) -> int:
        """Append ``lines`` (each without newline) and fsync. Returns bytes written."""
        if not lines:
            return 0
        # The trailing newline is the join separator's last use; no second copy of the window.
        payload = b"\n".join((*lines, b""))
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                view = memoryview(payload)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise OutputError(f"cannot write event log {self.path}: {exc.strerror}") from exc
        return len(payload)

    def _fsync_dir(self) -> None:
        if not hasattr(os, "O_DIRECTORY"):
            return
        fd = os.open(os.path.dirname(self.path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
