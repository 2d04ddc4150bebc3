"""Narrow typed views of log lines: only the fields the index reads (msgspec skips the rest)."""

from __future__ import annotations

import functools

import msgspec


class _Id(msgspec.Struct, gc=False):
    id: str | None = None


class _Named(msgspec.Struct, gc=False):
    name: str | None = None


class _Model(msgspec.Struct, gc=False):
    model: str | None = None


class _Tokens(msgspec.Struct, gc=False):
    input_tokens: int | None = None


class Usage(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read: _Tokens | None = None
    cache_creation: _Tokens | None = None


class GenAI(msgspec.Struct, gc=False):
    conversation: _Id | None = None
    agent: _Named | None = None
    request: _Model | None = None
    tool: _Named | None = None
    usage: Usage | None = None


class Event(msgspec.Struct, gc=False):
    id: str = ""
    dataset: str = ""
    action: str = ""
    kind: str | None = None
    severity: int | None = None


class Source(msgspec.Struct, gc=False):
    kind: str | None = None


class Evidence(msgspec.Struct, gc=False):
    field: str | None = None
    value: str | None = None
    observation_id: str | None = None


class Detection(msgspec.Struct, gc=False):
    severity: str | None = None
    score: float | None = None
    categories: list[str] = []
    evidence: list[Evidence] = []


class ScanSummary(msgspec.Struct, gc=False):
    duration_s: float | None = None
    emitted_count: int | None = None
    quarantined_count: int | None = None
    scanner_error_count: int | None = None
    detection_count: int | None = None
    sources: msgspec.Raw = msgspec.Raw(b"[]")


class SessionRisk(msgspec.Struct, gc=False):
    total_points: int | None = None
    severity: str | None = None
    occurrences: int | None = None


class Telltale(msgspec.Struct, gc=False):
    client: str | None = None
    time_source: str | None = None
    cwd: str | None = None
    cwd_hash: str | None = None
    parent_session_id: str | None = None
    parent_call_id: str | None = None
    attributes: dict[str, str] | None = None
    source: Source | None = None
    response_id: str | None = None
    usage_total_tokens: int | None = None
    detection: Detection | None = None
    alert_type: str | None = None
    severity: str | None = None
    scan_id: str | None = None
    scan: ScanSummary | None = None
    session_risk: SessionRisk | None = None


class Rule(msgspec.Struct, gc=False):
    id: str | None = None
    name: str | None = None
    category: str | None = None


class Error(msgspec.Struct, gc=False):
    code: str | None = None


class Log(msgspec.Struct, gc=False):
    level: str | None = None


class Document(msgspec.Struct, gc=False, rename={"timestamp": "@timestamp"}):
    timestamp: str = ""
    log: Log | None = None
    event: Event = msgspec.field(default_factory=Event)
    telltale: Telltale = msgspec.field(default_factory=Telltale)
    gen_ai: GenAI | None = None
    rule: Rule | None = None
    error: Error | None = None
    message: str | None = None


def decode_document(line: bytes) -> Document:
    """One event line as a :class:`Document` (raises ``msgspec`` errors)."""
    return _document_decoder().decode(line)


@functools.cache
def _document_decoder() -> msgspec.json.Decoder[Document]:
    # Built on first use: resolving the annotations of these classes was ~3 ms of every
    # run's import, and a scan that writes nothing new never decodes a document.
    return msgspec.json.Decoder(Document)



class _IdOnly(msgspec.Struct, gc=False):
    event: _Id = msgspec.field(default_factory=_Id)


_decode_id = msgspec.json.Decoder(_IdOnly).decode


def event_id_of(line: bytes) -> str | None:
    """The ``event.id`` of a line, or ``None`` for a line that is not an event."""
    try:
        return _decode_id(line).event.id
    except (msgspec.DecodeError, ValueError):
        return None
