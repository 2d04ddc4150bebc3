"""OTLP sink against real loopback receivers (http/protobuf and gRPC)."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sink_receivers import (
    GrpcLogsReceiver,
    OtlpStore,
    attrs,
    make_event,
    otlp_http_receiver,
)
from telltale.sinks import Outcome
from telltale.sinks.otlp import OtlpSink, build_request, flatten, severity, timestamp_ns


def test_http_protobuf_records_carry_event_name_severity_body_attributes_resource() -> None:
    store = OtlpStore()
    with otlp_http_receiver(store) as rx:
        sink = OtlpSink(name="otel", endpoint=rx.url, headers={"x-api-key": "FAKE"})
        events = [
            make_event(1),
            make_event(2, action="detection", level="critical", message="rule fired"),
            make_event(3, action="usage", severity=50, message=None),
        ]
        result = sink.send(events)
        sink.close()
    assert [i.outcome for i in result.items] == [Outcome.ACKED] * 3
    assert rx.requests[0][1]["x-api-key"] == "FAKE"
    assert len(store.records) == 3
    resource, rec = store.records[0]
    assert resource == {"service.name": "telltale", "service.version": "0.1.0", "host.name": "h"}
    assert rec.event_name == "tool_call"
    a = attrs(rec)
    assert a["event.name"] == "tool_call"
    assert a["event.id"] == "ev00000001"
    assert a["gen_ai.tool.name"] == "Bash"
    assert a["gen_ai.tool.call.id"] == "toolu_1"
    assert a["gen_ai.usage.input_tokens"] == 1201
    assert a["process.command_line"] == "ls -la"
    assert a["telltale.source.kind"] == "claude.projects"
    assert a["telltale.tags"] == ["a", "b"]
    assert "@timestamp" not in a and "message" not in a
    assert rec.body.string_value == "tool_call Bash"
    assert rec.severity_number == 9 and rec.severity_text == "INFO"
    # calendar.timegm((2026, 2, 10, 21, 16, 1)) seconds + 381 ms
    assert rec.time_unix_nano == timestamp_ns("2026-02-10T21:16:01.381Z") == 1770758161381000000
    assert rec.observed_time_unix_nano > 0
    by_name = {r.event_name: r for _, r in store.records}
    assert by_name["detection"].severity_number == 21 and by_name["detection"].severity_text == "FATAL"
    assert by_name["detection"].body.string_value == "rule fired"
    assert by_name["usage"].severity_number == 17  # event.severity 50 -> ERROR band
    assert not by_name["usage"].HasField("body")


def test_records_grouped_by_resource_host() -> None:
    request, skipped = build_request([make_event(1, host="a"), make_event(2, host="b"), make_event(3, host="a")])
    assert skipped == [None, None, None]
    hosts = [
        {kv.key: kv.value.string_value for kv in rl.resource.attributes}["host.name"] for rl in request.resource_logs
    ]
    assert hosts == ["a", "b"]
    assert [len(rl.scope_logs[0].log_records) for rl in request.resource_logs] == [2, 1]
    assert request.resource_logs[0].scope_logs[0].scope.name == "telltale"


def test_lists_of_objects_are_counted_as_dropped_attributes() -> None:
    raw = make_event(1, extra={"threat": {"technique": [{"id": "T1"}]}, "big": 2**70, "flag": True})
    request, _ = build_request([raw])
    rec = request.resource_logs[0].scope_logs[0].log_records[0]
    assert rec.dropped_attributes_count == 1
    a = attrs(rec)
    assert a["big"] == str(2**70)  # beyond int64: kept as a string
    assert a["flag"] is True


@pytest.mark.parametrize(
    ("level", "score", "expected"),
    [
        ("info", None, (9, "INFO")),
        ("warning", 99, (13, "WARN")),  # log.level wins
        ("error", None, (17, "ERROR")),
        ("critical", None, (21, "FATAL")),
        (None, 21, (9, "INFO")),
        (None, 47, (13, "WARN")),
        (None, 73, (17, "ERROR")),
        (None, 74, (21, "FATAL")),
        (None, None, (9, "INFO")),
        ("bogus", True, (9, "INFO")),
    ],
)
def test_severity_mapping(level: str | None, score: object, expected: tuple[int, str]) -> None:
    assert severity(level, score) == expected


def test_partial_success_is_acked_with_a_note() -> None:
    store = OtlpStore()
    store.partial_rejected = 1
    with otlp_http_receiver(store) as rx:
        sink = OtlpSink(name="otel", endpoint=rx.url + "/v1/logs")
        result = sink.send([make_event(1), make_event(2)])
        sink.close()
    assert result.count(Outcome.ACKED) == 2
    assert result.notes == ("otlp_partial_rejected:1",)


def test_http_statuses_are_classified() -> None:
    store = OtlpStore()
    with otlp_http_receiver(store) as rx:
        sink = OtlpSink(name="otel", endpoint=rx.url)
        rx.script = [(503, {"Retry-After": "7"}, b"")]
        r = sink.send([make_event(1)])
        assert r.items[0].outcome is Outcome.RETRY and r.items[0].retry_after == 7.0
        rx.script = [(401, {}, b"")]
        assert sink.send([make_event(1)]).items[0].outcome is Outcome.BLOCKED
        # 400 on a batch of 4: bisected until the bad one is alone; the rest is delivered.
        rx.script = [(400, {}, b""), (400, {}, b""), (400, {}, b"")]
        r = sink.send([make_event(i) for i in range(4)])
        sink.close()
    assert [i.outcome for i in r.items] == [Outcome.REJECTED, Outcome.ACKED, Outcome.ACKED, Outcome.ACKED]
    assert sorted(store.event_ids()) == ["ev00000001", "ev00000002", "ev00000003"]


def test_unreachable_endpoint_is_retryable() -> None:
    rx = otlp_http_receiver(OtlpStore()).start()
    url = rx.url
    rx.stop()
    sink = OtlpSink(name="otel", endpoint=url, timeout=2)
    r = sink.send([make_event(1)])
    assert r.items[0].outcome is Outcome.RETRY
    assert r.items[0].reason == "connection_refused"


def test_malformed_event_rejected_alone() -> None:
    store = OtlpStore()
    with otlp_http_receiver(store) as rx:
        sink = OtlpSink(name="otel", endpoint=rx.url)
        r = sink.send([b"{not json", make_event(1), b"[1,2]"])
        sink.close()
    assert [i.outcome for i in r.items] == [Outcome.REJECTED, Outcome.ACKED, Outcome.REJECTED]
    assert r.items[0].reason == "malformed_event"
    assert store.event_ids() == ["ev00000001"]


def test_grpc_export_and_status_codes() -> None:
    store = OtlpStore()
    with GrpcLogsReceiver(store) as rx:
        sink = OtlpSink(
            name="otel", endpoint=f"127.0.0.1:{rx.port}", protocol="grpc", headers={"X-Api-Key": "FAKE"}, timeout=5
        )
        r = sink.send([make_event(1, level="warning"), make_event(2)])
        assert [i.outcome for i in r.items] == [Outcome.ACKED, Outcome.ACKED]
        assert rx.metadata[0]["x-api-key"] == "FAKE"
        resource, rec = store.records[0]
        assert resource["service.name"] == "telltale" and resource["host.name"] == "h"
        assert rec.event_name == "tool_call" and rec.severity_text == "WARN"
        assert attrs(rec)["gen_ai.conversation.id"] == "S"

        rx.script = [grpc.StatusCode.UNAVAILABLE]
        assert sink.send([make_event(3)]).items[0].outcome is Outcome.RETRY
        rx.script = [grpc.StatusCode.UNAUTHENTICATED]
        blocked = sink.send([make_event(3)]).items[0]
        assert blocked.outcome is Outcome.BLOCKED and blocked.reason == "grpc:unauthenticated"
        rx.script = [grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.INVALID_ARGUMENT]
        r = sink.send([make_event(4), make_event(5)])
        assert [i.outcome for i in r.items] == [Outcome.REJECTED, Outcome.ACKED]
        sink.close()
    assert store.event_ids() == ["ev00000001", "ev00000002", "ev00000005"]


_scalar = st.one_of(
    st.text(max_size=5), st.integers(-(2**70), 2**70), st.booleans(), st.floats(allow_nan=False, allow_infinity=False)
)
_json = st.recursive(
    st.one_of(st.none(), _scalar),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=4), _json, max_size=5))
def test_flatten_and_build_accept_any_json_object(doc: dict[str, object]) -> None:
    """Any JSON object becomes one record; no value is lost silently."""
    pairs, dropped = flatten(doc)
    request, skipped = build_request([json.dumps(doc).encode()])
    assert skipped == [None]
    rec = request.resource_logs[0].scope_logs[0].log_records[0]
    assert rec.dropped_attributes_count == dropped
    assert len(rec.attributes) == len(pairs) + (1 if isinstance(doc.get("event"), dict)
                                                and isinstance(doc["event"].get("action"), str) else 0)
    assert all(isinstance(k, str) for k, _ in pairs)


def test_oteltap_third_party_receiver_accepts_our_requests() -> None:
    """Interop: an independent OTLP/HTTP receiver (oteltap, Rust core) decodes our records."""
    import asyncio
    import socket

    from oteltap import OtelTapHttpProtobufReceiver, OtelTapHttpProtobufReceiverSettings

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()

    async def scenario() -> tuple[Any, Any]:
        settings_ = OtelTapHttpProtobufReceiverSettings(http_port=port, listen_on_all_interfaces=False)
        async with OtelTapHttpProtobufReceiver(settings_) as rx:
            waiter = asyncio.ensure_future(rx.await_log(lambda r: r.event_name == "detection", timeout=10))
            await asyncio.sleep(0.1)
            sink = OtlpSink(name="otel", endpoint=f"http://127.0.0.1:{port}")
            result = await asyncio.to_thread(sink.send, [make_event(7, action="detection", level="error")])
            sink.close()
            return result, await waiter

    result, record = asyncio.run(scenario())
    assert [i.outcome for i in result.items] == [Outcome.ACKED]
    assert record.severity_number == 17
    assert record.body.string_value == "tool_call Bash"
    assert attrs(record)["event.id"] == "ev00000007"
