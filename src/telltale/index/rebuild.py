"""``telltale index rebuild``: the index derived again from the log alone.

Reads the rotated files oldest first, then the current one, and indexes them as the scan
would have; an event that appears twice (a ``--backfill``, a reset state, a rewritten
transcript) counts once, by ``event.id``.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from telltale.index import schema
from telltale.index.documents import event_id_of
from telltale.index.logfiles import iter_lines, log_files
from telltale.index.upkeep import index_window

#: Lines indexed per batch (bounds memory; one transaction holds the whole rebuild).
BATCH_LINES = 20_000


@dataclass
class RebuildResult:
    files: int = 0
    lines: int = 0
    events: int = 0

    @property
    def duplicates(self) -> int:
        return self.lines - self.events


def rebuild(conn: sqlite3.Connection, log_path: str, *, content: str = "redacted") -> RebuildResult:
    """Empty the index and index every file of ``log_path`` (inside the caller's transaction)."""
    schema.ensure(conn)
    schema.clear(conn)
    schema.set_meta(conn, "log_path", os.path.abspath(log_path))
    result = RebuildResult()
    for path in log_files(log_path):
        st = os.stat(path)
        result.files += 1
        start = 0
        lines: list[bytes] = []
        for offset, line in iter_lines(path):
            if not lines:
                start = offset
            lines.append(line)
            if len(lines) >= BATCH_LINES:
                result.events += _index(conn, st, start, lines, content)
                result.lines += len(lines)
                lines = []
        if lines:
            result.events += _index(conn, st, start, lines, content)
            result.lines += len(lines)
    return result


def _index(conn: sqlite3.Connection, st: os.stat_result, start: int, lines: list[bytes], content: str) -> int:
    return index_window(
        conn, device=st.st_dev, inode=st.st_ino, start=start, lines=lines,
        ids=[event_id_of(line) or "" for line in lines], observations=None, content=content,
    )  # fmt: skip
