"""Incremental, streaming JSONL reader shared by every JSONL source.

The cursor is Filebeat-style: device, inode, byte offset after the last complete line,
and fingerprints of the file head and of the bytes just before the offset. A file whose
identity, head or tail fingerprint changed, or that shrank below the offset, was
replaced or truncated: it is read again from the start. A last line without its newline
is left for the next scan, since the agent may still be writing it.

Lines are never accumulated: the reader holds one read buffer (plus one line at most
``max_line_bytes`` long). A longer line is skipped in streaming fashion and reported as
an oversized line, by coordinate only.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

import msgspec

from telltale.digest import blake2b
from telltale.errors import SourceError
from telltale.readers.records import BOM

HEAD_BYTES = 1_024
TAIL_BYTES = 64
READ_CHUNK = 1 << 20
#: Lines above this are not decoded; they are quarantined as ``oversized_line``.
MAX_LINE_BYTES = 32 << 20


class JsonlCursor(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Resume point of one JSONL file. ``carry`` is the adapter's own small state."""

    device: int
    inode: int
    offset: int
    line: int
    head_len: int
    head: str
    tail: str
    size: int = 0
    carry: msgspec.Raw | None = None


class Line(msgspec.Struct, frozen=True):
    """One complete line: 1-based number, byte offset of its start, bytes without newline.

    ``data`` is ``None`` for an oversized line that was skipped without being held.
    """

    number: int
    offset: int
    data: bytes | None
    length: int


class Restart(msgspec.Struct, frozen=True, kw_only=True):
    """Why a file with a cursor is read again from 0, and what the cursor knew of it.

    ``reason``: ``truncated`` (smaller than the committed offset), ``head_changed`` or
    ``tail_changed`` (bytes before the offset differ), ``identity_changed`` (another file
    at the path). Reported as ``source_truncated`` / ``source_rewritten`` events.
    """

    reason: str
    previous_offset: int
    previous_size: int
    previous_head: str
    previous_inode: int
    size: int
    head: str
    inode: int


class _WireCursor(JsonlCursor, kw_only=True, omit_defaults=True):
    """Decoding form: msgspec can decode ``Raw`` but not ``Raw | None``."""

    carry: msgspec.Raw = msgspec.Raw(b"")


_cursor_decoder = msgspec.json.Decoder(_WireCursor)
_encoder = msgspec.json.Encoder()


def decode_cursor(raw: bytes | None) -> JsonlCursor | None:
    if not raw:
        return None
    try:
        wire = _cursor_decoder.decode(raw)
    except msgspec.DecodeError:
        # A cursor we cannot read is treated as absent: re-reading is at-least-once,
        # and event ids are deterministic, so downstream deduplication still holds.
        return None
    fields = msgspec.structs.asdict(wire)
    carry = fields.pop("carry")
    return JsonlCursor(**fields, carry=carry if len(carry) else None)


def encode_cursor(cursor: JsonlCursor) -> bytes:
    return _encoder.encode(cursor)


def _digest(data: bytes) -> str:
    return blake2b(data, digest_size=12).hexdigest()


Opener = Callable[[str], BinaryIO]


def _open_plain(path: str) -> BinaryIO:
    # O_NOFOLLOW where available: a store file swapped for a symlink is not followed.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    return os.fdopen(fd, "rb", buffering=0)


class JsonlReader:
    """Reads the complete lines appended to one file since its cursor.

    Use as a context manager; iterate :meth:`lines`; then :meth:`cursor` gives the
    resume point after the last line the caller consumed (pass its ``end``).
    ``restarted`` tells why reading began at 0 although a cursor existed.
    """

    def __init__(
        self,
        path: str,
        cursor: JsonlCursor | None,
        *,
        opener: Opener | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        seekable: bool = True,
    ) -> None:
        self.path = path
        self._prior = cursor
        self._opener = opener or _open_plain
        self._max_line = max_line_bytes
        self._seekable = seekable
        self._fh: BinaryIO | None = None
        self.device = 0
        self.inode = 0
        self.size = 0
        self.start_offset = 0
        self.start_line = 0
        self.restarted: str | None = None
        self._restart_reported = False
        self.head = ""
        self.head_len = 0
        self.partial_tail = False  # a final line without newline was left for later
        self.bytes_read = 0
        # Non-seekable streams: head bytes already consumed that lie past the start offset.
        self._replay = b""

    # -- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> JsonlReader:
        try:
            st = os.stat(self.path, follow_symlinks=False)
            self._fh = self._opener(self.path)
            fst = os.fstat(self._fh.fileno()) if hasattr(self._fh, "fileno") else st
        except FileNotFoundError as exc:
            raise SourceError("vanished", "file disappeared before it could be read") from exc
        except PermissionError as exc:
            raise SourceError("unreadable", "permission denied") from exc
        except io.UnsupportedOperation:
            fst = st
        except OSError as exc:
            raise SourceError("unreadable", f"{type(exc).__name__} errno={exc.errno}") from exc
        self.device, self.inode = fst.st_dev, fst.st_ino
        self.size = fst.st_size if self._seekable else -1
        self._position()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def _read_head(self) -> bytes:
        assert self._fh is not None
        if self._seekable:
            self._fh.seek(0)
        data = self._fh.read(HEAD_BYTES) or b""
        return data

    def _position(self) -> None:
        assert self._fh is not None
        head = self._read_head()
        prior = self._prior
        self.start_offset, self.start_line = 0, 0
        if prior is not None:
            reason = self._replacement_reason(prior, head)
            if reason is None:
                self.start_offset, self.start_line = prior.offset, prior.line
            else:
                self.restarted = reason
        # The head fingerprint covers what exists now, up to HEAD_BYTES.
        self.head_len = len(head)
        self.head = _digest(head)
        if self._seekable:
            self._fh.seek(self.start_offset)
        elif self.start_offset >= len(head):
            self._skip(self.start_offset - len(head))
        else:
            # The head was read from the stream and cannot be re-read: replay its tail.
            self._replay = head[self.start_offset :]

    def _skip(self, count: int) -> None:
        assert self._fh is not None
        while count > 0:
            chunk = self._fh.read(min(count, READ_CHUNK))
            if not chunk:
                raise SourceError("truncated", "stream ended before the committed offset")
            count -= len(chunk)

    def _replacement_reason(self, prior: JsonlCursor, head: bytes) -> str | None:
        assert self._fh is not None
        if self._seekable and (prior.device, prior.inode) != (self.device, self.inode):
            return "identity_changed"
        if self._seekable and self.size < prior.offset:
            return "truncated"
        if len(head) < prior.head_len or _digest(head[: prior.head_len]) != prior.head:
            return "head_changed"
        if self._seekable and prior.offset > 0 and prior.tail:
            back = min(TAIL_BYTES, prior.offset)
            self._fh.seek(prior.offset - back)
            if _digest(self._fh.read(back) or b"") != prior.tail:
                return "tail_changed"
        return None

    # -- reading ---------------------------------------------------------------------
    def lines(self) -> Iterator[Line]:
        """Yield complete lines from the start offset; stop before a partial last line.

        A UTF-8 byte order mark at the very start of the file is not part of the first
        record (some Windows editors and tools write one): it is dropped from the line's
        data, while ``offset`` and ``length`` still count it so cursors stay exact.
        """
        lines = self._lines()
        if self.start_offset == 0:
            for line in lines:
                data = line.data
                if data is not None and data.startswith(BOM):
                    line = Line(line.number, line.offset, data[len(BOM) :], line.length)
                yield line
                break
        yield from lines

    def _lines(self) -> Iterator[Line]:
        """The line splitter behind :meth:`lines`.

        Lines are sliced out of each chunk as read; only a line that spans chunks is
        assembled from pieces (joining the pending bytes onto every whole chunk would copy
        the file a second time).
        """
        fh = self._fh
        assert fh is not None
        offset = self.start_offset
        number = self.start_line
        pieces: list[bytes] = []  # the start of a line begun in an earlier chunk
        pending_len = 0
        skipping_from = -1  # offset of an oversized line being skipped
        skipped_len = 0
        read = fh.read
        max_line = self._max_line
        while True:
            chunk, self._replay = (self._replay or read(READ_CHUNK)), b""
            if not chunk:
                break
            self.bytes_read += len(chunk)
            if skipping_from >= 0:
                nl = chunk.find(b"\n")
                if nl < 0:
                    skipped_len += len(chunk)
                    continue
                number += 1
                skipped_len += nl
                yield Line(number, skipping_from, None, skipped_len)
                offset = skipping_from + skipped_len + 1
                skipping_from, skipped_len = -1, 0
                chunk = chunk[nl + 1 :]
            find = chunk.find
            start = 0
            nl = find(b"\n")
            if pieces:
                if nl < 0:
                    pieces.append(chunk)
                    pending_len += len(chunk)
                    if pending_len > max_line:
                        skipping_from, skipped_len, pieces, pending_len = offset, pending_len, [], 0
                    continue
                number += 1
                length = pending_len + nl
                if length > max_line:
                    yield Line(number, offset, None, length)
                else:
                    pieces.append(chunk[:nl])
                    yield Line(number, offset, b"".join(pieces), length)
                offset += length + 1
                pieces, pending_len = [], 0
                start = nl + 1
                nl = find(b"\n", start)
            while nl >= 0:
                number += 1
                length = nl - start
                yield Line(number, offset, chunk[start:nl] if length <= max_line else None, length)
                offset += length + 1
                start = nl + 1
                nl = find(b"\n", start)
            if start < len(chunk):
                pending_len = len(chunk) - start
                if pending_len > max_line:
                    skipping_from, skipped_len, pending_len = offset, pending_len, 0
                else:
                    pieces.append(chunk[start:])
        self.partial_tail = bool(pieces) or skipping_from >= 0

    def take_restart(self) -> Restart | None:
        """The restart of this read, once (for the first batch an adapter yields)."""
        prior = self._prior
        if self.restarted is None or prior is None or self._restart_reported:
            return None
        self._restart_reported = True
        return Restart(
            reason=self.restarted,
            previous_offset=prior.offset,
            previous_size=max(prior.size, prior.offset),
            previous_head=prior.head,
            previous_inode=prior.inode,
            size=self.size,
            head=self.head,
            inode=self.inode,
        )

    def cursor(self, end_offset: int, end_line: int, carry: bytes | None = None) -> JsonlCursor:
        """Cursor resuming after byte ``end_offset`` (just past a newline) and line ``end_line``.

        The head fingerprint covers the file's first bytes as read now (append-only
        files keep them); the tail fingerprint covers the bytes just before the offset.
        """
        return JsonlCursor(
            device=self.device,
            inode=self.inode,
            offset=end_offset,
            line=end_line,
            head_len=self.head_len,
            head=self.head,
            tail=self._tail_digest(end_offset),
            size=max(self.size, end_offset),
            carry=msgspec.Raw(carry) if carry is not None else None,
        )

    def _tail_digest(self, end_offset: int) -> str:
        if end_offset <= 0 or not self._seekable:
            # Non-seekable streams (decompressed archives) rely on the head fingerprint.
            return ""
        back = min(TAIL_BYTES, end_offset)
        fileno = getattr(self._fh, "fileno", None)
        if fileno is not None and hasattr(os, "pread"):
            # The file is still open: read the bytes in place (no second open and seek).
            try:
                return _digest(os.pread(fileno(), back, end_offset - back))
            except (OSError, io.UnsupportedOperation):
                pass
        with self._reopen() as fh:
            fh.seek(end_offset - back)
            return _digest(fh.read(back) or b"")

    def _reopen(self) -> BinaryIO:
        return self._opener(self.path)
