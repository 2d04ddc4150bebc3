"""Gemini CLI session logs ``chats/session-*.jsonl`` (and subagent ``chats/<parent>/<id>.jsonl``).

The writer only appends (see :mod:`.wire` for the four line kinds). What a line means
for Telltale:

* header: the session (id, kind, directories) → one ``session`` observation;
* message: its parts that are due (see :mod:`.settle`); every message *before* it that
  still held a running tool call is now settled (a later entry exists);
* ``$set`` with ``messages`` (a checkpoint that replaces the conversation): each listed
  message as if appended in that order; held messages not in the list are settled;
* ``$rewindTo``: settles what is held, then one marker observation (family ``other``,
  attribute ``rewind_to``). Activity already emitted stays emitted;
* any other ``$set``: metadata only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, iso_time
from telltale.readers.jsonl import Line
from telltale.sources._jsonl_driver import Out, Recorder, acquire_lines, decode_failure_reason, line_quarantine
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.gemini import layout
from telltale.sources.gemini.messages import CLIENT, MessageMapper, SessionContext, Where
from telltale.sources.gemini.project import project_path
from telltale.sources.gemini.settle import Memory, old_unknown
from telltale.sources.gemini.wire import Message, line_decoder, message_decoder, set_decoder
from telltale.sources.spec import Source

KIND = layout.CHATS_KIND
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class _Header(msgspec.Struct, omit_defaults=True):
    sid: str | None = None
    kind: str | None = None
    directories: list[str] = []
    project_hash: str | None = None
    started: str | None = None


class _Carry(msgspec.Struct, omit_defaults=True):
    header: _Header = msgspec.field(default_factory=_Header)
    memory: Memory = msgspec.field(default_factory=Memory)
    session_emitted: bool = False


_carry_decoder = msgspec.json.Decoder(_Carry)


def session_identity(sid: str | None, path: str) -> tuple[str, str]:
    """(session id, source identity) of a session file.

    A UUID session id names one session wherever the file is (a legacy ``.json`` rewritten
    as ``.jsonl`` keeps it); any other id (Cloud Shell's a2a-server writes the constant
    ``a2a-server``) may be shared by many files, so the session is keyed by the file.
    """
    stem = os.path.splitext(os.path.basename(path))[0]
    if sid and _UUID.fullmatch(sid):
        return sid, f"{CLIENT}:{sid}"
    return (f"{sid}:{stem}" if sid else stem), path


def location(source: Source) -> tuple[str | None, str | None]:
    """(project id, parent session id) from ``<tmp>/<id>/chats[/<parent>]/<file>``."""
    return layout.location(tuple(os.path.relpath(source.path, source.store_root).split(os.sep)))


class _Pending(msgspec.Struct):
    message: Message
    where: Where


class SessionLogHandler:
    """Line handler of one session log (see the module docstring)."""

    def __init__(self, source: Source, carry: bytes | None, kind: str = KIND) -> None:
        self.source = source
        self.kind = kind
        state = _Carry()
        if carry:
            try:
                state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()
        self.state = state
        self.mapper = MessageMapper(kind, state.memory)
        project, self.parent = location(source)
        self.cwd = project_path(source.store_root, project) if project else None
        self.pending: dict[str, _Pending] = {}

    # -- LineHandler ------------------------------------------------------------------
    def resume_point(self) -> tuple[int, int] | None:
        held = [p.where for p in self.pending.values() if p.where.offset is not None]
        if not held:
            return None
        first = min(held, key=lambda w: w.offset or 0)
        return first.offset or 0, (first.line or 1) - 1

    def finish(self, out: Out) -> None:
        return None

    def carry(self) -> bytes:
        return msgspec.json.encode(self.state)

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(self.kind, self.source, line, "oversized_line"))
            return
        if not data.strip():
            return
        out.records_read += 1
        try:
            rec = line_decoder.decode(data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(line_quarantine(self.kind, self.source, line, decode_failure_reason(data, exc)))
            return
        where = Where(path=self.source.path, kind=self.kind, line=line.number, offset=line.offset,
                      sequence=line.number)
        if isinstance(rec.id, str):
            self._message(data, line, where, out)
        elif isinstance(rec.rewindTo, str):
            self._rewind(rec.rewindTo, line, where, out)
        elif rec.set:
            self._set(rec.set, line, where, out)
        elif isinstance(rec.sessionId, str):
            self._header(rec, where, out)
        else:
            out.quarantined.append(line_quarantine(self.kind, self.source, line, "unknown_record_type"))

    # -- records ----------------------------------------------------------------------
    def context(self) -> SessionContext:
        header = self.state.header
        session_id, identity = session_identity(header.sid, self.source.path)
        cwd = self.cwd or (header.directories[0] if header.directories else None)
        extra: dict[str, Any] = {}
        return SessionContext(source_identity=identity, session_id=session_id, cwd=cwd, extra=extra)

    def _header(self, rec: Any, where: Where, out: Out) -> None:
        header = self.state.header
        if header.sid is None:
            header.sid = rec.sessionId
        if isinstance(rec.kind, str):
            header.kind = rec.kind
        if isinstance(rec.projectHash, str):
            header.project_hash = rec.projectHash
        if isinstance(rec.startTime, str):
            header.started = rec.startTime
        if isinstance(rec.directories, list):
            header.directories = [d for d in rec.directories if isinstance(d, str)][:16]
        if self.state.session_emitted:
            out.other_records += 1
            return
        ctx = self.context()
        attributes = {"session_kind": header.kind} if header.kind else {}
        if header.project_hash:
            attributes["project_hash"] = header.project_hash
        recorder = Recorder(KIND)
        try:
            recorder.add(
                source_identity=ctx.source_identity, coordinate="session", family=Family.SESSION,
                client=CLIENT, source_kind=self.kind, session_id=ctx.session_id, cwd=ctx.cwd,
                sequence=where.sequence, occurred_at=iso_time(header.started),
                parent_session_id=self.parent if header.kind == "subagent" else None,
                attributes=attributes, provenance=where.provenance(None),
            )
        except BoundExceeded as err:
            out.quarantined.append(self._quarantine(where, "unbounded_value", None, err))
            self.state.session_emitted = True
            return
        self.state.session_emitted = True
        out.observations.extend(recorder.take())

    def _message(self, data: bytes | msgspec.Raw, line: Line | None, where: Where, out: Out) -> None:
        try:
            msg = message_decoder.decode(data)
        except msgspec.DecodeError as exc:
            raw = bytes(data)
            out.quarantined.append(self._quarantine(where, decode_failure_reason(raw, exc), None))
            return
        self._settle_others(msg.id, out)
        self._apply(msg, where, out, settled=False)

    def _apply(self, msg: Message, where: Where, out: Out, *, settled: bool) -> None:
        try:
            observations, held = self.mapper.emit(msg, self.context(), where, settled=settled)
        except BoundExceeded as err:
            self.pending.pop(msg.id, None)
            out.quarantined.append(self._quarantine(where, "unbounded_value", msg.id, err))
            return
        out.observations.extend(observations)
        if held:
            self.pending[msg.id] = _Pending(message=msg, where=where)
        else:
            self.pending.pop(msg.id, None)

    def _settle_others(self, keep: str | None, out: Out) -> None:
        """A later entry exists: every held message other than ``keep`` is settled."""
        for message_id in [m for m in self.pending if m != keep]:
            pending = self.pending.pop(message_id)
            self._apply(pending.message, pending.where, out, settled=True)

    def _rewind(self, target: str, line: Line, where: Where, out: Out) -> None:
        self._settle_others(None, out)
        memory = self.state.memory
        if memory.rewind_done(line.offset):
            out.other_records += 1
            return
        ctx = self.context()
        recorder = Recorder(KIND)
        try:
            recorder.add(
                source_identity=ctx.source_identity, coordinate=f"rewind:{line.offset}", family=Family.OTHER,
                client=CLIENT, source_kind=self.kind, session_id=ctx.session_id, cwd=ctx.cwd,
                sequence=where.sequence, attributes={"event": "rewind", "rewind_to": target},
                provenance=where.provenance(target),
            )
        except BoundExceeded as err:
            out.quarantined.append(self._quarantine(where, "unbounded_value", None, err))
            memory.mark_rewind(line.offset)
            return
        memory.mark_rewind(line.offset)
        out.observations.extend(recorder.take())

    def _set(self, raw: msgspec.Raw, line: Line, where: Where, out: Out) -> None:
        try:
            update = set_decoder.decode(raw)
        except msgspec.DecodeError:
            out.quarantined.append(self._quarantine(where, "schema_mismatch", None))
            return
        if update.directories is not None and not self.state.header.directories:
            self.state.header.directories = update.directories[:16]
        if update.messages is None:
            out.other_records += 1
            return
        # A checkpoint: the conversation is now exactly this list.
        messages: list[Message] = []
        for item in update.messages:
            try:
                messages.append(message_decoder.decode(item))
            except msgspec.DecodeError as exc:
                out.quarantined.append(self._quarantine(where, decode_failure_reason(bytes(item), exc), None))
        listed = {m.id for m in messages}
        for message_id in [m for m in self.pending if m not in listed]:
            pending = self.pending.pop(message_id)
            self._apply(pending.message, pending.where, out, settled=True)
        forgotten = old_unknown(self.state.memory, (m.id for m in messages))
        for index, msg in enumerate(messages):
            if msg.id in forgotten:
                continue
            self._apply(msg, where, out, settled=index < len(messages) - 1)

    def _quarantine(self, where: Where, reason: str, record_id: str | None,
                    err: BoundExceeded | None = None) -> Any:
        from telltale.model import Quarantine

        return Quarantine(
            source_kind=self.kind, path=self.source.path, reason=reason,
            session_id=self.context().session_id[:256], record_id=record_id[:256] if record_id else None,
            sequence=where.sequence, line=where.line, offset=where.offset,
            field=err.field if err is not None else None, bound=err.bound if err is not None else None,
        )


class GeminiChatsAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: SessionLogHandler(source, carry))
