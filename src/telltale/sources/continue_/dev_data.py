"""Continue's dev-data token log: one line per model response, append-only JSONL.

``dev_data/0.2.0/tokensGenerated.jsonl`` (2025, with ``timestamp`` and ``userAgent``) and
the flat ``dev_data/tokens_generated.jsonl`` (2024: model, provider and counts only). The
lines carry no session id (joining them to a session is by time only), so they are
usage observations of no session. ``chatInteraction.jsonl`` / ``chat.jsonl`` repeat the
prompts and completions the sessions already hold and are not sources.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from telltale.model import BoundExceeded, Family, Provenance, TokenUsage, iso_time
from telltale.readers.jsonl import Line
from telltale.sources._jsonl_driver import (
    MapsEachLine,
    Out,
    Recorder,
    acquire_lines,
    decode_failure_reason,
    line_quarantine,
)
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.continue_ import wire
from telltale.sources.spec import Source

KIND = "continue.dev_data"
CLIENT = "continue"


class _TokensHandler(MapsEachLine):
    def __init__(self, source: Source) -> None:
        self.source = source

    def carry(self) -> bytes | None:
        return None

    def handle(self, line: Line, out: Out) -> None:
        if line.data is None:
            out.records_read += 1
            out.quarantined.append(line_quarantine(KIND, self.source, line, "oversized_line"))
            return
        if not line.data.strip():
            return
        out.records_read += 1
        try:
            record = wire.tokens_generated.decode(line.data)
        except msgspec.DecodeError as exc:
            out.quarantined.append(line_quarantine(KIND, self.source, line, decode_failure_reason(line.data, exc)))
            return
        usage = TokenUsage(input_tokens=record.promptTokens, output_tokens=record.generatedTokens)
        if usage.is_empty():
            out.other_records += 1
            return
        rec = Recorder(KIND)
        attributes = {"usage_scope": "response"}
        if record.userAgent:
            attributes["user_agent"] = record.userAgent[:256]
        try:
            rec.add(
                source_identity=self.source.path, coordinate=f"line:{line.offset}", family=Family.USAGE,
                client=CLIENT, sequence=line.number, occurred_at=iso_time(record.timestamp), agent="Continue",
                usage=usage, model=record.model, provider=record.provider, attributes=attributes,
                provenance=Provenance(source_kind=KIND, path=self.source.path, line=line.number, offset=line.offset),
            )
        except BoundExceeded as err:
            out.quarantined.append(line_quarantine(KIND, self.source, line, "unbounded_value", err=err))
            return
        out.observations.extend(rec.take())


class ContinueDevDataAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_lines(source, cursor, ctx, lambda _carry: _TokensHandler(source))
