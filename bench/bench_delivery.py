"""Delivery throughput: outbox -> sink -> loopback receiver, events per second.

    .venv/bin/python bench/bench_delivery.py [--events 20000] [--batch 500]

For each receiver kind (OTLP http/protobuf, OTLP gRPC, Splunk HEC, Elasticsearch _bulk)
it enqueues N synthetic events into a fresh outbox (one SQLite file in WAL mode), then
times ``Deliverer.run_until_idle`` until every event is acknowledged, and checks the
receiver got each event id exactly once. The receivers run in this process on 127.0.0.1
and parse every request (protobuf / NDJSON / concatenated JSON), so they share the CPU
with the sender: the figures are a floor for a remote receiver. Also reports enqueue rate
and the cost of ``capacity_exceeded`` on a large queue.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sink_receivers import (
    BulkStore,
    GrpcLogsReceiver,
    LoopbackReceiver,
    OtlpStore,
    event_id_of,
    make_event,
    otlp_http_receiver,
)
from telltale.sinks.elastic import ElasticSink
from telltale.sinks.otlp import OtlpSink
from telltale.sinks.outbox import Deliverer, SinkPolicy, capacity_exceeded, enqueue, ensure_schema
from telltale.sinks.splunk_hec import SplunkHecSink


def fresh_db(tmp: Path, name: str) -> str:
    path = str(tmp / f"{name}.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    ensure_schema(conn)
    conn.commit()
    conn.close()
    return path


def fill(db: str, sink: str, events: list[bytes]) -> float:
    conn = sqlite3.connect(db)
    start = time.perf_counter()
    with conn:
        enqueue(conn, [sink], [(event_id_of(e), e) for e in events])
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


def run(name: str, db: str, sink: Any, batch: int, n: int, received: Callable[[], list[str]]) -> dict[str, Any]:
    with Deliverer(db, [sink], policies={sink.name: SinkPolicy(batch_size=batch)}) as d:
        start = time.perf_counter()
        report = d.run_until_idle(deadline=time.time() + 600)
        elapsed = time.perf_counter() - start
    ids = received()
    assert report.sinks[sink.name].acked == n, report
    assert len(ids) == n and len(set(ids)) == n, (len(ids), len(set(ids)))
    return {"receiver": name, "events": n, "seconds": round(elapsed, 3), "events_per_s": round(n / elapsed),
            "requests": report.sinks[sink.name].requests}


def hec_receiver(store: list[str]) -> LoopbackReceiver:
    decoder = json.JSONDecoder()

    def handle(path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        if headers.get("Authorization") != "Splunk FAKE-token":
            return 401, {}, b'{"text":"Invalid authorization","code":3}'
        text, pos = body.decode(), 0
        while pos < len(text):
            obj, pos = decoder.raw_decode(text, pos)
            store.append(obj["event"]["event"]["id"])
        return 200, {"Content-Type": "application/json"}, b'{"text":"Success","code":0}'

    return LoopbackReceiver(handle)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--capacity-rows", type=int, default=200_000)
    args = ap.parse_args()
    n = args.events
    events = [make_event(i) for i in range(n)]
    size = sum(len(e) for e in events) / n
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)

        db = fresh_db(tmp, "otlp_http")
        enq = fill(db, "otel", events)
        store = OtlpStore()
        with otlp_http_receiver(store) as rx:
            results.append(run("otlp http/protobuf", db, OtlpSink(name="otel", endpoint=rx.url), args.batch, n,
                               store.event_ids))

        db = fresh_db(tmp, "otlp_grpc")
        fill(db, "otel", events)
        gstore = OtlpStore()
        with GrpcLogsReceiver(gstore) as grx:
            sink = OtlpSink(name="otel", endpoint=f"127.0.0.1:{grx.port}", protocol="grpc")
            results.append(run("otlp grpc", db, sink, args.batch, n, gstore.event_ids))

        db = fresh_db(tmp, "hec")
        fill(db, "splunk", events)
        hec_ids: list[str] = []
        with hec_receiver(hec_ids) as hrx:
            sink = SplunkHecSink(name="splunk", url=hrx.url, token="FAKE-token")
            results.append(run("splunk hec", db, sink, args.batch, n, lambda: hec_ids))

        db = fresh_db(tmp, "es")
        fill(db, "es", events)
        bulk = BulkStore()
        with LoopbackReceiver(bulk.handle) as erx:
            results.append(run("elasticsearch _bulk", db, ElasticSink(name="es", url=erx.url), args.batch, n,
                               lambda: list(bulk.docs)))

        db = fresh_db(tmp, "capacity")
        rows = args.capacity_rows
        big = [(f"c{i:09d}", b'{"event":{"id":"c"}}') for i in range(rows)]
        conn = sqlite3.connect(db)
        start = time.perf_counter()
        with conn:
            enqueue(conn, ["a"], big)
        fill_s = time.perf_counter() - start
        start = time.perf_counter()
        exceeded = capacity_exceeded(conn, rows)
        check_ms = (time.perf_counter() - start) * 1000
        conn.close()

    print(f"events: {n}, mean event size {size:.0f} bytes, batch {args.batch}")
    print(f"enqueue: {n / enq:,.0f} events/s (one sink, one transaction)")
    for r in results:
        print(f"{r['receiver']:<22} {r['events_per_s']:>8,} events/s  ({r['seconds']} s, {r['requests']} requests)")
    print(f"capacity_exceeded over {rows:,} queued rows: {check_ms:.1f} ms (exceeded={exceeded}); "
          f"filling them took {fill_s:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
