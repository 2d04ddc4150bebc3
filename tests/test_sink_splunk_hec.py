"""Splunk HEC sink against a protocol-faithful loopback collector (pytest-httpserver)."""

from __future__ import annotations

import calendar
import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sink_receivers import make_event
from telltale.sinks import Outcome
from telltale.sinks.splunk_hec import SplunkHecSink, epoch_seconds

TOKEN = "FAKE-0000-hec-token"


def split_concatenated(body: bytes) -> list[dict[str, Any]]:
    """HEC batch framing: JSON objects one after another (whitespace allowed between)."""
    decoder = json.JSONDecoder()
    text = body.decode()
    out, pos = [], 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        obj, pos = decoder.raw_decode(text, pos)
        out.append(obj)
    return out


class Collector:
    """Validates each request like HEC and stores envelopes; can inject answers."""

    def __init__(self) -> None:
        self.envelopes: list[dict[str, Any]] = []
        self.requests = 0
        self.script: list[Callable[[list[dict[str, Any]]], Response] | Response] = []

    def __call__(self, request: Request) -> Response:
        self.requests += 1
        if request.headers.get("Authorization") != f"Splunk {TOKEN}":
            return Response('{"text":"Invalid authorization","code":3}', status=401)
        envelopes = split_concatenated(request.get_data())
        if self.script:
            step = self.script.pop(0)
            if isinstance(step, Response):
                return step
            return step(envelopes)
        for env in envelopes:
            assert set(env) <= {"time", "host", "source", "sourcetype", "index", "event", "fields"}
            assert isinstance(env["event"], dict)
        self.envelopes.extend(envelopes)
        return Response('{"text":"Success","code":0}', status=200, content_type="application/json")


@pytest.fixture
def collector(httpserver: HTTPServer) -> Collector:
    c = Collector()
    httpserver.expect_request("/services/collector/event", method="POST").respond_with_handler(c)
    return c


def sink_for(httpserver: HTTPServer, **kw: Any) -> SplunkHecSink:
    return SplunkHecSink(name="splunk", url=httpserver.url_for("/"), token=TOKEN, **kw)


def test_envelope_framing_and_fields(httpserver: HTTPServer, collector: Collector) -> None:
    sink = sink_for(httpserver, index="sec", source="telltale:test")
    events = [make_event(i) for i in range(3)]
    result = sink.send(events)
    assert [i.outcome for i in result.items] == [Outcome.ACKED] * 3
    assert collector.requests == 1
    env = collector.envelopes[0]
    assert env["time"] == pytest.approx(calendar.timegm((2026, 2, 10, 21, 16, 0)) + 0.381)
    assert env["host"] == "h" and env["index"] == "sec"
    assert env["source"] == "telltale:test" and env["sourcetype"] == "telltale:json"
    assert env["event"] == json.loads(events[0])  # the document, unchanged
    # The event bytes are spliced in verbatim.
    assert events[1] in httpserver.log[0][0].get_data()


def test_full_endpoint_url_and_host_override(httpserver: HTTPServer, collector: Collector) -> None:
    sink = SplunkHecSink(name="s", url=httpserver.url_for("/services/collector/event"), token=TOKEN, host="override")
    assert sink.send([make_event(1)]).items[0].outcome is Outcome.ACKED
    assert collector.envelopes[0]["host"] == "override"
    assert "index" not in collector.envelopes[0]


def test_503_server_busy_and_429_are_retryable(httpserver: HTTPServer, collector: Collector) -> None:
    sink = sink_for(httpserver)
    collector.script = [Response('{"text":"Server is busy","code":9}', status=503, headers={"Retry-After": "12"})]
    r = sink.send([make_event(1), make_event(2)])
    assert all(i.outcome is Outcome.RETRY for i in r.items)
    assert r.items[0].retry_after == 12.0 and r.items[0].reason == "http:503:code:9"
    collector.script = [Response("", status=429)]
    assert sink.send([make_event(1)]).items[0].outcome is Outcome.RETRY
    assert collector.envelopes == []


def test_401_403_block_the_sink(httpserver: HTTPServer, collector: Collector) -> None:
    bad = SplunkHecSink(name="s", url=httpserver.url_for("/"), token="wrong")
    r = bad.send([make_event(1), make_event(2)])
    assert [i.outcome for i in r.items] == [Outcome.BLOCKED, Outcome.BLOCKED]
    assert r.items[0].reason == "hec:invalid_authorization"
    collector.script = [Response('{"text":"Token disabled","code":1}', status=403)]
    assert sink_for(httpserver).send([make_event(1)]).items[0].reason == "hec:token_disabled"


def test_incorrect_index_blocks_instead_of_dead_lettering(httpserver: HTTPServer, collector: Collector) -> None:
    collector.script = [Response('{"text":"Incorrect index","code":7,"invalid-event-number":0}', status=400)]
    r = sink_for(httpserver, index="nope").send([make_event(1), make_event(2)])
    assert [i.outcome for i in r.items] == [Outcome.BLOCKED] * 2
    assert r.items[0].reason == "hec:incorrect_index"


def test_400_invalid_event_number_dead_letters_only_that_event(httpserver: HTTPServer, collector: Collector) -> None:
    def bad_third(envs: list[dict[str, Any]]) -> Response:
        return Response('{"text":"Invalid data format","code":6,"invalid-event-number":2}', status=400)

    collector.script = [bad_third]
    events = [make_event(i) for i in range(5)]
    r = sink_for(httpserver).send(events)
    assert [i.outcome for i in r.items] == [Outcome.ACKED, Outcome.ACKED, Outcome.REJECTED, Outcome.ACKED,
                                             Outcome.ACKED]
    assert r.items[2].reason == "hec:400:code:6"
    assert collector.requests == 2
    assert [e["event"]["event"]["id"] for e in collector.envelopes] == [
        "ev00000000", "ev00000001", "ev00000003", "ev00000004"]


def test_400_without_event_number_bisects(httpserver: HTTPServer, collector: Collector) -> None:
    poison = "ev00000005"

    def reject_if_poison(envs: list[dict[str, Any]]) -> Response:
        if any(e["event"]["event"]["id"] == poison for e in envs):
            return Response('{"text":"Invalid data format","code":6}', status=400)
        collector.envelopes.extend(envs)
        return Response('{"text":"Success","code":0}', status=200)

    collector.script = [reject_if_poison] * 20
    events = [make_event(i) for i in range(8)]
    r = sink_for(httpserver).send(events)
    outcomes = [i.outcome for i in r.items]
    assert outcomes[5] is Outcome.REJECTED
    assert outcomes.count(Outcome.ACKED) == 7
    assert sorted(e["event"]["event"]["id"] for e in collector.envelopes) == [
        f"ev{i:08d}" for i in range(8) if i != 5]
    assert collector.requests <= 1 + 2 * 3  # 2·log2(8) extra requests at most


def test_malformed_event_is_rejected_without_a_request(httpserver: HTTPServer, collector: Collector) -> None:
    r = sink_for(httpserver).send([b"\xff\xfe", make_event(1)])
    assert [i.outcome for i in r.items] == [Outcome.REJECTED, Outcome.ACKED]
    assert collector.requests == 1 and len(collector.envelopes) == 1


def test_unreachable_collector_is_retryable(httpserver: HTTPServer) -> None:
    url = httpserver.url_for("/")
    httpserver.stop()
    r = SplunkHecSink(name="s", url=url, token=TOKEN, timeout=2).send([make_event(1)])
    assert r.items[0].outcome is Outcome.RETRY and r.items[0].reason == "connection_refused"
    httpserver.start()


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1971, 1, 1), max_value=dt.datetime(2200, 1, 1)))
def test_epoch_seconds_matches_calendar(moment: dt.datetime) -> None:
    text = moment.isoformat(timespec="microseconds") + "Z"
    got = epoch_seconds(text)
    assert got is not None
    whole, frac = got.split(".")
    assert len(frac) == 3
    expected_ms = calendar.timegm(moment.timetuple()) * 1000 + moment.microsecond // 1000
    assert int(whole) * 1000 + int(frac) == expected_ms


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_envelope_is_always_one_json_object(host: str, timestamp: str) -> None:
    sink = SplunkHecSink(name="s", url="http://127.0.0.1:9", token=TOKEN, index="i")
    raw = json.dumps({"@timestamp": timestamp, "host": {"name": host}, "event": {"id": "x"}}).encode()
    env = sink.envelope(raw)
    assert env is not None
    parsed = json.loads(env)
    assert parsed["event"] == json.loads(raw)
    assert parsed.get("host") == (host or None)
