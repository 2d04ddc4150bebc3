"""Gemini CLI's whole-file JSON stores: legacy ``chats/session-*.json`` and ``logs.json``.

Both are rewritten whole (no append offset exists), so they are read whole, under a size
bound, and compared with what was emitted before (the :class:`~.settle.Memory` in the
cursor): only parts not emitted yet come out. An unchanged file (same SHA-256) is not
decoded again; a file that is not valid JSON (caught mid-write) is quarantined and its
cursor stays, so the next scan tries again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Quarantine, iso_time
from telltale.readers.files import read_document
from telltale.sources._jsonl_driver import Recorder, decode_failure_reason
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.gemini import layout
from telltale.sources.gemini.chats import KIND as CHATS_KIND
from telltale.sources.gemini.chats import location, session_identity
from telltale.sources.gemini.messages import CLIENT, MessageMapper, SessionContext, Where
from telltale.sources.gemini.project import project_path
from telltale.sources.gemini.settle import Memory
from telltale.sources.gemini.wire import Message, legacy_decoder, log_entry_decoder, logs_decoder, message_decoder
from telltale.sources.spec import Source

LEGACY_KIND = layout.LEGACY_KIND
LOGS_KIND = layout.LOGS_KIND
#: Largest whole-file document read (a legacy session is rewritten whole on every turn).
DOCUMENT_BOUND = 64 << 20


class _Cursor(msgspec.Struct, omit_defaults=True):
    sha: str = ""
    memory: Memory = msgspec.field(default_factory=Memory)


_cursor_decoder = msgspec.json.Decoder(_Cursor)


def _prior(cursor: bytes | None, ctx: AcquireContext) -> _Cursor:
    if cursor is None or ctx.history is not HistoryMode.INCREMENTAL:
        return _Cursor()
    try:
        return _cursor_decoder.decode(cursor)
    except msgspec.DecodeError:
        return _Cursor()


def _whole_file_quarantine(kind: str, path: str, reason: str, row: str | None = None,
                           err: BoundExceeded | None = None, record_id: str | None = None) -> Quarantine:
    return Quarantine(source_kind=kind, path=path, reason=reason, row=row, record_id=record_id,
                      field=err.field if err else None, bound=err.bound if err else None)


class GeminiLegacyChatsAdapter:
    """``session-*.json``: one ``ConversationRecord`` with every message."""

    kind = LEGACY_KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = _prior(cursor, ctx)
        data, _ = read_document(source.path, DOCUMENT_BOUND)
        sha = hashlib.sha256(data).hexdigest()
        if sha == prior.sha:
            yield Batch(observations=[], quarantined=[], cursor=None, bytes_read=len(data))
            return
        try:
            record = legacy_decoder.decode(data)
        except msgspec.DecodeError as exc:
            reason = decode_failure_reason(data, exc)
            yield Batch(observations=[], quarantined=[_whole_file_quarantine(self.kind, source.path, reason)],
                        cursor=None, records_read=1, bytes_read=len(data), partial=True)
            return
        memory = prior.memory
        mapper = MessageMapper(self.kind, memory, id_kind=CHATS_KIND)
        project, parent = location(source)
        session_id, identity = session_identity(record.sessionId, source.path)
        cwd = project_path(source.store_root, project) if project else None
        context = SessionContext(source_identity=identity, session_id=session_id, cwd=cwd)
        observations = []
        quarantined: list[Quarantine] = []
        if not memory.known("session"):
            rec = Recorder(CHATS_KIND)
            try:
                rec.add(source_identity=identity, coordinate="session", family=Family.SESSION, client=CLIENT,
                        source_kind=self.kind, session_id=session_id, cwd=cwd, sequence=0,
                        occurred_at=iso_time(record.startTime),
                        parent_session_id=parent if record.kind == "subagent" else None,
                        attributes={"project_hash": record.projectHash} if record.projectHash else {},
                        provenance=Provenance(source_kind=self.kind, path=source.path, row="session"))
                observations.extend(rec.take())
            except BoundExceeded as err:
                quarantined.append(_whole_file_quarantine(self.kind, source.path, "unbounded_value", "session", err))
            memory.mark_seen("session")
        last = len(record.messages) - 1
        for index, raw in enumerate(record.messages):
            where = Where(path=source.path, kind=self.kind, sequence=index + 1)
            row = f"messages[{index}]"
            try:
                msg: Message = message_decoder.decode(raw)
            except msgspec.DecodeError as exc:
                quarantined.append(_whole_file_quarantine(self.kind, source.path,
                                                          decode_failure_reason(bytes(raw), exc), row))
                continue
            try:
                at = _RowWhere(where.path, where.kind, sequence=where.sequence, row=row)
                items, _held = mapper.emit(msg, context, at, settled=index < last)
            except BoundExceeded as err:
                quarantined.append(_whole_file_quarantine(self.kind, source.path, "unbounded_value", row, err,
                                                          msg.id[:256]))
                continue
            observations.extend(items)
        raw_cursor = msgspec.json.encode(_Cursor(sha=sha, memory=memory))
        yield Batch(observations=observations, quarantined=quarantined, cursor=raw_cursor,
                    records_read=len(record.messages) + 1, bytes_read=len(data))


class _RowWhere(Where):
    """A message inside a whole-file document: provenance by array index, not line."""

    row: str = ""

    def provenance(self, record_id: str | None) -> Provenance:
        return Provenance(source_kind=self.kind, path=self.path, row=self.row, record_id=record_id)


class GeminiLogsAdapter:
    """``logs.json``: the prompts the user typed (``type: user``), one array per project."""

    kind = LOGS_KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = _prior(cursor, ctx)
        data, _ = read_document(source.path, DOCUMENT_BOUND)
        sha = hashlib.sha256(data).hexdigest()
        if sha == prior.sha:
            yield Batch(observations=[], quarantined=[], cursor=None, bytes_read=len(data))
            return
        try:
            entries = logs_decoder.decode(data)
        except msgspec.DecodeError as exc:
            reason = decode_failure_reason(data, exc)
            yield Batch(observations=[], quarantined=[_whole_file_quarantine(self.kind, source.path, reason)],
                        cursor=None, records_read=1, bytes_read=len(data), partial=True)
            return
        memory = prior.memory
        project = os.path.relpath(source.path, source.store_root).split(os.sep)[0]
        cwd = project_path(source.store_root, project)
        observations = []
        quarantined: list[Quarantine] = []
        other = 0
        for index, raw in enumerate(entries):
            row = f"[{index}]"
            try:
                entry = log_entry_decoder.decode(raw)
            except msgspec.DecodeError as exc:
                quarantined.append(_whole_file_quarantine(self.kind, source.path,
                                                          decode_failure_reason(bytes(raw), exc), row))
                continue
            if entry.type != "user" or not entry.message:
                other += 1
                continue
            key = f"{entry.sessionId}:{entry.messageId}"
            if memory.has_text(key):
                continue
            session_id, identity = session_identity(entry.sessionId, source.path)
            rec = Recorder(self.kind)
            try:
                rec.add(source_identity=identity, coordinate=f"log:{entry.messageId}", family=Family.MESSAGE,
                        client=CLIENT, role="user", text=entry.message, session_id=session_id, cwd=cwd,
                        sequence=index + 1, occurred_at=iso_time(entry.timestamp),
                        attributes={"log": "prompt"},
                        provenance=Provenance(source_kind=self.kind, path=source.path, row=row))
            except BoundExceeded as err:
                quarantined.append(_whole_file_quarantine(self.kind, source.path, "unbounded_value", row, err))
                memory.mark_text(key)
                continue
            memory.mark_text(key)
            observations.extend(rec.take())
        raw_cursor = msgspec.json.encode(_Cursor(sha=sha, memory=memory))
        yield Batch(observations=observations, quarantined=quarantined, cursor=raw_cursor,
                    records_read=len(entries), other_records=other, bytes_read=len(data))
