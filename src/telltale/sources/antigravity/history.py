"""The Antigravity CLI's prompt log ``history.jsonl``: one user prompt per line.

A line is ``{"display": <prompt>, "workspace": <cwd>, "timestamp": <epoch ms>,
"conversationId"?: <id>}`` (written append-only by ``agy``). Each becomes one user
message; the conversation itself (answers, tool calls) is only in the encrypted or
undecodable stores, so a prompt is all Telltale can know of it.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, iso_time
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded
from telltale.sources._jsonl_driver import (
    MapsEachLine,
    Out,
    Recorder,
    acquire_lines,
    decode_failure_reason,
    line_quarantine,
)
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.spec import Source

CLIENT = "antigravity"
KIND = "antigravity.history"


class _Prompt(msgspec.Struct):
    display: str
    workspace: str | None = None
    timestamp: int | float | str | None = None
    conversationId: str | None = None


_decoder = msgspec.json.Decoder(_Prompt)


class _HistoryHandler(MapsEachLine):
    """Stateless per line: a prompt's id is its byte offset in an append-only file."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def carry(self) -> bytes | None:
        return None

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line"))
            return
        if not data.strip():
            return
        out.records_read += 1
        try:
            prompt = decode_guarded(_decoder.decode, data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(line_quarantine(KIND, self.source, line, decode_failure_reason(data, exc)))
            return
        rec = Recorder(KIND)
        try:
            rec.add(
                source_identity=self.source.path,
                coordinate=f"offset:{line.offset}",
                family=Family.MESSAGE,
                client=CLIENT,
                role="user",
                text=prompt.display,
                session_id=prompt.conversationId,
                cwd=prompt.workspace,
                occurred_at=iso_time(prompt.timestamp),
                sequence=line.number,
                provenance=Provenance(source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset),
            )
        except BoundExceeded as err:
            out.quarantined.append(
                line_quarantine(KIND, self.source, line, "unbounded_value", session_id=prompt.conversationId, err=err)
            )
            return
        out.observations.extend(rec.take())


class AntigravityHistoryAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda _carry: _HistoryHandler(source))
