"""Droid transcripts: ``<session id>.jsonl``, one record appended per line.

``message`` records hold Anthropic-style blocks: text becomes one message per record,
``tool_use`` a requested call, ``tool_result`` (in the next user message) its result.
``session_start`` names the session, its title and working directory; ``todo_state``
and ``compaction_state`` are bookkeeping (counted, not projected). Any other record
type is quarantined ``unknown_record_type`` so a format change is loud. The file is
append-only: ids are the record's own ``id`` (else its byte offset), and call-id → tool
name survives across scans in the cursor's carry.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Stage, encode_arguments, iso_time
from telltale.readers.jsonl import Line
from telltale.readers.records import decode_guarded
from telltale.sources._jsonl_driver import (
    BoundedMap,
    MapsEachLine,
    Out,
    Recorder,
    acquire_lines,
    decode_failure_reason,
    json_text,
    line_quarantine,
)
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.droid import CLIENT, SESSIONS_KIND, tools, wire
from telltale.sources.spec import Source

KIND = SESSIONS_KIND
AGENT = "Factory Droid"
#: Call ids whose tool name is remembered for results in a later scan.
NAME_MEMORY = 512
_BOOKKEEPING = frozenset({"todo_state", "compaction_state"})


class _Carry(msgspec.Struct, omit_defaults=True):
    sid: str | None = None
    cwd: str | None = None
    names: dict[str, str] = {}


_carry_decoder = msgspec.json.Decoder(_Carry)


def _result_text(content: object) -> str | None:
    """A result's text: a string, or the text blocks of a list, else compact JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            return "\n".join(texts)
    return json_text(content)


class _Handler(MapsEachLine):
    def __init__(self, source: Source, carry: bytes | None) -> None:
        self.source = source
        stem = os.path.basename(source.path)
        self.sid = stem[: -len(".jsonl")] if stem.endswith(".jsonl") else stem
        self.cwd: str | None = None
        self.names = BoundedMap(NAME_MEMORY)
        if carry:
            try:
                state = _carry_decoder.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()
            self.sid = state.sid or self.sid
            self.cwd = state.cwd
            self.names = BoundedMap(NAME_MEMORY, state.names)

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(sid=self.sid, cwd=self.cwd, names=self.names.items))

    def handle(self, line: Line, out: Out) -> None:
        data = line.data
        if data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line", session_id=self.sid))
            return
        if not data.strip():
            return
        out.records_read += 1
        try:
            record = decode_guarded(wire.record.decode, data)
        except msgspec.DecodeError as exc:
            reason = decode_failure_reason(data, exc)
            out.quarantined.append(line_quarantine(KIND, self.source, line, reason, session_id=self.sid))
            return
        if record.type in _BOOKKEEPING:
            out.other_records += 1
            return
        if record.type not in ("session_start", "message"):
            out.quarantined.append(
                line_quarantine(KIND, self.source, line, "unknown_record_type", session_id=self.sid)
            )
            return
        rec = Recorder(KIND)
        names_before = dict(self.names.items)
        try:
            if record.type == "session_start":
                self._start(record, line, rec)
            else:
                self._message(record, line, rec)
        except BoundExceeded as err:
            rec.take()
            self.names = BoundedMap(NAME_MEMORY, names_before)
            out.quarantined.append(
                line_quarantine(KIND, self.source, line, "unbounded_value", session_id=self.sid,
                                record_id=record.id, err=err)
            )
            return
        observations = rec.take()
        if not observations:
            out.other_records += 1
        out.observations.extend(observations)

    def _common(self, record: wire.Record, line: Line) -> dict[str, object]:
        return {
            "client": CLIENT,
            "agent": AGENT,
            "session_id": self.sid,
            "cwd": self.cwd,
            "sequence": line.number,
            "occurred_at": iso_time(record.timestamp),
            "provenance": Provenance(source_kind=KIND, path=self.source.path, line=line.number,
                                     offset=line.offset, record_id=record.id if record.id and len(record.id) <= 256
                                     else None),
        }

    def _start(self, record: wire.Record, line: Line, rec: Recorder) -> None:
        info = record.session or wire.SessionInfo()
        sid = info.id or record.id
        if sid and len(sid) <= 256:
            self.sid = sid
        self.cwd = info.cwd or record.cwd or record.workspace_root or self.cwd
        title = info.title or record.title
        common = self._common(record, line)
        common["occurred_at"] = iso_time(info.created_at or record.created_at) or common["occurred_at"]
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}", coordinate=f"session:{line.offset}", family=Family.SESSION,
            attributes={"title": title[:256]} if title else {}, **common,
        )

    def _message(self, record: wire.Record, line: Line, rec: Recorder) -> None:
        message = record.message or wire.Message()
        common = self._common(record, line)
        identity = f"{CLIENT}:{self.sid}"
        base = f"msg:{record.id}" if record.id and len(record.id) <= 200 else f"offset:{line.offset}"
        model = message.model or None
        blocks = message.content if isinstance(message.content, list) else []
        texts = [b.text for b in blocks if b.type == "text" and b.text]
        if isinstance(message.content, str) and message.content:
            texts = [message.content]
        if texts and message.role in ("user", "assistant", "system"):
            rec.add(
                source_identity=identity, coordinate=f"{base}:text", family=Family.MESSAGE, role=message.role,
                text="\n".join(texts), model=model if message.role == "assistant" else None, **common,
            )
        for n, block in enumerate(blocks):
            if block.type == "tool_use":
                call_id = block.id or f"{base}:call:{n}"
                name = block.name or None
                if name:
                    self.names.set(call_id, name)
                args = block.input
                attributes = {"risk_level": block.riskLevel[:64]} if block.riskLevel else {}
                rec.add(
                    source_identity=identity, coordinate=f"call:{call_id}:requested", family=Family.TOOL,
                    stage=Stage.REQUESTED, tool_name=name, call_id=call_id, model=model,
                    arguments=encode_arguments(args if isinstance(args, dict | list | str) else json_text(args),
                                               tools.AUTHORED_KEYS),
                    attributes=attributes, **tools.facets(name, args), **common,
                )
            elif block.type == "tool_result" and block.tool_use_id:
                call_id = block.tool_use_id
                rec.add(
                    source_identity=identity, coordinate=f"call:{call_id}:result", family=Family.TOOL,
                    stage=Stage.RESULT, tool_name=self.names.pop(call_id), call_id=call_id,
                    result=_result_text(block.content), is_error=block.is_error, **common,
                )


class DroidSessionAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda carry: _Handler(source, carry))
