"""An additional JSONL output: a file fed from the outbox, with its own selection and rotation.

The local log (``log_path``) is written in the scan's own path and holds every event; an
additional ``jsonl`` output (a forwarder's file, a narrower copy) is delivered like a remote
output: its events are queued in the commit that advances the cursors, and acknowledged
once appended (and fsynced, unless ``fsync: false``). A write failure is a transient outcome:
the events stay queued and are written by a later delivery, never lost and never twice.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from telltale.errors import OutputError
from telltale.sinks import ACKED, ItemResult, Outcome, SendResult, bounded_reason
from telltale.sinks.jsonl import JsonlSink


class JsonlOutputSink:
    """A ``RemoteSink`` appending each batch to a rotated JSONL file."""

    def __init__(self, name: str, path: str, *, max_bytes: int, max_files: int, fsync: bool = True,
                 mode: int = 0o600) -> None:
        self.name = name
        self._path = path
        self._max_bytes, self._max_files, self._fsync, self._mode = max_bytes, max_files, fsync, mode
        self._file: JsonlSink | None = None

    def send(self, events: Sequence[bytes]) -> SendResult:
        if not events:
            return SendResult(())
        try:
            if self._file is None:  # created on first use: a missing directory is retried, not fatal
                self._file = JsonlSink(self._path, max_size=self._max_bytes, keep=self._max_files,
                                       fsync=self._fsync, mode=self._mode)
            # Chunks of at most max_bytes, so a large batch still rotates at the configured size
            # (a line is never split across files).
            start, size = 0, 0
            for index, event in enumerate(events):
                size += len(event) + 1
                if size > self._max_bytes and index > start:
                    self._append(events[start:index])
                    start, size = index, len(event) + 1
            self._append(events[start:])
        except OutputError as exc:
            cause = exc.__cause__
            code = errno.errorcode.get(cause.errno, "oserror") if isinstance(cause, OSError) and cause.errno else ""
            return SendResult.uniform(len(events), ItemResult(Outcome.RETRY, bounded_reason("jsonl", code)))
        return SendResult.uniform(len(events), ACKED)

    def _append(self, lines: Sequence[bytes]) -> None:
        assert self._file is not None
        self._file.rotate_if_needed(sum(len(e) + 1 for e in lines))
        self._file.write(lines)

    def close(self) -> None:
        self._file = None
