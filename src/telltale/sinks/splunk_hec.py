"""Splunk HTTP Event Collector (``/services/collector/event``).

Each event travels in the HEC envelope ``{"time", "host", "source", "sourcetype",
"index", "event"}``; a batch is the envelopes concatenated (HEC's batch framing, no
separator needed). The event document is spliced in as the exact bytes we were given, so
nothing is re-encoded.

Answers: 200 success. 503 (server busy, queues full), 429 and other 5xx: retry. 400
"invalid data": HEC names the first bad event (``invalid-event-number``); that one is
dead-lettered and the rest are sent again at once - at least once, so the events before it
may be indexed twice if Splunk had already taken them (search-time dedup on ``event.id``).
Without that number the batch is bisected. 400 with code 7 (incorrect index) or 10/11
(data channel) is a configuration problem, not bad data: the sink is blocked like on
401/403. Indexer acknowledgement (``ackId``) is not used: a 200 counts as delivered.
"""

from __future__ import annotations

import datetime as dt
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
    send_isolating,
    send_prepared,
    transport_retry,
)

EVENT_PATH = "/services/collector/event"

#: HEC ``code`` values that mean "fix the configuration", not "this event is bad".
_CONFIG_CODES = {1: "token_disabled", 2: "token_required", 3: "invalid_authorization", 4: "invalid_token",
                 7: "incorrect_index", 10: "channel_missing", 11: "invalid_channel", 14: "ack_disabled",
                 16: "query_auth_disabled"}


class _Host(msgspec.Struct):
    name: str | None = None


class _View(msgspec.Struct):
    """The two fields of an event the envelope needs."""

    timestamp: str | None = msgspec.field(default=None, name="@timestamp")
    host: _Host | None = None


class _HecAnswer(msgspec.Struct):
    text: str | None = None
    code: int | None = None
    invalid_event_number: int | None = msgspec.field(default=None, name="invalid-event-number")


_view_decoder = msgspec.json.Decoder(_View)
_answer_decoder = msgspec.json.Decoder(_HecAnswer)
_enc = msgspec.json.Encoder()
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def epoch_seconds(timestamp: str) -> str | None:
    """``2026-02-10T21:16:12.381Z`` -> ``"1770758172.381"`` (seconds, millisecond precision)."""
    try:
        moment = dt.datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    millis = (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    whole, frac = divmod(millis, 1000)
    return f"{whole}.{frac:03d}"


@dataclass
class SplunkHecSink:
    name: str
    url: str
    token: str = field(repr=False)
    index: str | None = None
    sourcetype: str = "telltale:json"
    source: str = "telltale"
    host: str | None = None
    channel: str | None = None
    timeout: float = 10.0
    tls: TlsOptions = field(default_factory=TlsOptions)

    def __post_init__(self) -> None:
        self._client = HttpClient(self.url, timeout=self.timeout, tls=self.tls)
        self._path = "" if self._client.base_path.endswith("/services/collector/event") else EVENT_PATH
        self._headers = {"Authorization": f"Splunk {self.token}", "Content-Type": "application/json"}
        if self.channel:
            self._headers["X-Splunk-Request-Channel"] = self.channel
        self._fixed = b"".join(
            [
                b',"source":' + _enc.encode(self.source),
                b',"sourcetype":' + _enc.encode(self.sourcetype),
                (b',"index":' + _enc.encode(self.index)) if self.index else b"",
            ]
        )

    def close(self) -> None:
        self._client.close()

    def envelope(self, event: bytes) -> bytes | None:
        """The HEC envelope around one event, or ``None`` when the event is not JSON."""
        try:
            view = _view_decoder.decode(event)
        except msgspec.DecodeError:
            return None
        parts = [b"{"]
        when = epoch_seconds(view.timestamp) if view.timestamp else None
        if when is not None:
            parts.append(b'"time":' + when.encode() + b",")
        host = self.host or (view.host.name if view.host else None)
        if host:
            parts.append(b'"host":' + _enc.encode(host) + b",")
        parts.append(self._fixed[1:])  # drop the leading comma: "source" follows "{" or ","
        parts.append(b',"event":')
        parts.append(event)
        parts.append(b"}")
        return b"".join(parts)

    def send(self, events: Sequence[bytes]) -> SendResult:
        """Send ``events`` as concatenated envelopes and classify each."""
        return send_prepared(events, self._prepared, self._attempt)

    def _prepared(self, event: bytes) -> bytes | ItemResult:
        env = self.envelope(event)
        return env if env is not None else ItemResult(Outcome.REJECTED, "malformed_event")

    def _send_envelopes(self, bodies: Sequence[bytes]) -> SendResult:
        return send_isolating(bodies, self._attempt)

    def _attempt(self, bodies: Sequence[bytes]) -> SendResult | Unattributed:
        try:
            resp = self._client.post(self._path, b"".join(bodies), self._headers)
        except TransportError as exc:
            return transport_retry(len(bodies), exc)
        try:
            answer = _answer_decoder.decode(resp.body) if resp.body else _HecAnswer()
        except msgspec.DecodeError:
            answer = _HecAnswer()
        if answer.code in _CONFIG_CODES and resp.status >= 400:
            return SendResult.uniform(
                len(bodies), ItemResult(Outcome.BLOCKED, bounded_reason("hec", _CONFIG_CODES[answer.code]))
            )
        verdict = classify_status(resp.status, parse_retry_after(resp.header("Retry-After")))
        if verdict is not None:
            if verdict.outcome is Outcome.RETRY and answer.code is not None:
                verdict = ItemResult(verdict.outcome, bounded_reason(verdict.reason, "code", answer.code),
                                     verdict.retry_after)
            return SendResult.uniform(len(bodies), verdict)
        if 200 <= resp.status < 300:
            return SendResult.uniform(len(bodies), ACKED)
        reason = bounded_reason("hec", resp.status, "code", answer.code)
        bad = answer.invalid_event_number
        if bad is not None and 0 <= bad < len(bodies) and len(bodies) > 1:
            rest = [b for j, b in enumerate(bodies) if j != bad]
            again = self._send_envelopes(rest).items
            items = [*again[:bad], ItemResult(Outcome.REJECTED, reason), *again[bad:]]
            return SendResult(tuple(items))
        return Unattributed(reason)
