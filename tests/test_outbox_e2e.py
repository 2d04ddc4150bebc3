"""End to end: outbox -> real sinks -> loopback receivers that go away and come back."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from sink_receivers import BulkStore, LoopbackReceiver, OtlpStore, event_id_of, make_event, otlp_http_receiver
from telltale.sinks.elastic import ElasticSink
from telltale.sinks.otlp import OtlpSink
from telltale.sinks.outbox import Deliverer, SinkPolicy, enqueue, ensure_schema, status


class Clock:
    def __init__(self) -> None:
        self.t = 2_000_000.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def _enqueue(db: str, sinks: list[str], start: int, count: int) -> list[str]:
    events = [make_event(i) for i in range(start, start + count)]
    conn = sqlite3.connect(db)
    with conn:
        ensure_schema(conn)
        enqueue(conn, sinks, [(event_id_of(e), e) for e in events])
    conn.close()
    return [event_id_of(e) for e in events]


def test_receivers_stopped_mid_stream_then_restarted_get_every_event_exactly_once(tmp_path: Path) -> None:
    db = str(tmp_path / "state.sqlite")
    otlp_store, bulk = OtlpStore(), BulkStore()
    otlp_rx = otlp_http_receiver(otlp_store).start()
    es_rx = LoopbackReceiver(bulk.handle).start()
    otlp_rx.stop_after = 2  # the receivers go away after their second request
    es_rx.stop_after = 3
    expected = _enqueue(db, ["otel", "es"], 0, 300)
    clock = Clock()
    sinks = [OtlpSink(name="otel", endpoint=otlp_rx.url, timeout=5),
             ElasticSink(name="es", url=es_rx.url, timeout=5)]
    policies = {"otel": SinkPolicy(batch_size=40), "es": SinkPolicy(batch_size=40)}
    with Deliverer(db, sinks, clock=clock, sleep=clock.sleep, policies=policies) as d:
        first = d.run_once()
        assert first.sinks["otel"].acked == 80 and first.sinks["es"].acked == 120
        assert first.sinks["otel"].errors == {"connection_refused": 40}
        assert {r.sink for r in first.failures} == set()  # some got through: degraded, not failed
        second = d.run_once()  # still down (and backing off): nothing more
        assert second.sinks["otel"].acked == 0

        expected += _enqueue(db, ["otel", "es"], 300, 200)  # the scanner keeps producing
        by_sink = {s.sink: s for s in status(db)}
        assert by_sink["otel"].pending + by_sink["otel"].retrying == 420
        assert by_sink["es"].pending + by_sink["es"].retrying == 380

        otlp_rx.start()  # same ports
        es_rx.start()
        report = d.run_until_idle(deadline=clock.t + 3600)
    otlp_rx.stop()
    es_rx.stop()

    assert report.sinks["otel"].acked == 420 and report.sinks["es"].acked == 380
    otlp_ids = Counter(otlp_store.event_ids())
    assert set(otlp_ids) == set(expected) and max(otlp_ids.values()) == 1
    assert set(bulk.docs) == set(expected)
    # Elasticsearch never saw a create for an id twice either.
    creates = Counter(
        line.split(b'"_id":"')[1].split(b'"')[0]
        for _, _, body in es_rx.requests
        for line in body.split(b"\n")
        if line.startswith(b'{"create"')
    )
    assert len(creates) == 500 and max(creates.values()) == 1
    after = {s.sink: s for s in status(db)}
    assert all(after[n].pending == after[n].retrying == after[n].dead == 0 for n in ("otel", "es"))
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM outbox_event").fetchone()[0] == 0
    conn.close()


def test_lost_answer_redelivery_is_deduplicated_by_event_id_in_elasticsearch(tmp_path: Path) -> None:
    """The receiver stores a batch but the answer is lost (a 503 after storing): the retry
    gets 409s, which count as delivered, so the index holds each event once."""
    db = str(tmp_path / "state.sqlite")
    bulk = BulkStore()
    stored_then_failed = {"done": False}

    def handle(path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        out = bulk.handle(path, headers, body)
        if not stored_then_failed["done"]:
            stored_then_failed["done"] = True
            return 503, {}, b"{}"
        return out

    rx = LoopbackReceiver(handle).start()
    expected = _enqueue(db, ["es"], 0, 50)
    clock = Clock()
    with Deliverer(db, [ElasticSink(name="es", url=rx.url)], clock=clock, sleep=clock.sleep) as d:
        report = d.run_until_idle(deadline=clock.t + 600)
    rx.stop()
    assert report.sinks["es"].acked == 50 and report.sinks["es"].retried == 50
    assert set(bulk.docs) == set(expected)
    assert len(rx.requests) == 2
