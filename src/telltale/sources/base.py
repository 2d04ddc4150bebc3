"""The adapter contract between acquisition and the rest of the pipeline.

An adapter turns one discovered :class:`~telltale.sources.spec.Source` into canonical
observations. It is the only code that knows its vendor's field names.

``acquire`` yields :class:`Batch` objects in native order. Each batch carries the cursor
that is valid once the batch's observations are durably written, so the pipeline can
commit long transcripts in windows without holding them in memory. Raising
:class:`~telltale.errors.SourceError` fails the source: nothing uncommitted from it is
emitted and its committed cursor stays.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

import msgspec

from telltale.model import Observation, Quarantine
from telltale.readers.jsonl import Restart
from telltale.sources.spec import Source


class HistoryMode(enum.StrEnum):
    """Which part of a source an acquisition reads."""

    INCREMENTAL = "incremental"  # resume from the committed cursor
    BACKFILL = "backfill"  # from the start, cursors untouched (sampling where the seed says so)
    ALL = "all"  # forensic pass from the earliest record, never touching scan state


class AcquireContext(msgspec.Struct, kw_only=True):
    """What an adapter may know about the scan it runs in."""

    history: HistoryMode = HistoryMode.INCREMENTAL
    dry_run: bool = False
    #: Wall-clock time of the scan start (epoch seconds), for idle checks; never a record time.
    now: float = 0.0


class SourceHealth(msgspec.Struct, frozen=True, kw_only=True):
    """A record health event an adapter raises about its own source.

    ``reason`` is the event's action (``source_reordered``, ``source_unparseable``);
    ``identity`` names the source state it is about (a content fingerprint), so the event
    id is a pure function of the source: raised again for the same state, it is the same
    event. ``fields`` are small, content-free counts and tokens.
    """

    reason: str
    identity: str
    fields: dict[str, int | str] = {}


class Batch(msgspec.Struct, kw_only=True):
    """A window of one source's acquisition.

    ``cursor`` is the adapter's opaque, JSON-encoded resume point, valid once everything
    in this batch and the batches before it is durable. ``None`` means "do not move".
    """

    observations: list[Observation]
    quarantined: list[Quarantine]
    cursor: bytes | None
    records_read: int = 0
    other_records: int = 0
    bytes_read: int = 0
    #: True when the source holds records this acquisition deliberately left out
    #: (sampling, saturation, a held partial line); coverage is then partial.
    partial: bool = False
    #: True when the adapter holds data that only time can settle (a block whose end is
    #: not marked): the source is read again by the next scan even if it did not change.
    revisit: bool = False
    #: Health events about the source, committed with this batch's cursor.
    health: list[SourceHealth] = []
    #: Set on the first batch of an append-only source read again from 0 although it had
    #: a cursor (truncated, rewritten or replaced): the pipeline reports it.
    reset: Restart | None = None


class PendingBatch:
    """What a database acquisition produced since its last batch: observations,
    quarantines and counts, handed over as one :class:`Batch` with the cursor that covers
    them (the SQLite adapters' per-run accumulator)."""

    __slots__ = ("bytes", "observations", "other", "quarantined", "records")

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        self.quarantined: list[Quarantine] = []
        self.records = 0
        self.other = 0
        self.bytes = 0

    def batch(self, cursor: bytes | None, *, partial: bool = False) -> Batch:
        return Batch(observations=self.observations, quarantined=self.quarantined, cursor=cursor,
                     records_read=self.records, other_records=self.other, bytes_read=self.bytes, partial=partial)


class _Versioned(Protocol):
    v: int


_C = TypeVar("_C", bound=_Versioned)


def cursor_decoder(cursor_type: type[_C], version: int = 1) -> Callable[[bytes | None], _C | None]:
    """The decoder of an adapter's JSON cursor (a Struct with a ``v`` field): ``None`` for
    no cursor, one that does not decode or one of another version. The source is then read
    again from its start, which emits nothing twice downstream (event ids are deterministic)."""
    decoder = msgspec.json.Decoder(cursor_type)

    def decode(raw: bytes | None) -> _C | None:
        if not raw:
            return None
        try:
            cursor = decoder.decode(raw)
        except msgspec.DecodeError:
            return None
        return cursor if cursor.v == version else None

    return decode


class Adapter(Protocol):
    """A source-owned native extractor for one source kind."""

    kind: str

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]: ...
