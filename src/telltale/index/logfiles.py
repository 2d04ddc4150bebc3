"""The log's files: the current one and its rotations, found by identity.

Rotation renames ``<log>`` to ``<log>.1`` and shifts the older ones up, so the index
names a file by (device, inode), never by path, and looks for it among the log's files
when a span is read.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator

_ROTATED = re.compile(r"\.(\d+)$")


def log_files(log_path: str) -> list[str]:
    """The log's files, oldest first: ``<log>.N`` … ``<log>.1``, then ``<log>``."""
    rotated: list[tuple[int, str]] = []
    for path in glob.glob(glob.escape(log_path) + ".*"):
        match = _ROTATED.search(path[len(log_path) :])
        if match is not None and path[len(log_path) :] == match.group(0):
            rotated.append((int(match.group(1)), path))
    out = [p for _, p in sorted(rotated, reverse=True)]
    if os.path.exists(log_path):
        out.append(log_path)
    return out


def by_identity(log_path: str) -> dict[tuple[int, int], str]:
    """(device, inode) → current path of each of the log's files."""
    out: dict[tuple[int, int], str] = {}
    for path in log_files(log_path):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out[(st.st_dev, st.st_ino)] = path
    return out


def read_lines(path: str, start: int, end: int) -> Iterator[bytes]:
    """The whole lines in ``[start, end)`` of a file (a span the index recorded)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(max(0, end - start))
    for line in data.split(b"\n"):
        if line:
            yield line


def iter_lines(path: str, chunk: int = 1 << 20) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of every complete line of a file, streamed (a torn tail is skipped)."""
    offset = 0
    pending = b""
    with open(path, "rb") as fh:
        while True:
            data = fh.read(chunk)
            if not data:
                break
            data = pending + data if pending else data
            at = 0
            while True:
                nl = data.find(b"\n", at)
                if nl < 0:
                    break
                yield offset, data[at:nl]
                offset += nl - at + 1
                at = nl + 1
            pending = data[at:]
