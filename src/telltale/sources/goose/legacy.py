"""Goose's legacy per-session JSONL (``sessions/<id>.jsonl``, before the SQLite store).

Line 1 is ``SessionMetadata`` (``working_dir``, ``description``, ``message_count``,
token counts); every further line one ``Message`` (``role``, ``created`` in Unix seconds,
``content`` blocks as in the database). Goose imports these files into ``sessions.db``
once and keeps them; nothing writes them any more, so the JSONL driver's byte-offset
cursor fits (a rewritten file would be read again and reported). The session id is the
file's name. Goose imports every legacy file into ``sessions.db`` when it creates the
database, so a file with ``sessions.db`` beside it is not read (the database adapter reads
the session); a host that upgrades after a scan sees the imported sessions once more.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, TokenUsage, iso_time
from telltale.readers.jsonl import Line
from telltale.sources._jsonl_driver import Out, Recorder, acquire_lines, decode_failure_reason, line_quarantine
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.goose import wire as w
from telltale.sources.goose.sessions_db import AGENT, CLIENT, project
from telltale.sources.spec import Source

KIND = "goose.legacy"
DATABASE = "sessions.db"


class _Metadata(msgspec.Struct):
    working_dir: str | None = None
    description: str | None = None
    accumulated_input_tokens: int | None = None
    accumulated_output_tokens: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


class _Message(msgspec.Struct):
    role: str
    content: list[w.Block]
    created: int | float | None = None
    id: str | None = None


_metadata = msgspec.json.Decoder(_Metadata)
_message = msgspec.json.Decoder(_Message)


class _Handler:
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        self.sid = os.path.basename(source.path).removesuffix(".jsonl")
        self.cwd = carry.decode("utf-8", "replace") if carry else None

    def resume_point(self) -> tuple[int, int] | None:
        return None

    def finish(self, out: Out) -> None:
        return None

    def carry(self) -> bytes | None:
        return self.cwd.encode() if self.cwd else None

    def common(self, line: Line) -> dict[str, Any]:
        return {"client": CLIENT, "agent": AGENT, "session_id": self.sid, "sequence": line.number, "cwd": self.cwd,
                "provenance": Provenance(source_kind=KIND, path=self.source.path, line=line.number,
                                         offset=line.offset)}

    def handle(self, line: Line, out: Out) -> None:
        if line.data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line", session_id=self.sid))
            return
        if not line.data.strip():
            return
        out.records_read += 1
        identity = f"goose:{self.sid}"
        if line.number == 1:
            try:
                meta = _metadata.decode(line.data)
            except msgspec.DecodeError:
                meta = None
            if meta is not None and meta.working_dir is not None:
                self.cwd = meta.working_dir
                self.metadata(line, out, identity, meta)
                return
        try:
            message = _message.decode(line.data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(line_quarantine(KIND, self.source, line, decode_failure_reason(line.data, exc),
                                                   session_id=self.sid))
            return
        common = {**self.common(line), "occurred_at": iso_time(message.created)}
        try:
            items = project(KIND, identity, f"line:{line.offset}", message.role, message.content, common)
        except BoundExceeded as err:
            out.quarantined.append(line_quarantine(KIND, self.source, line, "unbounded_value", session_id=self.sid,
                                                   err=err))
            return
        if not items:
            out.other_records += 1
        out.observations.extend(items)

    def metadata(self, line: Line, out: Out, identity: str, meta: _Metadata) -> None:
        rec = Recorder(KIND)
        common = self.common(line)
        try:
            rec.add(source_identity=identity, coordinate="session", family=Family.SESSION, **common)
            tin = meta.accumulated_input_tokens if meta.accumulated_input_tokens is not None else meta.input_tokens
            tout = meta.accumulated_output_tokens if meta.accumulated_output_tokens is not None else meta.output_tokens
            usage = TokenUsage(input_tokens=tin, output_tokens=tout)
            if not usage.is_empty():
                rec.add(source_identity=identity, coordinate=f"usage:{tin or 0}:{tout or 0}", family=Family.USAGE,
                        usage=usage, attributes={"usage_scope": "session_delta"}, **common)
        except BoundExceeded as err:
            out.quarantined.append(line_quarantine(KIND, self.source, line, "unbounded_value", session_id=self.sid,
                                                   err=err))
            return
        out.observations.extend(rec.take())


class GooseLegacyAdapter:
    """Goose's legacy per-session JSONL files."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        if os.path.lexists(os.path.join(os.path.dirname(source.path), DATABASE)):
            # Goose imported this file into sessions.db when it created the database: the
            # database adapter reads the session; reading both would emit it twice.
            return iter([Batch(observations=[], quarantined=[], cursor=cursor, other_records=1)])
        return acquire_lines(source, cursor, ctx, lambda carry: _Handler(source, carry))
