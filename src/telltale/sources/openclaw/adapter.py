"""OpenClaw: JSONL transcripts (with rotated copies) and the per-agent SQLite store.

Both stores hold the same pi-coding-agent session entries (format ``version: 3``): a
``session`` header, then ``message`` entries (roles ``user``, ``assistant``,
``toolResult``) and bookkeeping entries (``model_change``, ``thinking_level_change``,
``custom``, ``compaction``, ...). One mapping (:class:`EntryMapper`) serves both readers:
the JSONL adapter feeds it lines, the SQLite adapter ``transcript_events.event_json``
rows. Coordinates come from the entries' own ids, so a transcript rotated to
``*.jsonl.reset.<ts>`` / ``*.jsonl.deleted.<ts>`` yields the same observation ids.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.errors import SourceError
from telltale.model import (
    STRING_BOUND,
    BoundExceeded,
    Family,
    Provenance,
    Quarantine,
    Stage,
    TokenUsage,
    encode_arguments,
    iso_time,
)
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded
from telltale.readers.sqlite import MAX_BYTES, MAX_ROWS, SqliteSnapshot
from telltale.sources._jsonl_driver import (
    MapsEachLine,
    Out,
    Recorder,
    ToolFacets,
    acquire_lines,
    decode_failure_reason,
    json_text,
)
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.spec import Source

CLIENT = "openclaw"
KIND_JSONL = "openclaw.agents"
KIND_SQLITE = "openclaw.sqlite"

# -- native shapes -----------------------------------------------------------------------

_ABSENT = msgspec.Raw()  # an omitted raw field (empty, falsy)


class _Block(msgspec.Struct):
    type: str | None = None
    text: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None


class _Usage(msgspec.Struct):
    input: int | None = None
    output: int | None = None
    cacheRead: int | None = None
    cacheWrite: int | None = None
    totalTokens: int | None = None


class _Details(msgspec.Struct):
    exitCode: int | None = None


class _Message(msgspec.Struct):
    role: str
    content: str | list[_Block] | None = None
    timestamp: int | float | str | None = None
    provider: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    stopReason: str | None = None
    toolCallId: str | None = None
    toolName: str | None = None
    isError: bool | None = None
    details: msgspec.Raw = _ABSENT


class _Entry(msgspec.Struct, tag_field="type"):
    id: str | None = None
    parentId: str | None = None
    timestamp: str | int | float | None = None


class _SessionHeader(_Entry, tag="session"):
    version: int | None = None
    cwd: str | None = None


class _MessageEntry(_Entry, tag="message"):
    message: _Message | None = None


class _ModelChange(_Entry, tag="model_change"):
    provider: str | None = None
    modelId: str | None = None


class _ThinkingLevel(_Entry, tag="thinking_level_change"):
    pass


class _Custom(_Entry, tag="custom"):
    pass


class _Compaction(_Entry, tag="compaction"):
    pass


class _BranchSummary(_Entry, tag="branch_summary"):
    pass


class _Label(_Entry, tag="label"):
    pass


class _SessionInfo(_Entry, tag="session_info"):
    pass


class _CustomMessage(_Entry, tag="custom_message"):
    pass


_EntryUnion = (
    _SessionHeader
    | _MessageEntry
    | _ModelChange
    | _ThinkingLevel
    | _Custom
    | _Compaction
    | _BranchSummary
    | _Label
    | _SessionInfo
    | _CustomMessage
)
_BOOKKEEPING = (_ModelChange, _ThinkingLevel, _Custom, _Compaction, _BranchSummary, _Label, _SessionInfo,
                _CustomMessage)
_KNOWN_TYPES = frozenset(
    {
        "session", "message", "model_change", "thinking_level_change", "custom", "compaction",
        "branch_summary", "label", "session_info", "custom_message",
    }
)
_decoder = msgspec.json.Decoder(_EntryUnion)
_details_decoder = msgspec.json.Decoder(_Details)


class _Envelope(msgspec.Struct):
    type: Any = None
    id: Any = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)

# -- tool facets -------------------------------------------------------------------------

_SHELL_TOOLS = frozenset({"exec", "bash"})
_FILE_TOOLS = frozenset({"read", "write", "edit"})
_URL_TOOLS = frozenset({"web_fetch"})
_AUTHORED_KEYS = (
    "command", "cmd", "content", "oldText", "newText", "old_string", "new_string", "input", "task",
)


_facets = ToolFacets(
    shell=_SHELL_TOOLS, files=_FILE_TOOLS, urls=_URL_TOOLS,
    writes=frozenset({"write", "edit"}), reads=frozenset({"read"}), path_keys=("path", "file_path", "file"),
)


def claw_usage(usage: _Usage) -> TokenUsage:
    """pi-ai usage in OpenTelemetry meaning: ``input`` excludes the cache, so add it back."""
    parts = [v for v in (usage.input, usage.cacheRead, usage.cacheWrite) if v is not None]
    return TokenUsage(
        input_tokens=sum(parts) if parts else None,
        output_tokens=usage.output,
        cache_read_input_tokens=usage.cacheRead,
        cache_creation_input_tokens=usage.cacheWrite,
        total_tokens=usage.totalTokens,
    )


# -- shared mapping ----------------------------------------------------------------------


class Position(msgspec.Struct, frozen=True):
    """Where one entry sits in its store: a JSONL line or a SQLite ``(session_id, seq)`` row."""

    sequence: int
    fallback: str  # coordinate for an entry without its own id ("line:12", "seq:12")
    line: int | None = None
    offset: int | None = None
    row: str | None = None


class MapperState(msgspec.Struct, omit_defaults=True):
    """What must survive between scans (the session header is read once)."""

    session_id: str | None = None
    cwd: str | None = None


class EntryMapper:
    """Maps one pi-agent session entry (JSON bytes) to observations; used by both readers."""

    def __init__(
        self,
        kind: str,
        path: str,
        state: MapperState,
        *,
        pinned_session: str | None = None,
        attributes: dict[str, str] | None = None,
        agent: str | None = None,
    ) -> None:
        self.kind = kind
        self.path = path
        self.state = state
        self.agent = agent
        # SQLite rows name their session in a column: a header that disagrees is a conflict.
        self.pinned_session = pinned_session
        self.attributes = attributes or {}

    def map(self, data: bytes, pos: Position, out: Out) -> None:
        out.records_read += 1
        try:
            entry = decode_guarded(_decoder.decode, data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(self._failure(data, exc, pos))
            return
        if isinstance(entry, _SessionHeader):
            self._header(entry, pos, out)
            return
        if isinstance(entry, _BOOKKEEPING):
            out.other_records += 1
            return
        assert isinstance(entry, _MessageEntry)
        message = entry.message
        if message is None:
            out.quarantined.append(self.quarantine("schema_mismatch", pos, entry.id))
            return
        rec = Recorder(self.kind)
        try:
            if message.role == "user":
                self._user(entry, message, pos, rec, out)
            elif message.role == "assistant":
                self._assistant(entry, message, pos, rec, out)
            elif message.role == "toolResult":
                self._tool_result(entry, message, pos, rec, out)
            else:
                out.quarantined.append(self.quarantine("unknown_record_type", pos, entry.id))
                return
        except BoundExceeded as err:
            rec.take()
            out.quarantined.append(self.quarantine("unbounded_value", pos, entry.id, err))
            return
        out.observations.extend(rec.take())

    # -- helpers -------------------------------------------------------------------------
    @property
    def session_id(self) -> str:
        return self.state.session_id or self.pinned_session or _file_session(self.path)

    def quarantine(
        self, reason: str, pos: Position, record_id: str | None, err: BoundExceeded | None = None
    ) -> Quarantine:
        return Quarantine(
            source_kind=self.kind,
            path=self.path,
            reason=reason,
            session_id=self.session_id,
            record_id=record_id if record_id is not None and len(record_id) <= 256 else None,
            sequence=pos.sequence,
            line=pos.line,
            offset=pos.offset,
            row=pos.row,
            field=err.field if err is not None else None,
            bound=err.bound if err is not None else None,
        )

    def _failure(self, data: bytes, exc: msgspec.DecodeError, pos: Position) -> Quarantine:
        reason = decode_failure_reason(data, exc)
        record_id = None
        if reason == "schema_mismatch":
            try:
                env = decode_guarded(_envelope_decoder.decode, data)
            except msgspec.DecodeError:
                env = _Envelope()
            if not isinstance(env.type, str) or env.type not in _KNOWN_TYPES:
                reason = "unknown_record_type"
            record_id = env.id if isinstance(env.id, str) else None
        return self.quarantine(reason, pos, record_id)

    def _common(self, entry: _Entry, pos: Position, fallback_time: object = None) -> dict[str, Any]:
        occurred = iso_time(entry.timestamp) or iso_time(fallback_time)
        return {
            "client": CLIENT,
            "session_id": self.session_id,
            "sequence": pos.sequence,
            "occurred_at": occurred,
            "cwd": self.state.cwd,
            "agent": self.agent,
            "attributes": dict(self.attributes),
            "provenance": Provenance(
                source_kind=self.kind, path=self.path, line=pos.line, offset=pos.offset, row=pos.row,
                record_id=entry.id,
            ),
        }

    def _coordinate(self, entry: _Entry, pos: Position) -> str:
        return f"entry:{entry.id}" if entry.id else pos.fallback

    @property
    def _identity(self) -> str:
        return f"{CLIENT}:{self.session_id}"

    # -- entry kinds ---------------------------------------------------------------------
    def _header(self, entry: _SessionHeader, pos: Position, out: Out) -> None:
        native = entry.id
        for name, value in (("session_id", native), ("cwd", entry.cwd)):
            if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) > STRING_BOUND:
                # Quarantined by itself and not adopted: every record after it would carry
                # the over-bound identity and be quarantined too.
                err = BoundExceeded(name, STRING_BOUND, len(value.encode("utf-8", "surrogatepass")))
                out.quarantined.append(self.quarantine("unbounded_value", pos, None, err))
                return
        if native is not None:
            if self.pinned_session is not None and native != self.pinned_session:
                raise SourceError("identity_conflict", f"session header disagrees with its row at {pos.fallback}")
            if self.state.session_id is not None and native != self.state.session_id:
                raise SourceError("identity_conflict", f"second session header at {pos.fallback}")
            self.state.session_id = native
        if entry.cwd is not None:
            self.state.cwd = entry.cwd
        attributes = dict(self.attributes)
        if entry.version is not None:
            attributes["format_version"] = str(entry.version)
        rec = Recorder(self.kind)
        common = self._common(entry, pos)
        common["attributes"] = attributes
        try:
            rec.add(
                source_identity=self._identity,
                coordinate="session",
                family=Family.SESSION,
                **common,
            )
        except BoundExceeded as err:
            out.quarantined.append(self.quarantine("unbounded_value", pos, native, err))
            return
        out.observations.extend(rec.take())

    def _blocks(self, message: _Message, entry: _MessageEntry, pos: Position, out: Out) -> list[_Block]:
        content = message.content
        if content is None:
            return []
        if isinstance(content, str):
            return [_Block(type="text", text=content)]
        for block in content:
            if block.type not in ("text", "thinking", "toolCall", "image", "redacted_thinking"):
                out.quarantined.append(self.quarantine("unknown_content_block", pos, entry.id))
        return content

    def _user(self, entry: _MessageEntry, message: _Message, pos: Position, rec: Recorder, out: Out) -> None:
        texts = [b.text for b in self._blocks(message, entry, pos, out) if b.type == "text" and b.text]
        if not texts:
            return
        rec.add(
            source_identity=self._identity,
            coordinate=self._coordinate(entry, pos),
            family=Family.MESSAGE,
            role="user",
            text="\n".join(texts),
            **self._common(entry, pos, message.timestamp),
        )

    def _assistant(
        self, entry: _MessageEntry, message: _Message, pos: Position, rec: Recorder, out: Out
    ) -> None:
        blocks = self._blocks(message, entry, pos, out)
        base = self._coordinate(entry, pos)
        common = self._common(entry, pos, message.timestamp)
        if message.stopReason:
            common["attributes"]["stop_reason"] = message.stopReason
        model = {"model": message.model, "provider": message.provider}
        texts = [b.text for b in blocks if b.type == "text" and b.text]
        if texts:
            rec.add(
                source_identity=self._identity,
                coordinate=f"{base}:text",
                family=Family.MESSAGE,
                role="assistant",
                text="\n".join(texts),
                **model,
                **common,
            )
        for index, block in enumerate(blocks):
            if block.type != "toolCall":
                continue
            args = block.arguments
            rec.add(
                source_identity=self._identity,
                coordinate=f"{base}:call:{block.id or index}",
                family=Family.TOOL,
                stage=Stage.REQUESTED,
                tool_name=block.name,
                call_id=block.id,
                arguments=encode_arguments(
                    args if isinstance(args, dict | list | str) else json_text(args), _AUTHORED_KEYS
                ),
                **_facets(block.name, args),
                **model,
                **common,
            )
        if message.usage is not None:
            rec.add(
                source_identity=self._identity,
                coordinate=f"{base}:usage",
                family=Family.USAGE,
                usage=claw_usage(message.usage),
                **model,
                **common,
            )

    def _tool_result(
        self, entry: _MessageEntry, message: _Message, pos: Position, rec: Recorder, out: Out
    ) -> None:
        blocks = self._blocks(message, entry, pos, out)
        texts = [b.text for b in blocks if b.type == "text" and b.text is not None]
        exit_code = None
        if message.details:
            try:
                exit_code = _details_decoder.decode(message.details).exitCode
            except (msgspec.DecodeError, RecursionError):
                exit_code = None
        rec.add(
            source_identity=self._identity,
            coordinate=self._coordinate(entry, pos),
            family=Family.TOOL,
            stage=Stage.RESULT,
            tool_name=message.toolName,
            call_id=message.toolCallId,
            result="\n".join(texts) if texts else None,
            is_error=message.isError,
            exit_code=exit_code,
            **self._common(entry, pos, message.timestamp),
        )


def _file_session(path: str) -> str:
    """Session id from a transcript name: the part before ``.jsonl`` (rotations keep it)."""
    name = os.path.basename(path)
    cut = name.find(".jsonl")
    return name[:cut] if cut > 0 else name


def agent_id(path: str) -> str | None:
    """``<agentId>`` of ``agents/<agentId>/sessions/<file>`` or ``agents/<agentId>/agent/<db>``."""
    parent = os.path.dirname(path)
    if os.path.basename(parent) in ("sessions", "agent"):
        grand = os.path.dirname(parent)
        if os.path.basename(os.path.dirname(grand)) == "agents":
            return os.path.basename(grand) or None
    return None


def rotation_attributes(path: str) -> dict[str, str]:
    """``{"rotation": "reset"|"deleted", "rotated_at": <suffix>}`` for a rotated transcript."""
    name = os.path.basename(path)
    for kind in ("reset", "deleted"):
        marker = f".jsonl.{kind}"
        cut = name.find(marker)
        if cut > 0:
            attrs = {"rotation": kind}
            suffix = name[cut + len(marker) :].lstrip(".")
            if suffix:
                attrs["rotated_at"] = suffix
            return attrs
    return {}


# -- JSONL adapter -----------------------------------------------------------------------

_state_decoder = msgspec.json.Decoder(MapperState)


class _JsonlHandler(MapsEachLine):
    def __init__(self, source: Source, carry: bytes | None) -> None:
        state = MapperState()
        if carry:
            try:
                state = _state_decoder.decode(carry)
            except msgspec.DecodeError:
                state = MapperState()
        self.mapper = EntryMapper(
            KIND_JSONL, source.path, state, attributes=rotation_attributes(source.path),
            agent=agent_id(source.path),
        )

    def handle(self, line: Line, out: Out) -> None:
        pos = Position(sequence=line.number, fallback=f"line:{line.number}", line=line.number, offset=line.offset)
        if line.data is None:
            out.records_read += 1
            out.quarantined.append(self.mapper.quarantine("oversized_line", pos, None))
            return
        if not line.data.strip():
            return
        self.mapper.map(line.data, pos, out)

    def carry(self) -> bytes:
        return msgspec.json.encode(self.mapper.state)


class OpenClawAdapter:
    """OpenClaw JSONL transcripts, live and rotated (``.reset.<ts>``, ``.deleted.<ts>``)."""

    kind = KIND_JSONL

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: _JsonlHandler(source, carry))


# -- SQLite adapter ----------------------------------------------------------------------

#: Rows fetched per keyset page.
PAGE_ROWS = 1_000
#: Event bytes per batch.
SQLITE_BATCH_BYTES = 4 << 20
#: Stop a scan while this much of the snapshot's admission budget is left (next scan continues).
_ROW_HEADROOM = PAGE_ROWS + 1
_BYTE_HEADROOM = 16 << 20


class SqliteCursor(msgspec.Struct, omit_defaults=True):
    """Per-session keyset: the highest ``seq`` mapped of every session seen."""

    sessions: dict[str, int] = {}


_sqlite_cursor_decoder = msgspec.json.Decoder(SqliteCursor)


def _event_bytes(value: object) -> bytes | None:
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return value
    return None


class OpenClawSqliteAdapter:
    """OpenClaw per-agent SQLite store: ``transcript_events`` rows, keyset ``(session_id, seq)``.

    Rows hold the same entries as the JSONL lines (``seq`` 0 is the session header) and
    go through the same :class:`EntryMapper`. The cursor keeps the highest ``seq`` per
    session, so rows appended to any session (not only the last one in key order) are
    found. A session resumed mid-way re-reads its header row (not re-emitted) for its cwd.
    A scan stops before the reader's admission budget runs out and says so (partial);
    the next scan continues from the cursor.
    """

    kind = KIND_SQLITE

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        high: dict[str, int] = {}
        if cursor and ctx.history is HistoryMode.INCREMENTAL:
            try:
                high = dict(_sqlite_cursor_decoder.decode(cursor).sessions)
            except msgspec.DecodeError:
                high = {}
        agent = agent_id(source.path)
        with SqliteSnapshot(source.path) as snap:
            if "transcript_events" not in snap.tables():
                # Older stores hold only auth/profile tables: nothing to acquire.
                snap.verify_unchanged()
                yield Batch(observations=[], quarantined=[], cursor=_encode_sqlite_cursor(high))
                return
            columns = set(snap.columns("transcript_events"))
            if not {"session_id", "seq", "event_json"} <= columns:
                raise SourceError("schema", "transcript_events lacks session_id, seq or event_json")
            tops = snap.query_all(
                "SELECT session_id, max(seq) AS top FROM transcript_events GROUP BY session_id ORDER BY session_id"
            )
            out = Out()
            window = 0
            stopped = False
            for top_row in tops:
                session_id, top = top_row["session_id"], top_row["top"]
                if not isinstance(session_id, str) or not isinstance(top, int):
                    raise SourceError("schema", "transcript_events session_id/seq of an unexpected type")
                done = high.get(session_id, -1)
                if top <= done:
                    continue
                mapper = EntryMapper(
                    KIND_SQLITE, source.path, MapperState(), pinned_session=session_id, agent=agent
                )
                if done >= 0:
                    self._prime(snap, mapper, session_id)
                while done < top:
                    if (
                        snap.admission.rows + _ROW_HEADROOM > MAX_ROWS
                        or snap.admission.bytes + _BYTE_HEADROOM > MAX_BYTES
                    ):
                        stopped = True
                        break
                    rows = snap.query_all(
                        "SELECT seq, event_json FROM transcript_events"
                        " WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                        (session_id, done, PAGE_ROWS),
                    )
                    if not rows:
                        break
                    for row in rows:
                        seq = row["seq"]
                        data = _event_bytes(row["event_json"])
                        if not isinstance(seq, int):
                            raise SourceError("schema", "transcript_events.seq is not an integer")
                        pos = Position(sequence=seq, fallback=f"seq:{seq}", row=f"{session_id}:{seq}")
                        if data is None:
                            out.records_read += 1
                            out.quarantined.append(mapper.quarantine("schema_mismatch", pos, None))
                        else:
                            mapper.map(data, pos, out)
                            window += len(data)
                        done = seq
                        high[session_id] = seq
                    if window >= SQLITE_BATCH_BYTES:
                        snap.verify_unchanged()
                        yield _sqlite_batch(out, high, window)
                        out, window = Out(), 0
                if stopped:
                    break
            snap.verify_unchanged()
            batch = _sqlite_batch(out, high, window)
            batch.partial = stopped
            yield batch

    @staticmethod
    def _prime(snap: SqliteSnapshot, mapper: EntryMapper, session_id: str) -> None:
        """Read a resumed session's header row for its state, without emitting it again."""
        rows = snap.query_all(
            "SELECT event_json FROM transcript_events WHERE session_id = ? AND seq = 0", (session_id,)
        )
        data = _event_bytes(rows[0]["event_json"]) if rows else None
        if data is None:
            return
        try:
            entry = decode_guarded(_decoder.decode, data)
        except msgspec.DecodeError:
            return
        if isinstance(entry, _SessionHeader) and entry.cwd is not None:
            mapper.state.cwd = entry.cwd


def _encode_sqlite_cursor(high: dict[str, int]) -> bytes:
    return msgspec.json.encode(SqliteCursor(sessions=high))


def _sqlite_batch(out: Out, high: dict[str, int], window: int) -> Batch:
    return Batch(
        observations=out.observations,
        quarantined=out.quarantined,
        cursor=_encode_sqlite_cursor(high),
        records_read=out.records_read,
        other_records=out.other_records,
        bytes_read=window,
    )


__all__ = [
        "EntryMapper",
    "MapperState",
    "OpenClawAdapter",
    "OpenClawSqliteAdapter",
    "Position",
    "SqliteCursor",
]
