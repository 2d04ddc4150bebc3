"""The UTF-8 of a batch's long texts, encoded once for the event stage and detection.

The event stage measures and hashes each tool result's, argument list's and message's
UTF-8 (:func:`telltale.events.redaction.size_and_hash`); detection then scans the same
bytes (``telltale.detect.match._cut``). On the Claude tree that is ~19 MB of text, most
of it not ASCII, encoded twice: ~150 M instructions, 7% of what detection costs a cold
scan. While a scan with detection runs (:func:`sharing`), the first encoding of a long
value is kept until the batch has been evaluated (:func:`forget`), and the second is a
look-up.

Values are keyed by identity and the memo holds them, so an ``id`` cannot be reused by
another string while its entry is there; what is kept is bounded in bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

#: Shorter values are encoded again: a dict entry costs about what encoding them does.
MIN_CHARS = 512
#: At most this many bytes are kept (a batch is ~1 MiB of records; a larger one keeps its first values).
LIMIT_BYTES = 16 << 20

_memo: dict[int, tuple[str, bytes]] | None = None
_kept = 0


def encode(value: str) -> bytes:
    """``value`` as UTF-8 (lone surrogates passed through), kept for :func:`encoded` while
    :func:`sharing`."""
    global _kept
    data = value.encode("utf-8", "surrogatepass")
    memo = _memo
    if memo is not None and len(value) >= MIN_CHARS and _kept + len(data) <= LIMIT_BYTES:
        memo[id(value)] = (value, data)
        _kept += len(data)
    return data


def encoded(value: str) -> bytes | None:
    """The UTF-8 :func:`encode` kept for this very string, or ``None``."""
    memo = _memo
    if memo is None:
        return None
    hit = memo.get(id(value))
    return hit[1] if hit is not None and hit[0] is value else None


def forget() -> None:
    """Drop what is kept (a batch has been evaluated)."""
    global _kept
    if _memo:
        _memo.clear()
    _kept = 0


@contextmanager
def sharing() -> Iterator[None]:
    """Keep long values' UTF-8 between :func:`forget` calls, for the block (one scan). A
    block inside another (two scanners in one process) leaves the outer one's memo be."""
    global _memo, _kept
    if _memo is not None:
        yield
        return
    _memo, _kept = {}, 0
    try:
        yield
    finally:
        _memo, _kept = None, 0
