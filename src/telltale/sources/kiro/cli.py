"""Kiro CLI sessions: ``~/.kiro/sessions/cli/<id>.jsonl``, one record appended per line.

Two line shapes are read. The first: ``{"kind": "Prompt" | "AssistantMessage" |
"ToolResults", "data": {"content": [{"kind": "text" | "toolUse" | "toolResult",
"data": ...}]}}``: a prompt's text, the assistant's text and ``toolUse`` calls
(``toolUseId``, ``name``, ``input``), the results of a ``ToolResults`` line by
``toolUseId``. The second, written by newer builds: ``{"timestamp", "payload": {"type":
"user" | "assistant" | "tool_call" | "tool_result", ...}}``. Any other line is
quarantined ``unknown_record_type``. The ``<id>.json`` next to the log names the
session, its working directory and title (read once per scan, bounded). Lines carry no
id, so a record's identity is its byte offset; the session start is emitted with the
first line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, Stage, encode_arguments, iso_time
from telltale.readers.files import read_small
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
from telltale.sources.kiro import CLI_KIND, CLIENT, tools
from telltale.sources.spec import Source

KIND = CLI_KIND
AGENT = "Kiro CLI"
META_BOUND = 1 << 20
NAME_MEMORY = 512


class _Meta(msgspec.Struct):
    session_id: str | None = None
    cwd: str | None = None
    title: str | None = None
    created_at: str | None = None


class _Part(msgspec.Struct):
    kind: str = ""
    data: Any = None


class _Data(msgspec.Struct):
    content: list[_Part] | str | None = None
    message_id: str | None = None


class _Payload(msgspec.Struct):
    type: str = ""
    content: Any = None
    toolName: str | None = None
    toolCallId: str | None = None
    args: Any = None
    reasoningModelId: str | None = None
    modelId: str | None = None
    isError: bool | None = None


class _Line(msgspec.Struct):
    kind: str | None = None
    data: _Data | None = None
    timestamp: str | int | float | None = None
    payload: _Payload | None = None


_line = msgspec.json.Decoder(_Line)
_meta = msgspec.json.Decoder(_Meta)


class _Carry(msgspec.Struct, omit_defaults=True):
    started: bool = False
    names: dict[str, str] = {}


_carry = msgspec.json.Decoder(_Carry)


def read_meta(path: str) -> _Meta:
    """The ``<id>.json`` beside a log, or an empty one (missing, not a regular file, large,
    or not JSON: the log is read all the same)."""
    meta_path = path[: -len(".jsonl")] + ".json" if path.endswith(".jsonl") else path + ".json"
    data = read_small(meta_path, META_BOUND)
    if data is None:
        return _Meta()
    try:
        return _meta.decode(data)
    except msgspec.DecodeError:
        return _Meta()


def _text(value: Any) -> str | None:
    """Text of a content value: a string, ``text`` parts, or JSON for structured output."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, dict):
                data = part.get("data", part.get("text"))
                if part.get("kind") in ("text", None) and isinstance(data, str):
                    texts.append(data)
                elif data is not None:
                    texts.append(json_text(data) or "")
        return "\n".join(t for t in texts if t) or None
    return json_text(value)


class _Handler(MapsEachLine):
    def __init__(self, source: Source, meta: _Meta, carry: bytes | None) -> None:
        self.source = source
        name = os.path.basename(source.path)
        stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
        self.sid = meta.session_id if meta.session_id and len(meta.session_id) <= 256 else stem
        self.meta = meta
        state = _Carry()
        if carry:
            try:
                state = _carry.decode(carry)
            except msgspec.DecodeError:
                state = _Carry()
        self.started = state.started
        self.names = BoundedMap(NAME_MEMORY, state.names)

    def carry(self) -> bytes:
        return msgspec.json.encode(_Carry(started=self.started, names=self.names.items))

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
            record = decode_guarded(_line.decode, data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(line_quarantine(KIND, self.source, line, decode_failure_reason(data, exc),
                                                   session_id=self.sid))
            return
        rec = Recorder(KIND)
        names = dict(self.names.items)
        started = self.started
        try:
            if not self.started:
                self.started = True
                title = self.meta.title
                rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate="session", family=Family.SESSION,
                        attributes={"title": title[:256]} if title else {},
                        **{**self._common(line, None), "occurred_at": iso_time(self.meta.created_at)})
            known = self._map(record, line, rec)
        except BoundExceeded as err:
            rec.take()
            self.names, self.started = BoundedMap(NAME_MEMORY, names), started
            out.quarantined.append(line_quarantine(KIND, self.source, line, "unbounded_value", session_id=self.sid,
                                                   err=err))
            return
        if not known:
            rec.take()
            self.started = started
            out.quarantined.append(line_quarantine(KIND, self.source, line, "unknown_record_type",
                                                   session_id=self.sid))
            return
        observations = rec.take()
        if not observations:
            out.other_records += 1
        out.observations.extend(observations)

    def _common(self, line: Line, timestamp: object) -> dict[str, Any]:
        return {
            "client": CLIENT, "agent": AGENT, "session_id": self.sid, "cwd": self.meta.cwd, "sequence": line.number,
            "occurred_at": iso_time(timestamp),
            "provenance": Provenance(source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset),
        }

    def _map(self, record: _Line, line: Line, rec: Recorder) -> bool:
        if record.payload is not None and record.payload.type:
            return self._payload(record.payload, line, rec, record.timestamp)
        if record.kind not in ("Prompt", "AssistantMessage", "ToolResults") or record.data is None:
            return False
        common = self._common(line, record.timestamp)
        identity = f"{CLIENT}:{self.sid}"
        base = f"offset:{line.offset}"
        content = record.data.content
        parts = content if isinstance(content, list) else []
        texts = [content] if isinstance(content, str) and content else [
            p.data for p in parts if p.kind == "text" and isinstance(p.data, str) and p.data]
        role = "user" if record.kind == "Prompt" else "assistant"
        if texts and record.kind != "ToolResults":
            rec.add(source_identity=identity, coordinate=f"{base}:text", family=Family.MESSAGE, role=role,
                    text="\n".join(texts), **common)
        for n, part in enumerate(parts):
            body = part.data if isinstance(part.data, dict) else {}
            if part.kind == "toolUse":
                use_id = body.get("toolUseId")
                call_id = use_id if isinstance(use_id, str) else f"{base}:call:{n}"
                name = body.get("name") if isinstance(body.get("name"), str) else None
                self._request(call_id, name, body.get("input"), None, common, rec)
            elif part.kind == "toolResult" and isinstance(body.get("toolUseId"), str):
                status = body.get("status")
                is_error = None if not isinstance(status, str) else status.lower() == "error"
                self._result(body["toolUseId"], _text(body.get("content")), is_error, common, rec)
        return True

    def _payload(self, payload: _Payload, line: Line, rec: Recorder, timestamp: object) -> bool:
        common = self._common(line, timestamp)
        identity = f"{CLIENT}:{self.sid}"
        model = payload.reasoningModelId or payload.modelId
        if payload.type in ("user", "assistant"):
            text = _text(payload.content)
            if text:
                rec.add(source_identity=identity, coordinate=f"offset:{line.offset}:text", family=Family.MESSAGE,
                        role=payload.type, text=text, model=model if payload.type == "assistant" else None,
                        **common)
            return True
        if payload.type == "tool_call" and payload.toolCallId:
            self._request(payload.toolCallId, payload.toolName, payload.args, model, common, rec)
            return True
        if payload.type == "tool_result" and payload.toolCallId:
            self._result(payload.toolCallId, _text(payload.content), payload.isError, common, rec)
            return True
        return False

    def _request(self, call_id: str, name: str | None, args: Any, model: str | None, common: dict[str, Any],
                 rec: Recorder) -> None:
        if name:
            self.names.set(call_id, name)
        rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate=f"call:{call_id}:requested", family=Family.TOOL,
                stage=Stage.REQUESTED, tool_name=name, call_id=call_id, model=model,
                arguments=encode_arguments(args if isinstance(args, dict | list | str) else json_text(args),
                                           tools.AUTHORED_KEYS),
                **tools.facets(name, args), **common)

    def _result(self, call_id: str, text: str | None, is_error: bool | None, common: dict[str, Any],
                rec: Recorder) -> None:
        rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate=f"call:{call_id}:result", family=Family.TOOL,
                stage=Stage.RESULT, tool_name=self.names.pop(call_id), call_id=call_id, result=text,
                is_error=is_error, **common)


class KiroCliAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        meta = read_meta(source.path)
        return acquire_lines(source, cursor, ctx, lambda carry: _Handler(source, meta, carry))
