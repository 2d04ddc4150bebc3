"""Shared acquisition for stores written by whole-file rewrite (one JSON document per file).

Cline, Roo Code, Kilo Code (legacy) and Continue rewrite a whole JSON array on every
change, so a byte-offset cursor means nothing. The cursor here is a content fingerprint
plus the identity of every entry already accounted for, in file order:

* an entry's identity is its native id where it has one (``=<id>``), else a hash of its
  bytes and its ordinal among identical entries (``#<hash>:<n>``), so an entry that only
  shifted (one before it removed) keeps its identity and is reported as moved, not new;
* a rewrite emits only entries whose identity is new, and only once they are *settled*
  (the vendor handler decides: not ``partial``, or a later entry exists); an entry
  already accounted for is never emitted again, even when its content changed in place;
* emitted entries that vanished, or moved relative to each other, raise one
  ``source_reordered`` health event (DECISIONS "Health-event volume"), never a
  re-emission; entries that projected nothing (UI bookkeeping the extensions prune on
  every resume) are tracked silently (``~`` before their identity) and never reported;
* a document that does not parse (caught mid-rewrite) is retried on the next scan and
  never quarantined as a whole; when it stays invalid over :data:`UNPARSEABLE_SCANS`
  scans with the same modification time, ``source_unparseable`` is raised once for that
  content (and the file is still retried).

The document is read whole, bounded by :data:`MAX_DOCUMENT_BYTES`, and split into raw
entries by msgspec without decoding them; an entry over :data:`MAX_ENTRY_BYTES`, or one
that does not decode, is quarantined by index and accounted for, never retried.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import msgspec

from telltale.digest import blake2b
from telltale.model import BoundExceeded, Observation, Quarantine
from telltale.readers.files import read_document
from telltale.sources._jsonl_driver import Recorder, decode_failure_reason
from telltale.sources.base import AcquireContext, Batch, HistoryMode, SourceHealth
from telltale.sources.spec import Source

#: A whole document larger than this fails the source (``over_budget``): it is read whole.
MAX_DOCUMENT_BYTES = 256 << 20
#: One entry larger than this is quarantined (``oversized_entry``) without being decoded.
MAX_ENTRY_BYTES = 16 << 20
#: Entries per document at most; the rest are quarantined (``over_entry_bound``).
MAX_ENTRIES = 200_000
#: Scans a document may stay invalid with one modification time before it is reported.
UNPARSEABLE_SCANS = 3
#: Native ids longer than this are not used as identities (index and hash instead).
MAX_ID_CHARS = 200

_split_decoder = msgspec.json.Decoder(list[msgspec.Raw])


class DocumentCursor(msgspec.Struct, omit_defaults=True, kw_only=True):
    """Resume point of one whole-document source."""

    v: int = 1
    #: Content digest of the last document that parsed.
    fingerprint: str = ""
    #: Identities of the entries accounted for (emitted, quarantined or projecting
    #: nothing), in the order the document held them; ``~`` marks those that emitted
    #: nothing, whose disappearance is not worth an event.
    keys: list[str] = []
    #: Consecutive scans the document did not parse, the mtime it had, and the digest of
    #: the unparseable content already reported.
    invalid: int = 0
    invalid_mtime_ns: int = 0
    reported: str = ""


_cursor_decoder = msgspec.json.Decoder(DocumentCursor)
_cursor_encoder = msgspec.json.Encoder()


def decode_document_cursor(raw: bytes | None) -> DocumentCursor | None:
    if not raw:
        return None
    try:
        return _cursor_decoder.decode(raw)
    except msgspec.DecodeError:
        return None


class DocumentHandler(Protocol):
    """The vendor side: how a document splits into entries and what an entry projects."""

    def split(self, data: bytes) -> list[msgspec.Raw]:
        """The raw entries of a document; raises ``msgspec.DecodeError`` when it does not parse."""
        ...

    def decode(self, raw: msgspec.Raw) -> Any:
        """One entry's native Struct; raises ``msgspec.DecodeError``."""
        ...

    def native_id(self, entry: Any) -> str | None:
        """The entry's own id (a timestamp, a message id), or ``None``."""
        ...

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        """See the whole document once (``None`` for entries that did not decode).

        ``fresh`` is true when nothing of the document was accounted for before: the
        moment for once-per-document observations (the session's start).
        """
        ...

    def settled(self, index: int) -> bool:
        """Whether entry ``index`` is final (not partial, or a later entry exists)."""
        ...

    def project(self, index: int, key: str, rec: Recorder) -> None:
        """Add entry ``index``'s observations (``key`` is its identity, for coordinates)."""
        ...

    def session_id(self) -> str | None:
        """The session the document belongs to (for quarantine entries)."""
        ...


def content_hash(data: bytes) -> str:
    """Hash of an entry's JSON value, not its bytes: whitespace a writer chose does not count."""
    # An entry that does not decode is hashed as it is (and quarantined).
    with contextlib.suppress(msgspec.DecodeError):
        data = msgspec.json.encode(msgspec.json.decode(data))
    return blake2b(data, digest_size=6).hexdigest()


def entry_keys(raws: Sequence[msgspec.Raw], ids: Sequence[str | None]) -> list[str]:
    """Identity of every entry: its native id when present and unique, else content hash
    and ordinal among entries with the same hash."""
    keys: list[str] = []
    seen: set[str] = set()
    ordinals: dict[str, int] = {}
    for raw, native in zip(raws, ids, strict=True):
        key = f"={native}" if native is not None and len(native) <= MAX_ID_CHARS else None
        if key is None or key in seen:
            digest = content_hash(bytes(raw))
            n = ordinals.get(digest, 0)
            ordinals[digest] = n + 1
            key = f"#{digest}:{n}"
        seen.add(key)
        keys.append(key)
    return keys


def order_changes(old: Sequence[str], new: Sequence[str]) -> tuple[int, int]:
    """``(vanished, moved)``: old entries no longer present, and present ones out of order.

    ``moved`` counts entries whose old position is lower than that of an entry now
    before them (each entry that broke the old order once).
    """
    position = {key: i for i, key in enumerate(old)}
    present = set(new)
    vanished = sum(1 for key in old if key not in present)
    moved = 0
    highest = -1
    for key in new:
        at = position.get(key)
        if at is None:
            continue
        if at < highest:
            moved += 1
        else:
            highest = at
    return vanished, moved


def acquire_document(
    source: Source, cursor: bytes | None, ctx: AcquireContext, handler: DocumentHandler
) -> Iterator[Batch]:
    """One batch: the settled entries of ``source`` not accounted for by ``cursor``."""
    prior = decode_document_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
    prior = prior or DocumentCursor()
    data, st = read_document(source.path, MAX_DOCUMENT_BYTES)
    mtime_ns = st.st_mtime_ns
    digest = blake2b(data, digest_size=16).hexdigest()
    if digest == prior.fingerprint and not prior.invalid:
        # Touched or rewritten with the same bytes: nothing can be new, but an entry that
        # was not settled yet may be now only if something changed, so nothing to do.
        yield Batch(observations=[], quarantined=[], cursor=cursor, bytes_read=len(data))
        return
    try:
        raws = handler.split(data)
    except msgspec.DecodeError:
        yield _invalid(prior, digest, mtime_ns, len(data))
        return
    quarantined: list[Quarantine] = []
    entries: list[Any | None] = []
    for index, raw in enumerate(raws):
        entry = None
        if index < MAX_ENTRIES and len(raw) <= MAX_ENTRY_BYTES:
            try:
                entry = handler.decode(raw)
            except msgspec.DecodeError:
                entry = None
        entries.append(entry)
    ids = [handler.native_id(e) if e is not None else None for e in entries]
    keys = entry_keys(raws, ids)
    health: list[SourceHealth] = []
    silent = {k[1:] for k in prior.keys if k.startswith("~")}
    known = {k.lstrip("~") for k in prior.keys}
    vanished, moved = order_changes([k for k in prior.keys if not k.startswith("~")], keys)
    if vanished or moved:
        health.append(
            SourceHealth(
                reason="source_reordered",
                identity=digest,
                fields={
                    "vanished": vanished, "moved": moved,
                    "entries_before": len(prior.keys), "entries_now": len(keys),
                },
            )
        )
    handler.begin(entries, not prior.keys)
    accounted: set[str] = set()
    observations: list[Observation] = []
    held = False
    rec = Recorder(source.kind)
    other = 0
    for index, key in enumerate(keys):
        if key in known:
            continue
        entry = entries[index]
        if entry is None:
            quarantined.append(_quarantine(source, handler, index, key, raws[index], None))
            accounted.add(key)
            continue
        if not handler.settled(index):
            held = True
            continue
        try:
            handler.project(index, key, rec)
        except BoundExceeded as err:
            rec.take()
            quarantined.append(_quarantine(source, handler, index, key, raws[index], err))
        else:
            projected = rec.take()
            if not projected:
                other += 1
                silent.add(key)
            observations.extend(projected)
        accounted.add(key)
    new_cursor = DocumentCursor(
        fingerprint=digest,
        keys=[f"~{k}" if k in silent else k for k in keys if k in known or k in accounted],
    )
    yield Batch(
        observations=observations,
        quarantined=quarantined,
        cursor=_cursor_encoder.encode(new_cursor),
        records_read=len(accounted),
        other_records=other,
        bytes_read=len(data),
        partial=held,
        health=health,
    )


def _invalid(prior: DocumentCursor, digest: str, mtime_ns: int, size: int) -> Batch:
    """A document that does not parse: keep what was accounted, count the streak, retry."""
    streak = prior.invalid + 1 if prior.invalid and prior.invalid_mtime_ns == mtime_ns else 1
    health: list[SourceHealth] = []
    reported = prior.reported
    if streak >= UNPARSEABLE_SCANS and reported != digest:
        health.append(SourceHealth(reason="source_unparseable", identity=digest, fields={"scans": streak}))
        reported = digest
    cursor = msgspec.structs.replace(prior, invalid=streak, invalid_mtime_ns=mtime_ns, reported=reported)
    return Batch(
        observations=[], quarantined=[], cursor=_cursor_encoder.encode(cursor), bytes_read=size,
        partial=True, revisit=True, health=health,
    )


def _quarantine(
    source: Source, handler: DocumentHandler, index: int, key: str, raw: msgspec.Raw, err: BoundExceeded | None
) -> Quarantine:
    if err is not None:
        reason = "unbounded_value"
    elif index >= MAX_ENTRIES:
        reason = "over_entry_bound"
    elif len(raw) > MAX_ENTRY_BYTES:
        reason = "oversized_entry"
    else:
        try:
            msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            reason = decode_failure_reason(bytes(raw), exc)
        else:
            reason = "schema_mismatch"
    return Quarantine(
        source_kind=source.kind,
        path=source.path,
        reason=reason,
        session_id=handler.session_id(),
        record_id=key if len(key) <= 256 else None,
        sequence=index,
        row=f"entry:{index}",
        field=err.field if err is not None else None,
        bound=err.bound if err is not None else None,
    )
