"""The small HTTP client every HTTP sink shares (stdlib ``http.client``).

Why not a third-party client: a host sensor should carry few dependencies, and the
sinks need only ``POST`` with a kept-alive connection, TLS with an optional private CA,
bounded response reads and a clear split between "the receiver answered" (a status we
classify) and "we could not talk to it" (``TransportError``, always retryable).
"""

from __future__ import annotations

import email.utils
import http.client
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from telltale.sinks import ACKED, ItemResult, Outcome, SendResult, bounded_reason

#: Largest response body we read (an Elasticsearch ``_bulk`` answer for a few thousand
#: items is well below this); a longer body is cut and then fails to parse -> retry.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
#: Longest wait a receiver may ask for with ``Retry-After``.
MAX_RETRY_AFTER = 3600.0


class TransportError(Exception):
    """The request did not get an HTTP answer (refused, reset, timeout, TLS).

    ``kind`` is a short content-free token used as the retry reason.
    """

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """TLS settings as the outputs file states them."""

    verify: bool = True
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return None


def parse_retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date), bounded."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - now()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


@dataclass
class HttpClient:
    """One kept-alive connection to one origin; not thread-safe (one per sink)."""

    url: str
    timeout: float = 10.0
    tls: TlsOptions = field(default_factory=TlsOptions)
    _conn: http.client.HTTPConnection | None = field(default=None, init=False, repr=False)
    _ssl: ssl.SSLContext | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("url must be http:// or https:// with a host")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = parts.path.rstrip("/")

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            if self._ssl is None:
                self._ssl = self.tls.context()
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout, context=self._ssl)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def post(self, path: str, body: bytes, headers: Mapping[str, str]) -> HttpResponse:
        """POST ``body`` to ``base path + path``; raise ``TransportError`` without an answer.

        A kept-alive connection the server already closed fails on first use; that one
        case is retried once at once on a fresh connection (the request cannot have been
        processed when the server had closed the socket before reading it).
        """
        target = (self.base_path + path) or "/"
        for attempt in (0, 1):
            reused = self._conn is not None
            if self._conn is None:
                self._conn = self._connect()
            conn = self._conn
            try:
                conn.request("POST", target, body=body, headers=dict(headers))
                resp = conn.getresponse()
                data = resp.read(MAX_RESPONSE_BYTES)
                if resp.will_close or not resp.isclosed():
                    # The server ends the connection, or we left an over-long body unread.
                    self.close()
                return HttpResponse(resp.status, dict(resp.getheaders()), data)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                if reused and attempt == 0:
                    continue
                raise TransportError(_kind(exc)) from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                raise TransportError(_kind(exc)) from None
        raise AssertionError("unreachable")  # pragma: no cover


def _kind(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return "tls_error"
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, ConnectionResetError | http.client.RemoteDisconnected | BrokenPipeError):
        return "connection_reset"
    if isinstance(exc, socket.gaierror):
        return "dns_error"
    if isinstance(exc, http.client.HTTPException):
        return "protocol_error"
    return "connection_error"


def transport_retry(count: int, exc: TransportError) -> SendResult:
    """Every event of a batch that got no answer is retried."""
    return SendResult.uniform(count, ItemResult(Outcome.RETRY, bounded_reason(exc.kind)))


@dataclass(frozen=True, slots=True)
class Unattributed:
    """The receiver rejected the batch as invalid but did not say which event was bad."""

    reason: str


Attempt = Callable[[Sequence[bytes]], "SendResult | Unattributed"]


def send_isolating(events: Sequence[bytes], attempt: Attempt) -> SendResult:
    """Send ``events``; when the receiver rejects the batch as a whole, bisect it.

    A single bad event in a batch of n then costs about 2·log2(n) extra requests and
    only that event is dead-lettered. Once a half ends blocked, the rest is not sent:
    the outbox is about to stop the sink anyway.
    """
    result = attempt(events)
    if isinstance(result, SendResult):
        return result
    if len(events) <= 1:
        return SendResult.uniform(len(events), ItemResult(Outcome.REJECTED, result.reason))
    mid = len(events) // 2
    left = send_isolating(events[:mid], attempt)
    blocked = left.blocked
    if blocked is not None:
        return left + SendResult.uniform(len(events) - mid, blocked)
    return left + send_isolating(events[mid:], attempt)


def send_prepared(
    events: Sequence[bytes],
    prepare: Callable[[bytes], bytes | ItemResult],
    attempt: Attempt,
) -> SendResult:
    """Prepare each event (its wire form, or why it cannot be sent), send the prepared
    ones with :func:`send_isolating`, and put every outcome back at its event's place."""
    results: list[ItemResult | None] = [None] * len(events)
    ready: list[bytes] = []
    index: list[int] = []
    for i, event in enumerate(events):
        prepared = prepare(event)
        if isinstance(prepared, ItemResult):
            results[i] = prepared
        else:
            ready.append(prepared)
            index.append(i)
    notes: tuple[str, ...] = ()
    if ready:
        sent = send_isolating(ready, attempt)
        for i, item in zip(index, sent.items, strict=True):
            results[i] = item
        notes = sent.notes
    return SendResult(tuple(r if r is not None else ACKED for r in results), notes)


def classify_status(status: int, retry_after: float | None) -> ItemResult | None:
    """The common HTTP reading; ``None`` means "the sink must look at the body".

    * 2xx: ``None`` (success, possibly with per-item detail).
    * 401/403: blocked (credentials). 404/405 and 3xx: blocked too - the endpoint is
      misconfigured, and dead-lettering every event until an operator notices would
      throw the queue away.
    * 408, 429 and 5xx: retry (OTLP's spec lists 429/502/503/504; we also retry 500
      and the rest of 5xx, bounded by ``max_retries``, as Vector does).
    * 400/413/422: ``None`` too - a batch-level "invalid" the sink bisects.
    * Other 4xx: rejected.
    """
    if 200 <= status < 300:
        return None
    if status in (401, 403):
        return ItemResult(Outcome.BLOCKED, bounded_reason("http", status))
    if status in (404, 405) or 300 <= status < 400:
        return ItemResult(Outcome.BLOCKED, bounded_reason("http", status, "endpoint"))
    if status in (408, 429) or status >= 500:
        return ItemResult(Outcome.RETRY, bounded_reason("http", status), retry_after)
    if status in (400, 413, 422):
        return None
    return ItemResult(Outcome.REJECTED, bounded_reason("http", status))
