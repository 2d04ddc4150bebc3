"""Bounded whole-file reads for sources: a rewritten-whole document and the small sidecars beside it.

Both open read-only without following a link (``O_NOFOLLOW``: a link planted in place of
the file is not followed) and with ``O_NONBLOCK``, so a FIFO or device left where a file
was expected is refused by ``fstat`` instead of blocking the scan on ``open``.
"""

from __future__ import annotations

import os
import stat

from telltale.errors import SourceError

_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_CHUNK = 1 << 20


def _read_bounded(fd: int, bound: int) -> bytes | None:
    """At most ``bound`` bytes from ``fd``; ``None`` when there are more."""
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, min(_CHUNK, bound + 1 - size)):
        size += len(chunk)
        if size > bound:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def read_small(path: str, bound: int) -> bytes | None:
    """A regular file's bytes when it is at most ``bound`` long; ``None`` otherwise.

    For optional metadata beside a store: missing, a link, not a regular file, too big
    or unreadable all mean "not known", never a failure of the source.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > bound:
            return None
        return _read_bounded(fd, bound)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_document(path: str, bound: int) -> tuple[bytes, os.stat_result]:
    """A source's whole file and its ``fstat``; a file that cannot be read fails the source.

    Raises :class:`SourceError` ``vanished``, ``not_regular_file``, ``over_budget`` (over
    ``bound`` bytes) or ``unreadable``.
    """
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise SourceError("vanished", "file disappeared before it could be read") from None
    except OSError as exc:
        raise SourceError("unreadable", f"{type(exc).__name__} errno={exc.errno}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError("not_regular_file", "the document is not a regular file")
        data = _read_bounded(fd, bound) if st.st_size <= bound else None
    except OSError as exc:
        raise SourceError("unreadable", f"{type(exc).__name__} errno={exc.errno}") from None
    finally:
        os.close(fd)
    if data is None:
        raise SourceError("over_budget", f"document is over {bound} bytes")
    return data, st
