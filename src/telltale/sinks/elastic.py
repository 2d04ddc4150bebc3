"""Elasticsearch / OpenSearch ``_bulk`` delivery.

Every event is a ``create`` action with ``_id`` = ``event.id``: redelivery is idempotent,
a 409 version conflict means "already stored" and counts as delivered, and ``create`` is
the only operation a data stream accepts, so the same request works for a plain index and
for a data stream (see ``telltale export-template elastic``).

A 2xx ``_bulk`` answer with ``"errors": true`` is not a success: each item is read.
Mapping errors (400) are dead-lettered with the error *type* only (Elasticsearch's
``reason`` text can quote the document); 429 and 5xx per item are retried; 401/403/404
per item mean we may not write (or auto-create) the target: the sink is blocked.
Whole-request 429/5xx are retried, 401/403 block, 400/413 bisect the batch.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from telltale.sinks import ACKED, ItemResult, Outcome, SendResult, bounded_reason
from telltale.sinks.http import (
    HttpClient,
    TlsOptions,
    TransportError,
    Unattributed,
    classify_status,
    parse_retry_after,
    send_prepared,
    transport_retry,
)

DEFAULT_TARGET = "telltale-events"


class _EventId(msgspec.Struct):
    id: str | None = None


class _View(msgspec.Struct):
    event: _EventId | None = None


class _ItemError(msgspec.Struct):
    type: str | None = None


class _ItemBody(msgspec.Struct):
    status: int = 0
    error: _ItemError | str | None = None
    id: str | None = msgspec.field(default=None, name="_id")


class _BulkAnswer(msgspec.Struct):
    errors: bool = False
    items: list[dict[str, _ItemBody]] = []


_view_decoder = msgspec.json.Decoder(_View)
_bulk_decoder = msgspec.json.Decoder(_BulkAnswer)
_enc = msgspec.json.Encoder()


def classify_item(body: _ItemBody) -> ItemResult:
    """One ``_bulk`` item's status -> outcome."""
    status = body.status
    etype = body.error.type if isinstance(body.error, _ItemError) else None
    if 200 <= status < 300:
        return ACKED
    if status == 409:
        return ACKED  # version conflict on create: the document is already there
    if status == 429 or status >= 500:
        return ItemResult(Outcome.RETRY, bounded_reason("es", status, etype))
    if status in (401, 403, 404):
        return ItemResult(Outcome.BLOCKED, bounded_reason("es", status, etype))
    return ItemResult(Outcome.REJECTED, bounded_reason("es", status, etype))


@dataclass
class ElasticSink:
    name: str
    url: str
    target: str = DEFAULT_TARGET
    api_key: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 10.0
    tls: TlsOptions = field(default_factory=TlsOptions)

    def __post_init__(self) -> None:
        self._client = HttpClient(self.url, timeout=self.timeout, tls=self.tls)
        self._headers = {"Content-Type": "application/x-ndjson"}
        if self.api_key:
            self._headers["Authorization"] = f"ApiKey {self.api_key}"
        elif self.username is not None and self.password is not None:
            pair = f"{self.username}:{self.password}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        self._target = _enc.encode(self.target)

    def close(self) -> None:
        self._client.close()

    def action(self, event: bytes) -> bytes | ItemResult:
        """The two NDJSON lines of one event, or why it cannot be sent."""
        if b"\n" in event or b"\r" in event:
            return ItemResult(Outcome.REJECTED, "malformed_event")
        try:
            view = _view_decoder.decode(event)
        except msgspec.DecodeError:
            return ItemResult(Outcome.REJECTED, "malformed_event")
        if view.event is None or not view.event.id:
            return ItemResult(Outcome.REJECTED, "missing_event_id")
        head = b'{"create":{"_index":' + self._target + b',"_id":' + _enc.encode(view.event.id) + b"}}\n"
        return head + event + b"\n"

    def send(self, events: Sequence[bytes]) -> SendResult:
        return send_prepared(events, self.action, self._attempt)

    def _attempt(self, lines: Sequence[bytes]) -> SendResult | Unattributed:
        try:
            resp = self._client.post("/_bulk", b"".join(lines), self._headers)
        except TransportError as exc:
            return transport_retry(len(lines), exc)
        verdict = classify_status(resp.status, parse_retry_after(resp.header("Retry-After")))
        if verdict is not None:
            return SendResult.uniform(len(lines), verdict)
        if not 200 <= resp.status < 300:
            return Unattributed(bounded_reason("es", resp.status))
        try:
            answer = _bulk_decoder.decode(resp.body)
        except msgspec.DecodeError:
            return SendResult.uniform(len(lines), ItemResult(Outcome.RETRY, "es:bad_bulk_response"))
        if not answer.errors and not answer.items:
            return SendResult.uniform(len(lines), ACKED)  # filter_path may drop items
        if len(answer.items) != len(lines):
            return SendResult.uniform(len(lines), ItemResult(Outcome.RETRY, "es:bulk_item_count_mismatch"))
        items: list[ItemResult] = []
        for entry in answer.items:
            body = next(iter(entry.values()), None)
            items.append(classify_item(body) if body is not None else ItemResult(Outcome.RETRY, "es:empty_item"))
        return SendResult(tuple(items))
