"""Elasticsearch ``_bulk`` sink against a protocol-faithful loopback peer (pytest-httpserver)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from sink_receivers import BulkStore, make_event
from telltale.cli.export import template_text
from telltale.cli.main import main
from telltale.sinks import Outcome
from telltale.sinks.elastic import ElasticSink

API_KEY = base64.b64encode(b"id:FAKEFAKEFAKE").decode()


class BulkPeer:
    """Checks headers and NDJSON framing, then answers with ``BulkStore`` semantics."""

    def __init__(self, expected_auth: str) -> None:
        self.store = BulkStore()
        self.expected_auth = expected_auth
        self.script: list[Response] = []
        self.bodies: list[bytes] = []

    def __call__(self, request: Request) -> Response:
        if request.headers.get("Authorization") != self.expected_auth:
            return Response('{"error":{"type":"security_exception"},"status":401}', status=401)
        assert request.headers["Content-Type"] == "application/x-ndjson"
        body = request.get_data()
        self.bodies.append(body)
        if self.script:
            return self.script.pop(0)
        status, headers, out = self.store.handle(request.path, dict(request.headers), body)
        return Response(out, status=status, headers=headers)


@pytest.fixture
def peer(httpserver: HTTPServer) -> BulkPeer:
    p = BulkPeer(f"ApiKey {API_KEY}")
    httpserver.expect_request("/_bulk", method="POST").respond_with_handler(p)
    return p


def sink_for(httpserver: HTTPServer, **kw: Any) -> ElasticSink:
    return ElasticSink(name="es", url=httpserver.url_for("/"), api_key=API_KEY, **kw)


def test_bulk_create_with_event_id(httpserver: HTTPServer, peer: BulkPeer) -> None:
    events = [make_event(i) for i in range(3)]
    r = sink_for(httpserver, target="telltale-events").send(events)
    assert [i.outcome for i in r.items] == [Outcome.ACKED] * 3
    lines = peer.bodies[0].split(b"\n")
    assert len(lines) == 7 and lines[-1] == b""
    assert json.loads(lines[0]) == {"create": {"_index": "telltale-events", "_id": "ev00000000"}}
    assert lines[1] == events[0]  # document bytes verbatim
    assert set(peer.store.docs) == {"ev00000000", "ev00000001", "ev00000002"}


def test_redelivery_is_idempotent_409_counts_as_acked(httpserver: HTTPServer, peer: BulkPeer) -> None:
    sink = sink_for(httpserver)
    events = [make_event(i) for i in range(4)]
    sink.send(events[:2])
    r = sink.send(events)
    assert [i.outcome for i in r.items] == [Outcome.ACKED] * 4
    assert len(peer.store.docs) == 4


def test_per_item_errors(httpserver: HTTPServer, peer: BulkPeer) -> None:
    peer.store.item_errors = {
        "ev00000001": (400, "document_parsing_exception"),
        "ev00000002": (429, "es_rejected_execution_exception"),
        "ev00000003": (503, "unavailable_shards_exception"),
    }
    r = sink_for(httpserver).send([make_event(i) for i in range(5)])
    assert [i.outcome for i in r.items] == [
        Outcome.ACKED, Outcome.REJECTED, Outcome.RETRY, Outcome.RETRY, Outcome.ACKED]
    assert r.items[1].reason == "es:400:document_parsing_exception"
    assert "ghp_FAKE" not in "".join(i.reason for i in r.items)  # server text never kept


def test_per_item_403_blocks(httpserver: HTTPServer, peer: BulkPeer) -> None:
    peer.store.item_errors = {"ev00000000": (403, "security_exception")}
    r = sink_for(httpserver).send([make_event(0)])
    assert r.items[0].outcome is Outcome.BLOCKED


@pytest.mark.parametrize(("status", "outcome"), [(429, Outcome.RETRY), (503, Outcome.RETRY),
                                                 (500, Outcome.RETRY), (401, Outcome.BLOCKED),
                                                 (403, Outcome.BLOCKED), (404, Outcome.BLOCKED)])
def test_whole_request_statuses(httpserver: HTTPServer, peer: BulkPeer, status: int, outcome: Outcome) -> None:
    peer.script = [Response("{}", status=status, headers={"Retry-After": "3"})]
    r = sink_for(httpserver).send([make_event(1), make_event(2)])
    assert [i.outcome for i in r.items] == [outcome] * 2
    if outcome is Outcome.RETRY:
        assert r.items[0].retry_after == 3.0


def test_413_bisects_the_batch(httpserver: HTTPServer, peer: BulkPeer) -> None:
    peer.script = [Response("", status=413)]
    r = sink_for(httpserver).send([make_event(i) for i in range(4)])
    assert [i.outcome for i in r.items] == [Outcome.ACKED] * 4
    assert len(peer.bodies) == 3


def test_garbled_bulk_answer_is_retried(httpserver: HTTPServer, peer: BulkPeer) -> None:
    peer.script = [Response("not json", status=200)]
    r = sink_for(httpserver).send([make_event(1)])
    assert r.items[0].outcome is Outcome.RETRY and r.items[0].reason == "es:bad_bulk_response"


def test_events_without_id_or_with_newlines_are_rejected(httpserver: HTTPServer, peer: BulkPeer) -> None:
    r = sink_for(httpserver).send([b'{"event":{}}', b'{"event":{"id":"a"}}\n{}', make_event(1)])
    assert [i.reason for i in r.items[:2]] == ["missing_event_id", "malformed_event"]
    assert r.items[2].outcome is Outcome.ACKED


def test_basic_auth(httpserver: HTTPServer) -> None:
    peer = BulkPeer("Basic " + base64.b64encode(b"elastic:FAKEPASS").decode())
    httpserver.expect_request("/_bulk", method="POST").respond_with_handler(peer)
    sink = ElasticSink(name="es", url=httpserver.url_for("/"), username="elastic", password="FAKEPASS")
    assert sink.send([make_event(1)]).items[0].outcome is Outcome.ACKED


def test_template_is_composable_data_stream_template() -> None:
    tmpl = json.loads(template_text("elastic"))
    assert tmpl["index_patterns"] == ["telltale-*"]
    assert tmpl["data_stream"] == {}
    props = tmpl["template"]["mappings"]["properties"]
    assert props["@timestamp"]["type"] == "date"
    assert props["message"]["type"] in ("text", "match_only_text")
    event = props["event"]["properties"]
    for name in ("id", "kind", "dataset", "action", "category", "type", "outcome", "module"):
        assert event[name]["type"] == "keyword", name
    assert props["event"]["properties"]["severity"]["type"] == "long"
    gen_ai = props["gen_ai"]["properties"]
    assert gen_ai["tool"]["properties"]["name"]["type"] == "keyword"
    assert gen_ai["usage"]["properties"]["input_tokens"]["type"] == "long"
    assert gen_ai["usage"]["properties"]["cache_read"]["properties"]["input_tokens"]["type"] == "long"
    assert props["telltale"]["properties"]["schema_version"]["type"] == "keyword"


def test_template_accepts_every_field_of_a_sample_event() -> None:
    """Each leaf of a sample event either has a mapping or falls to a dynamic template."""
    props = json.loads(template_text("elastic"))["template"]["mappings"]["properties"]
    doc = json.loads(make_event(1, level="info"))

    def walk(obj: dict[str, Any], mapping: dict[str, Any], path: str) -> None:
        for key, value in obj.items():
            m = mapping.get(key)
            if m is None:
                continue  # dynamic
            if isinstance(value, dict):
                assert "properties" in m or m.get("type") == "object", path + key
                walk(value, m.get("properties", {}), path + key + ".")
            else:
                kind = m["type"]
                if isinstance(value, bool):
                    assert kind == "boolean", path + key
                elif isinstance(value, int):
                    assert kind in ("long", "float", "keyword"), path + key
                elif isinstance(value, str) and kind in ("long", "float"):
                    raise AssertionError(path + key)

    walk(doc, props, "")


def test_export_template_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export-template", "elastic", "--index-pattern", "sec-telltale-*"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["index_patterns"] == ["sec-telltale-*"]
