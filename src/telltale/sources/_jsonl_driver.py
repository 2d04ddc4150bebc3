"""Shared acquisition loop for line-oriented stores (JSONL transcripts, text process logs).

The vendor modules own every field name; this loop only owns the mechanics they share:
resuming from the JSONL cursor (and dropping the carried state when the file was
replaced), windowing the output into ~4 MiB batches whose cursors are valid resume
points, and bounded, content-free quarantine entries for lines that cannot be read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import msgspec

from telltale.model import BoundExceeded, Observation, Quarantine, make_observation
from telltale.readers.jsonl import JsonlCursor, JsonlReader, Line, decode_cursor, encode_cursor
from telltale.readers.records import NESTING_TOO_DEEP, failure_reason
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.spec import Source

#: Input bytes per batch: long transcripts are committed in windows of about this size.
BATCH_BYTES = 4 << 20


class Out:
    """What one window of input produced so far."""

    __slots__ = ("observations", "other_records", "quarantined", "records_read")

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        self.quarantined: list[Quarantine] = []
        self.records_read = 0
        self.other_records = 0


class LineHandler(Protocol):
    """Vendor side of the loop: maps lines, keeps the state that must cross scans."""

    def handle(self, line: Line, out: Out) -> None: ...

    def finish(self, out: Out) -> None:
        """Called once the available input is exhausted: map what is complete.

        What may still grow (an entry without its end) can stay held; :meth:`resume_point`
        then names its start and the batch is marked partial.
        """
        ...

    def resume_point(self) -> tuple[int, int] | None:
        """``(offset, line)`` to resume from when a line was consumed but not yet mapped.

        ``None`` means everything consumed so far was mapped: resume after the last line.
        """
        ...

    def carry(self) -> bytes | None:
        """Small JSON state for the cursor, consistent with :meth:`resume_point`."""
        ...


class MapsEachLine:
    """For a :class:`LineHandler` that maps each line as it reads it: nothing is held at the
    end of the input, so there is nothing to finish and no earlier point to resume from."""

    def finish(self, out: Out) -> None:
        return None

    def resume_point(self) -> tuple[int, int] | None:
        return None


HandlerFactory = Callable[[bytes | None], LineHandler]


def decode_jsonl_cursor(raw: bytes | None) -> JsonlCursor | None:
    """The reader's cursor decoding (kept as a name other adapters import)."""
    return decode_cursor(raw)


def acquire_lines(
    source: Source,
    cursor: bytes | None,
    ctx: AcquireContext,
    factory: HandlerFactory,
    *,
    batch_bytes: int = BATCH_BYTES,
    revisit: Callable[[], bool] | None = None,
) -> Iterator[Batch]:
    """Run ``factory(carry)``'s handler over the complete lines appended since ``cursor``.

    ``revisit``, asked once the input is exhausted, says whether the handler holds data
    that only time settles (the last batch then asks to be read again, see ``Batch``).
    """
    prior = decode_jsonl_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
    with JsonlReader(source.path, prior) as reader:
        carried: bytes | None = None
        if prior is not None and reader.start_offset > 0 and prior.carry is not None:
            carried = bytes(prior.carry)
        handler = factory(carried)
        out = Out()
        end_offset, end_line = reader.start_offset, reader.start_line
        window_bytes = 0
        bytes_mark = 0
        for line in reader.lines():
            try:
                handler.handle(line, out)
            except RecursionError:
                # JSON nested deeper than the decoder follows: this record only.
                out.quarantined.append(line_quarantine(source.kind, source, line, NESTING_TOO_DEEP))
            end_offset, end_line = line.offset + line.length + 1, line.number
            window_bytes += line.length + 1
            if window_bytes >= batch_bytes:
                offset, number = handler.resume_point() or (end_offset, end_line)
                raw = encode_cursor(reader.cursor(offset, number, carry=handler.carry()))
                batch = _batch(out, raw, reader.bytes_read - bytes_mark)
                batch.reset = reader.take_restart()
                yield batch
                bytes_mark = reader.bytes_read
                out, window_bytes = Out(), 0
        handler.finish(out)
        held = handler.resume_point()
        offset, number = held or (end_offset, end_line)
        raw = encode_cursor(reader.cursor(offset, number, carry=handler.carry()))
        batch = _batch(out, raw, reader.bytes_read - bytes_mark)
        batch.partial = reader.partial_tail or held is not None
        batch.revisit = revisit is not None and revisit()
        batch.reset = reader.take_restart()
        yield batch


def _batch(out: Out, cursor: bytes, bytes_read: int) -> Batch:
    return Batch(
        observations=out.observations,
        quarantined=out.quarantined,
        cursor=cursor,
        records_read=out.records_read,
        other_records=out.other_records,
        bytes_read=bytes_read,
    )


def line_quarantine(
    kind: str,
    source: Source,
    line: Line,
    reason: str,
    *,
    session_id: str | None = None,
    record_id: str | None = None,
    err: BoundExceeded | None = None,
) -> Quarantine:
    """A content-free quarantine entry for one line (by coordinate, reason and bound)."""
    return Quarantine(
        source_kind=kind,
        path=source.path,
        reason=reason,
        session_id=_short(session_id),
        record_id=_short(record_id),
        sequence=line.number,
        line=line.number,
        offset=line.offset,
        field=err.field if err is not None else None,
        bound=err.bound if err is not None else None,
    )


def _short(value: str | None) -> str | None:
    # Ids come from untrusted input; an absurd one is not worth reporting verbatim.
    if value is None or len(value) > 256:
        return None
    return value


def decode_failure_reason(data: bytes, exc: msgspec.DecodeError) -> str:
    """Tell invalid UTF-8 / malformed JSON / nesting apart from a schema mismatch, content-free."""
    return failure_reason(data, exc)


class Recorder:
    """Builds one native record's observations; all or none of them are kept.

    A canonical bound exceeded by any value of the record quarantines the whole record
    (``unbounded_value``), never a truncated copy of it.
    """

    __slots__ = ("_items", "kind")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: list[Observation] = []

    def add(self, *, source_identity: str, coordinate: str, **fields: Any) -> None:
        fields.setdefault("source_kind", self.kind)
        self._items.append(
            make_observation(
                adapter=self.kind, source_identity=source_identity, coordinate=coordinate, **fields
            )
        )

    def take(self) -> list[Observation]:
        items, self._items = self._items, []
        return items


class BoundedMap:
    """An insertion-ordered str→str map that forgets its oldest entries beyond ``limit``.

    Carried state must stay small: losing an old entry only loses a tool name on a very
    late result, never correctness of ids.
    """

    def __init__(self, limit: int, items: dict[str, str] | None = None) -> None:
        self.limit = limit
        self.items: dict[str, str] = dict(items or {})
        self._trim()

    def set(self, key: str, value: str) -> None:
        self.items.pop(key, None)
        self.items[key] = value
        self._trim()

    def pop(self, key: str) -> str | None:
        return self.items.pop(key, None)

    def get(self, key: str) -> str | None:
        return self.items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self.items

    def __len__(self) -> int:
        return len(self.items)

    def _trim(self) -> None:
        while len(self.items) > self.limit:
            del self.items[next(iter(self.items))]


def first_str(args: object, keys: tuple[str, ...]) -> str | None:
    """The first non-empty string among ``args[key]`` for ``keys`` (tool facets)."""
    if not isinstance(args, dict):
        return None
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


class ToolFacets:
    """Which of a tool call's arguments are its command line, file path or URL, and
    whether a file tool reads or writes (the ``file_access`` facet, docs/adapters.md).

    Built by each vendor module from its own tool names and argument keys; the
    lookup itself is the same for every agent. ``writes`` names the file tools that
    write (create, edit, patch); ``reads`` those that only read. A file tool in
    neither leaves ``file_access`` unset and the normalisation stage decides from
    its arguments (a tool that does both by an argument, such as an editor with a
    ``view`` command).
    """

    def __init__(
        self,
        *,
        shell: frozenset[str],
        files: frozenset[str],
        urls: frozenset[str],
        command_keys: tuple[str, ...] = ("command", "cmd"),
        path_keys: tuple[str, ...] = ("path", "file_path"),
        url_keys: tuple[str, ...] = ("url",),
        writes: frozenset[str] = frozenset(),
        reads: frozenset[str] = frozenset(),
    ) -> None:
        self._by_tool: dict[str, tuple[str, tuple[str, ...]]] = {}
        for names, facet, keys in ((urls, "url", url_keys), (files, "file_path", path_keys),
                                   (shell, "command", command_keys)):
            for name in names:
                self._by_tool[name] = (facet, keys)
        self._access = {**dict.fromkeys(reads, "read"), **dict.fromkeys(writes, "write")}

    def __call__(self, tool: str | None, args: object) -> dict[str, str]:
        if tool is None:
            return {}
        rule = self._by_tool.get(tool)
        if rule is None:
            return {}
        value = first_str(args, rule[1])
        if value is None:
            return {}
        access = self._access.get(tool) if rule[0] == "file_path" else None
        return {rule[0]: value, "file_access": access} if access is not None else {rule[0]: value}


def json_text(value: object) -> str | None:
    """A string stays itself; anything else becomes compact JSON text (``None`` stays ``None``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode("utf-8")
