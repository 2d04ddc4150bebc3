"""Loopback receivers and synthetic events for the delivery tests.

The receivers speak the real wire protocols: an OTLP/HTTP endpoint that parses
``ExportLogsServiceRequest`` protobuf with ``opentelemetry-proto``, a gRPC
``LogsServiceServicer``, and an Elasticsearch-like ``_bulk`` endpoint that stores
documents by ``_id`` (``create`` semantics: 409 for an existing id). They bind to
127.0.0.1 only, can be stopped and restarted on the same port, and can be told to answer
the next requests with given statuses.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc


def make_event(
    i: int,
    *,
    action: str = "tool_call",
    host: str = "h",
    level: str | None = None,
    severity: int | None = None,
    message: str | None = "tool_call Bash",
    event_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """One event document as the pipeline hands it over: compact UTF-8 JSON, no newline."""
    event: dict[str, Any] = {
        "id": event_id or f"ev{i:08d}",
        "kind": "event",
        "dataset": "telltale.activity",
        "action": action,
    }
    if severity is not None:
        event["severity"] = severity
    doc: dict[str, Any] = {
        "@timestamp": f"2026-02-10T21:16:{i % 60:02d}.381Z",
        "event": event,
        "host": {"name": host},
        "user": {"name": "u"},
        "observer": {"product": "telltale", "version": "0.1.0"},
        "gen_ai": {
            "conversation": {"id": "S"},
            "tool": {"name": "Bash", "call": {"id": f"toolu_{i}"}},
            "usage": {"input_tokens": 1200 + i, "output_tokens": 7},
        },
        "process": {"command_line": "ls -la"},
        "telltale": {
            "schema_version": "1.0",
            "client": "claude",
            "source": {"kind": "claude.projects", "path_hash": "ab12"},
            "tags": ["a", "b"],
        },
    }
    if level is not None:
        doc["log"] = {"level": level}
    if message is not None:
        doc["message"] = message
    if extra:
        doc.update(extra)
    return json.dumps(doc, separators=(",", ":")).encode()


def event_id_of(raw: bytes) -> str:
    return str(json.loads(raw)["event"]["id"])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class LoopbackReceiver:
    """A small HTTP receiver on 127.0.0.1 with scripted failures.

    ``script`` holds statuses for the next requests (consumed one per request); an empty
    script means "behave normally". ``handle(path, headers, body)`` returns
    (status, headers, body) for normal behaviour.
    """

    def __init__(self, handle: Callable[[str, dict[str, str], bytes], tuple[int, dict[str, str], bytes]]) -> None:
        self.handle = handle
        self.script: list[tuple[int, dict[str, str], bytes]] = []
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        self.port = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.stop_after: int | None = None  # stop listening after this many requests

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LoopbackReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                headers = {k: v for k, v in self.headers.items()}
                with receiver.lock:
                    receiver.requests.append((self.path, headers, body))
                    scripted = receiver.script.pop(0) if receiver.script else None
                    if scripted is None:
                        status, rheaders, rbody = receiver.handle(self.path, headers, body)
                    else:
                        status, rheaders, rbody = scripted
                    stop = receiver.stop_after is not None and len(receiver.requests) >= receiver.stop_after
                if stop:
                    # Stop listening before answering: the client's next connection is refused.
                    receiver.stop_after = None
                    receiver.stop()
                self.send_response(status)
                for k, v in rheaders.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(rbody)))
                if stop:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(rbody)

        self._server = _Server(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> LoopbackReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- OTLP ---------------------------------------------------------------------------------


class OtlpStore:
    """What an OTLP receiver got: (resource attributes, log record) pairs."""

    def __init__(self) -> None:
        self.records: list[tuple[dict[str, Any], Any]] = []
        self.partial_rejected = 0

    def add(self, request: logs_service_pb2.ExportLogsServiceRequest) -> bytes:
        for rl in request.resource_logs:
            resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
            for sl in rl.scope_logs:
                for rec in sl.log_records:
                    self.records.append((resource, rec))
        answer = logs_service_pb2.ExportLogsServiceResponse()
        if self.partial_rejected:
            answer.partial_success.rejected_log_records = self.partial_rejected
            answer.partial_success.error_message = "some were dropped"
        return answer.SerializeToString()

    def event_ids(self) -> list[str]:
        return [attrs(rec)["event.id"] for _, rec in self.records]


def any_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind is None:
        return None
    return getattr(value, kind)


def attrs(record: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in record.attributes}


def otlp_http_receiver(store: OtlpStore) -> LoopbackReceiver:
    def handle(path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if path != "/v1/logs" or headers.get("Content-Type") != "application/x-protobuf":
            return 404, {}, b""
        request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        return 200, {"Content-Type": "application/x-protobuf"}, store.add(request)

    return LoopbackReceiver(handle)


class GrpcLogsReceiver(logs_service_pb2_grpc.LogsServiceServicer):  # type: ignore[misc]
    """A real gRPC ``LogsService`` on 127.0.0.1 with scripted status codes."""

    def __init__(self, store: OtlpStore) -> None:
        self.store = store
        self.script: list[grpc.StatusCode] = []
        self.metadata: list[dict[str, str]] = []
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def Export(self, request: Any, context: Any) -> Any:
        self.metadata.append(dict(context.invocation_metadata()))
        if self.script:
            code = self.script.pop(0)
            context.abort(code, "scripted")
        return logs_service_pb2.ExportLogsServiceResponse.FromString(self.store.add(request))

    def __enter__(self) -> GrpcLogsReceiver:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(None)


# -- Elasticsearch _bulk ------------------------------------------------------------------


class BulkStore:
    """Documents by ``_id``, with ``create`` semantics, and per-item error injection."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}
        self.item_errors: dict[str, tuple[int, str]] = {}  # _id -> (status, error type), once

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if not path.endswith("/_bulk"):
            return 404, {}, b""
        lines = body.split(b"\n")
        assert lines[-1] == b"", "NDJSON body must end with a newline"
        items = []
        errors = False
        for action_line, doc_line in zip(lines[0:-1:2], lines[1:-1:2], strict=True):
            action = json.loads(action_line)["create"]
            _id = action["_id"]
            doc = json.loads(doc_line)
            if _id in self.item_errors:
                status, etype = self.item_errors.pop(_id)
                items.append({"create": {"_index": action["_index"], "_id": _id, "status": status,
                                         "error": {"type": etype, "reason": "secret-looking text ghp_FAKE"}}})
                errors = True
            elif _id in self.docs:
                items.append({"create": {"_index": action["_index"], "_id": _id, "status": 409,
                                         "error": {"type": "version_conflict_engine_exception",
                                                   "reason": "document already exists"}}})
                errors = True
            else:
                self.docs[_id] = doc
                items.append({"create": {"_index": action["_index"], "_id": _id, "status": 201,
                                         "result": "created"}})
        answer = {"took": 1, "errors": errors, "items": items}
        return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()
