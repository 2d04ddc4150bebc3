"""OpenTelemetry logs (OTLP) delivery, over http/protobuf or gRPC.

Why not the SDK's ``BatchLogRecordProcessor`` + exporter: it exports on its own thread
and swallows the outcome, so the outbox could never learn which events were stored.
Instead each ``send`` builds one ``ExportLogsServiceRequest`` with ``opentelemetry-proto``
(pulled in by the ``otlp`` extra together with the SDK exporters) and POSTs it itself, or
calls the gRPC ``LogsService/Export`` stub, so the request's answer is the answer for
exactly those events. Both are imported lazily: without ``pip install 'telltale[otlp]'``
building an OTLP sink fails with a ``ConfigError`` that says so.

Mapping of one event to one ``LogRecord``:

* ``event_name`` = ``event.action``, also as the ``event.name`` attribute;
* ``time_unix_nano`` from ``@timestamp``; ``observed_time_unix_nano`` = send time;
* severity from ``log.level`` (info/warning/error/critical -> INFO/WARN/ERROR/FATAL),
  else from ``event.severity`` 0-100 in Elastic's risk bands (<=21 INFO, <=47 WARN,
  <=73 ERROR, else FATAL), else INFO;
* body = ``message`` (a string), when present;
* attributes = every other field flattened to dotted keys (``gen_ai.tool.name``), scalars
  and lists of scalars; lists holding objects are counted in ``dropped_attributes_count``;
* resource ``service.name=telltale``, ``service.version`` = ``observer.version``,
  ``host.name`` (records are grouped by resource).

An OTLP partial success (``rejected_log_records`` > 0) does not say which records were
refused and the spec forbids retrying it: the events count as delivered and the count is
reported as a note (``otlp_partial_rejected:N``).
"""

from __future__ import annotations

import datetime as dt
import importlib
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import msgspec

from telltale import __version__
from telltale.errors import ConfigError
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

LOGS_PATH = "/v1/logs"
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_INT64 = 2**63

# OpenTelemetry SeverityNumber values (logs data model).
SEVERITY_INFO, SEVERITY_WARN, SEVERITY_ERROR, SEVERITY_FATAL = 9, 13, 17, 21
_LEVELS = {
    "trace": (1, "TRACE"),
    "debug": (5, "DEBUG"),
    "info": (SEVERITY_INFO, "INFO"),
    "notice": (10, "INFO2"),
    "warning": (SEVERITY_WARN, "WARN"),
    "warn": (SEVERITY_WARN, "WARN"),
    "error": (SEVERITY_ERROR, "ERROR"),
    "critical": (SEVERITY_FATAL, "FATAL"),
    "fatal": (SEVERITY_FATAL, "FATAL"),
}
#: Top-level fields that become something other than an attribute.
_NOT_ATTRIBUTES = ("@timestamp", "message")


@dataclass(frozen=True)
class _Proto:
    logs: ModuleType
    common: ModuleType
    resource: ModuleType
    service: ModuleType


_proto_cache: list[_Proto] = []


def proto() -> _Proto:
    """The generated OTLP classes, or a clear error when the extra is not installed."""
    if not _proto_cache:
        try:
            _proto_cache.append(
                _Proto(
                    logs=importlib.import_module("opentelemetry.proto.logs.v1.logs_pb2"),
                    common=importlib.import_module("opentelemetry.proto.common.v1.common_pb2"),
                    resource=importlib.import_module("opentelemetry.proto.resource.v1.resource_pb2"),
                    service=importlib.import_module("opentelemetry.proto.collector.logs.v1.logs_service_pb2"),
                )
            )
        except ImportError:
            raise ConfigError(
                "the OTLP output needs the optional OpenTelemetry packages: pip install 'telltale[otlp]'"
            ) from None
    return _proto_cache[0]


def severity(level: object, score: object) -> tuple[int, str]:
    """(SeverityNumber, SeverityText) from ``log.level``, else ``event.severity``."""
    if isinstance(level, str) and level.lower() in _LEVELS:
        return _LEVELS[level.lower()]
    if isinstance(score, int | float) and not isinstance(score, bool):
        if score <= 21:
            return SEVERITY_INFO, "INFO"
        if score <= 47:
            return SEVERITY_WARN, "WARN"
        if score <= 73:
            return SEVERITY_ERROR, "ERROR"
        return SEVERITY_FATAL, "FATAL"
    return SEVERITY_INFO, "INFO"


def timestamp_ns(value: object) -> int:
    """``@timestamp`` as Unix nanoseconds; 0 (OTLP's "unknown") when absent or invalid."""
    if not isinstance(value, str):
        return 0
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return ((moment - _EPOCH) // dt.timedelta(microseconds=1)) * 1000


Scalar = str | bool | int | float


def _is_scalar(v: object) -> bool:
    return isinstance(v, str | bool | int | float)


def flatten(doc: Mapping[str, Any]) -> tuple[list[tuple[str, Scalar | list[Scalar]]], int]:
    """Dotted attributes from a nested event, and how many values could not be kept."""
    out: list[tuple[str, Scalar | list[Scalar]]] = []
    dropped = 0
    stack: list[tuple[str, Mapping[str, Any]]] = [("", doc)]
    while stack:
        prefix, obj = stack.pop()
        for key, value in obj.items():
            if not prefix and key in _NOT_ATTRIBUTES:
                continue
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                stack.append((name + ".", value))
            elif value is None:
                continue
            elif _is_scalar(value):
                out.append((name, value))
            elif isinstance(value, list) and all(_is_scalar(v) for v in value):
                out.append((name, list(value)))
            else:
                dropped += 1
    out.sort(key=lambda kv: kv[0])
    return out, dropped


def _set_any(target: Any, value: Scalar | list[Scalar]) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if -_INT64 <= value < _INT64:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    else:
        values = target.array_value.values
        for item in value:
            _set_any(values.add(), item)


def _get(doc: Mapping[str, Any], *path: str) -> Any:
    cur: Any = doc
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def build_request(
    events: Sequence[bytes], now_ns: int | None = None
) -> tuple[Any, list[ItemResult | None]]:
    """One ``ExportLogsServiceRequest`` for ``events``.

    Returns the request and, per event, ``None`` when it is in the request or the
    rejection when it is not (not a JSON object).
    """
    pb = proto()
    now_ns = time.time_ns() if now_ns is None else now_ns
    request = pb.service.ExportLogsServiceRequest()
    groups: dict[tuple[str | None, str | None], Any] = {}
    skipped: list[ItemResult | None] = []
    for raw in events:
        try:
            doc = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            skipped.append(ItemResult(Outcome.REJECTED, "malformed_event"))
            continue
        if not isinstance(doc, dict):
            skipped.append(ItemResult(Outcome.REJECTED, "malformed_event"))
            continue
        skipped.append(None)
        host = _get(doc, "host", "name")
        version = _get(doc, "observer", "version")
        key = (host if isinstance(host, str) else None, version if isinstance(version, str) else None)
        scope_logs = groups.get(key)
        if scope_logs is None:
            rl = request.resource_logs.add()
            _add_attr(rl.resource.attributes, "service.name", "telltale")
            if key[1]:
                _add_attr(rl.resource.attributes, "service.version", key[1])
            if key[0]:
                _add_attr(rl.resource.attributes, "host.name", key[0])
            scope_logs = rl.scope_logs.add()
            scope_logs.scope.name = "telltale"
            scope_logs.scope.version = __version__
            groups[key] = scope_logs
        rec = scope_logs.log_records.add()
        rec.time_unix_nano = timestamp_ns(doc.get("@timestamp"))
        rec.observed_time_unix_nano = now_ns
        number, text = severity(_get(doc, "log", "level"), _get(doc, "event", "severity"))
        rec.severity_number = number
        rec.severity_text = text
        message = doc.get("message")
        if isinstance(message, str):
            rec.body.string_value = message
        action = _get(doc, "event", "action")
        attrs, dropped = flatten(doc)
        if isinstance(action, str):
            rec.event_name = action
            attrs.append(("event.name", action))
        for name, value in attrs:
            _add_attr(rec.attributes, name, value)
        rec.dropped_attributes_count = dropped
    return request, skipped


def _add_attr(attributes: Any, key: str, value: Scalar | list[Scalar]) -> None:
    kv = attributes.add()
    kv.key = key
    _set_any(kv.value, value)


def _partial_note(pb: _Proto, body: bytes) -> tuple[str, ...]:
    if not body:
        return ()
    try:
        answer = pb.service.ExportLogsServiceResponse.FromString(body)
    except Exception:  # a 200 with an unparsable body is still a success
        return ()
    rejected = int(answer.partial_success.rejected_log_records)
    return (f"otlp_partial_rejected:{rejected}",) if rejected > 0 else ()


# gRPC status code names -> outcome (OTLP/gRPC spec, plus auth -> blocked).
_GRPC_RETRY = {"CANCELLED", "DEADLINE_EXCEEDED", "ABORTED", "OUT_OF_RANGE", "UNAVAILABLE", "DATA_LOSS",
               "RESOURCE_EXHAUSTED", "INTERNAL", "UNKNOWN"}
_GRPC_BLOCKED = {"UNAUTHENTICATED", "PERMISSION_DENIED", "UNIMPLEMENTED"}


@dataclass
class OtlpSink:
    name: str
    endpoint: str
    protocol: str = "http/protobuf"
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout: float = 10.0
    tls: TlsOptions = field(default_factory=TlsOptions)
    clock_ns: Callable[[], int] = time.time_ns

    def __post_init__(self) -> None:
        self._pb = proto()
        if self.protocol == "http/protobuf":
            self._client: HttpClient | None = HttpClient(self.endpoint, timeout=self.timeout, tls=self.tls)
            self._path = "" if self._client.base_path else LOGS_PATH
            self._http_headers = {"Content-Type": "application/x-protobuf", **self.headers}
            self._stub: Any = None
        elif self.protocol == "grpc":
            self._client = None
            self._stub = self._grpc_stub()
        else:
            raise ValueError(f"unknown OTLP protocol {self.protocol!r}")

    def _grpc_stub(self) -> Any:
        try:
            grpc = importlib.import_module("grpc")
            svc = importlib.import_module("opentelemetry.proto.collector.logs.v1.logs_service_pb2_grpc")
        except ImportError:
            raise ConfigError(
                "the OTLP gRPC protocol needs grpcio: pip install 'telltale[otlp]'"
            ) from None
        self._grpc = grpc
        url = self.endpoint if "://" in self.endpoint else "http://" + self.endpoint
        parts = urllib.parse.urlsplit(url)
        default_port = 443 if parts.scheme == "https" else 4317
        target = f"{parts.hostname}:{parts.port or default_port}"
        if parts.hostname and ":" in parts.hostname:
            target = f"[{parts.hostname}]:{parts.port or default_port}"
        if parts.scheme == "https":
            def _read(p: str | None) -> bytes | None:
                if not p:
                    return None
                with open(p, "rb") as fh:
                    return fh.read()

            creds = grpc.ssl_channel_credentials(
                root_certificates=_read(self.tls.ca_file),
                private_key=_read(self.tls.key_file),
                certificate_chain=_read(self.tls.cert_file),
            )
            self._channel = grpc.secure_channel(target, creds)
        else:
            self._channel = grpc.insecure_channel(target)
        self._metadata = tuple((k.lower(), v) for k, v in self.headers.items())
        return svc.LogsServiceStub(self._channel)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._stub is not None:
            self._channel.close()

    def send(self, events: Sequence[bytes]) -> SendResult:
        return send_prepared(events, _checked, self._attempt)

    def _attempt(self, events: Sequence[bytes]) -> SendResult | Unattributed:
        request, _ = build_request(events, self.clock_ns())
        payload = request.SerializeToString()
        if self._client is not None:
            return self._attempt_http(len(events), payload)
        return self._attempt_grpc(len(events), request)

    def _attempt_http(self, count: int, payload: bytes) -> SendResult | Unattributed:
        assert self._client is not None
        try:
            resp = self._client.post(self._path, payload, self._http_headers)
        except TransportError as exc:
            return transport_retry(count, exc)
        verdict = classify_status(resp.status, parse_retry_after(resp.header("Retry-After")))
        if verdict is not None:
            return SendResult.uniform(count, verdict)
        if 200 <= resp.status < 300:
            return SendResult.uniform(count, ACKED, _partial_note(self._pb, resp.body))
        return Unattributed(bounded_reason("otlp", resp.status))

    def _attempt_grpc(self, count: int, request: Any) -> SendResult | Unattributed:
        grpc = self._grpc
        try:
            answer = self._stub.Export(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            name = getattr(code, "name", "UNKNOWN")
            reason = bounded_reason("grpc", name.lower())
            if name in _GRPC_BLOCKED:
                return SendResult.uniform(count, ItemResult(Outcome.BLOCKED, reason))
            if name in _GRPC_RETRY:
                return SendResult.uniform(count, ItemResult(Outcome.RETRY, reason))
            if name == "INVALID_ARGUMENT":
                return Unattributed(reason)
            return SendResult.uniform(count, ItemResult(Outcome.REJECTED, reason))
        rejected = int(answer.partial_success.rejected_log_records)
        notes = (f"otlp_partial_rejected:{rejected}",) if rejected > 0 else ()
        return SendResult.uniform(count, ACKED, notes)


def _checked(raw: bytes) -> bytes | ItemResult:
    """An event is sendable when it is a JSON object."""
    try:
        doc = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        doc = None
    return raw if isinstance(doc, dict) else ItemResult(Outcome.REJECTED, "malformed_event")
