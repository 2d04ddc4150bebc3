"""Durable outbox: enqueue semantics, states, back-off, blocking, capacity, isolation."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from telltale.sinks import ACKED, ItemResult, Outcome, SendResult
from telltale.sinks.outbox import (
    Deliverer,
    SinkPolicy,
    backoff,
    capacity_exceeded,
    enqueue,
    ensure_schema,
    queued_count,
    retry_blocked,
    status,
)


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.t += seconds


class FakeSink:
    """Answers with ``decide(event_id) -> ItemResult``; records what it was sent."""

    def __init__(self, name: str, decide: Callable[[str], ItemResult] = lambda _: ACKED) -> None:
        self.name = name
        self.decide = decide
        self.batches: list[list[str]] = []

    def send(self, events: Sequence[bytes]) -> SendResult:
        ids = [e.decode() for e in events]
        self.batches.append(ids)
        return SendResult(tuple(self.decide(i) for i in ids))

    @property
    def sent(self) -> list[str]:
        return [i for b in self.batches for i in b]


def ev(n: int, start: int = 0) -> list[tuple[str, bytes]]:
    return [(f"e{i}", f"e{i}".encode()) for i in range(start, start + n)]


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "state.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    ensure_schema(conn)
    conn.commit()
    conn.close()
    return path


def put(db: str, sinks: Sequence[str], events: list[tuple[str, bytes]], now: float | None = None) -> int:
    conn = sqlite3.connect(db)
    with conn:
        n = enqueue(conn, sinks, events, now=now)
    conn.close()
    return n


def states(db: str) -> dict[tuple[str, str], tuple[str, int, str | None]]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT sink, event_id, state, attempts, reason FROM outbox_item").fetchall()
    conn.close()
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


def test_enqueue_runs_inside_callers_transaction_and_never_commits(db: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("BEGIN")
    assert enqueue(conn, ["a", "b"], ev(3)) == 6
    assert conn.in_transaction
    conn.rollback()
    assert queued_count(conn) == 0
    conn.execute("BEGIN")
    enqueue(conn, ["a", "b"], ev(3))
    conn.commit()
    assert queued_count(conn) == 6
    conn.close()


def test_enqueue_dedups_by_sink_and_event_id(db: str) -> None:
    assert put(db, ["a"], ev(3)) == 3
    assert put(db, ["a"], ev(3)) == 0
    assert put(db, ["a", "b"], ev(4)) == 5  # b gets all four, a only e3
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM outbox_event").fetchone()[0] == 4  # bodies shared
    conn.close()


def test_acked_items_are_kept_for_dedup_then_forgotten(db: str) -> None:
    clock = Clock()
    sink = FakeSink("a")
    put(db, ["a"], ev(2), now=clock.t)
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, ack_retention=3600) as d:
        rep = d.run_once()
        assert rep.sinks["a"].acked == 2
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT count(*) FROM outbox_event").fetchone()[0] == 0  # bodies dropped at ack
        conn.close()
        assert put(db, ["a"], ev(2)) == 0  # replay: no second delivery
        clock.t += 3601
        d.run_once()
    assert states(db) == {}
    assert put(db, ["a"], ev(2)) == 2


def test_CAPACITY_counts_queued_not_dead_or_acked(db: str) -> None:
    clock = Clock()
    put(db, ["a"], ev(4))
    conn = sqlite3.connect(db)
    assert not capacity_exceeded(conn, 5)
    put(db, ["a"], ev(1, start=4))
    assert capacity_exceeded(conn, 5)
    sink = FakeSink("a", lambda i: ItemResult(Outcome.REJECTED, "x") if i == "e0" else ACKED)
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, capacity=5) as d:
        rep = d.run_once()
    assert rep.queued == 0 and not rep.capacity_exceeded
    assert not capacity_exceeded(conn, 1)
    conn.close()


def test_report_flags_capacity_exceeded(db: str) -> None:
    clock = Clock()
    put(db, ["a"], ev(10))
    down = FakeSink("a", lambda _: ItemResult(Outcome.RETRY, "connection_refused"))
    with Deliverer(db, [down], clock=clock, sleep=clock.sleep, capacity=10) as d:
        rep = d.run_once()
    assert rep.queued == 10 and rep.capacity_exceeded


def test_backoff_is_exponential_full_jitter_and_capped() -> None:
    assert backoff(1, 1.0, 300, lambda: 1.0) == 1.0
    assert backoff(4, 1.0, 300, lambda: 1.0) == 8.0
    assert backoff(30, 1.0, 300, lambda: 1.0) == 300.0
    assert backoff(4, 1.0, 300, lambda: 0.25) == 2.0
    assert backoff(10_000, 2.0, 60, lambda: 0.5) == 30.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 200), st.floats(0.01, 10), st.floats(1, 3600), st.floats(0, 1))
def test_backoff_stays_within_bounds(attempt: int, initial: float, cap: float, r: float) -> None:
    wait = backoff(attempt, initial, max(cap, initial), lambda: r)
    assert 0 <= wait <= max(cap, initial)


def test_retry_timing_with_injected_clock(db: str) -> None:
    clock = Clock()
    calls: list[float] = []

    def decide(_: str) -> ItemResult:
        calls.append(clock.t)
        return ItemResult(Outcome.RETRY, "http:503") if len(calls) <= 3 else ACKED

    put(db, ["a"], ev(1), now=clock.t)
    pol = {"a": SinkPolicy(backoff_initial=2.0, backoff_max=5.0)}
    with Deliverer(db, [FakeSink("a", decide)], clock=clock, sleep=clock.sleep, rng=lambda: 1.0,
                   policies=pol) as d:
        d.run_once()
        assert states(db)[("a", "e0")] == ("retrying", 1, "http:503")
        clock.t += 1.9
        d.run_once()
        assert len(calls) == 1  # not due yet: 2 s after the first failure
        clock.t += 0.1
        d.run_once()
        assert len(calls) == 2
        clock.t += 3.99
        d.run_once()
        assert len(calls) == 2  # second wait is 4 s
        clock.t += 0.01
        d.run_once()
        assert len(calls) == 3
        clock.t += 5.0  # third wait is capped at 5 s, not 8
        d.run_once()
    assert len(calls) == 4
    assert [round(b - a, 6) for a, b in itertools.pairwise(calls)] == [2.0, 4.0, 5.0]
    assert states(db)[("a", "e0")][0] == "acked"


def test_retry_after_is_honoured(db: str) -> None:
    clock = Clock()
    put(db, ["a"], ev(1))
    answers = iter([ItemResult(Outcome.RETRY, "http:429", retry_after=30.0), ACKED])
    sink = FakeSink("a", lambda _: next(answers))
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, rng=lambda: 0.1) as d:
        d.run_once()
        clock.t += 29
        d.run_once()
        assert len(sink.batches) == 1
        clock.t += 1
        d.run_once()
    assert len(sink.batches) == 2


def test_sink_level_backoff_spares_new_items_while_sink_is_down(db: str) -> None:
    clock = Clock()
    down = FakeSink("a", lambda _: ItemResult(Outcome.RETRY, "connection_refused"))
    put(db, ["a"], ev(1))
    with Deliverer(db, [down], clock=clock, sleep=clock.sleep, rng=lambda: 1.0,
                   policies={"a": SinkPolicy(batch_size=1)}) as d:
        d.run_once()
        put(db, ["a"], ev(5, start=1))
        d.run_once()
        assert len(down.batches) == 1  # backing off: new items wait too
        clock.t += 1.0
        d.run_once()
    assert len(down.batches) == 2  # one probe batch per due time, not one per item


def test_blocked_sink_stops_until_retry_blocked_while_others_deliver(db: str) -> None:
    clock = Clock()
    auth = {"ok": False}
    splunk = FakeSink("splunk", lambda _: ACKED if auth["ok"] else ItemResult(Outcome.BLOCKED, "http:401"))
    es = FakeSink("es")
    put(db, ["splunk", "es"], ev(3))
    pol = {"splunk": SinkPolicy(batch_size=1)}
    with Deliverer(db, [splunk, es], clock=clock, sleep=clock.sleep, policies=pol) as d:
        rep = d.run_once()
        assert rep.sinks["splunk"].blocked_reason == "http:401"
        assert [r.sink for r in rep.failures] == ["splunk"]
        assert rep.sinks["es"].acked == 3
        assert len(splunk.batches) == 1
        put(db, ["splunk", "es"], ev(2, start=3))
        clock.t += 10_000
        rep = d.run_once()
        assert len(splunk.batches) == 1  # blocked: not even tried
        assert rep.sinks["es"].acked == 2
        st_rows = {s.sink: s for s in status(db)}
        assert st_rows["splunk"].blocked == 5 and st_rows["splunk"].blocked_reason == "http:401"
        auth["ok"] = True
        assert retry_blocked(db, "splunk") == 5
        rep = d.run_once()
    assert rep.sinks["splunk"].acked == 5
    assert sorted(splunk.sent) == sorted(["e0", "e0", "e1", "e2", "e3", "e4"])  # e0 once refused, then sent


def test_rejected_items_are_dead_with_bounded_reason(db: str) -> None:
    clock = Clock()
    long_reason = "es:400:" + "x" * 500
    sink = FakeSink("a", lambda i: ItemResult(Outcome.REJECTED, long_reason) if i == "e1" else ACKED)
    put(db, ["a"], ev(3))
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep) as d:
        rep = d.run_once()
    assert rep.sinks["a"].rejected == 1 and rep.sinks["a"].acked == 2
    state, _, reason = states(db)[("a", "e1")]
    assert state == "dead" and reason is not None and len(reason) <= 120
    assert status(db)[0].dead == 1


def test_max_retries_dead_letters(db: str) -> None:
    clock = Clock()
    sink = FakeSink("a", lambda _: ItemResult(Outcome.RETRY, "http:500"))
    put(db, ["a"], ev(1))
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, policies={"a": SinkPolicy(max_retries=2)}) as d:
        for _ in range(3):
            d.run_once()
            clock.t += 1000
    assert states(db)[("a", "e0")] == ("dead", 2, "retries_exhausted:http:500")
    assert len(sink.batches) == 3


def test_dead_letters_are_bounded_per_sink(db: str) -> None:
    clock = Clock()
    sink = FakeSink("a", lambda _: ItemResult(Outcome.REJECTED, "bad"))
    put(db, ["a"], ev(10))
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, dead_limit=4) as d:
        d.run_once()
        d.run_once()
    assert sum(1 for s in states(db).values() if s[0] == "dead") == 4
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM outbox_event").fetchone()[0] == 4
    conn.close()


def test_a_raising_sink_does_not_stop_the_others(db: str) -> None:
    class Broken:
        name = "broken"

        def send(self, events: Sequence[bytes]) -> SendResult:
            raise RuntimeError("bug")

    clock = Clock()
    good = FakeSink("good")
    put(db, ["broken", "good"], ev(2))
    with Deliverer(db, [Broken(), good], clock=clock, sleep=clock.sleep) as d:
        rep = d.run_once()
    assert rep.sinks["good"].acked == 2
    assert rep.sinks["broken"].errors == {"sink_exception:RuntimeError": 2}
    assert [r.sink for r in rep.failures] == ["broken"]
    assert states(db)[("broken", "e0")][0] == "retrying"


def test_no_transaction_is_held_while_sending_and_leases_prevent_double_send(db: str) -> None:
    """A second deliverer, running *during* the first one's send, neither waits nor resends."""
    clock = Clock()
    other_sink = FakeSink("a")
    other = Deliverer(db, [other_sink], clock=clock, sleep=clock.sleep, busy_timeout=0.5)
    nested: list[int] = []

    def decide(_: str) -> ItemResult:
        if not nested:
            nested.append(other.run_once().sinks["a"].attempted)
        return ACKED

    put(db, ["a"], ev(3))
    with Deliverer(db, [FakeSink("a", decide)], clock=clock, sleep=clock.sleep) as d:
        d.run_once()
    other.close()
    assert nested == [0]
    assert other_sink.sent == []


def test_expired_lease_makes_items_due_again(db: str) -> None:
    clock = Clock()
    put(db, ["a"], ev(1))
    first = Deliverer(db, [FakeSink("a")], clock=clock, sleep=clock.sleep, lease=60)
    first.conn.execute("BEGIN IMMEDIATE")
    assert len(first._lease_batch(first.conn, "a", 10)) == 1  # leased, then the process "dies"
    first.conn.execute("COMMIT")
    first.close()
    sink = FakeSink("a")
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, lease=60) as d:
        d.run_once()
        assert sink.sent == []
        clock.t += 60
        d.run_once()
    assert sink.sent == ["e0"]


def test_clock_stepped_back_does_not_strand_items(db: str) -> None:
    clock = Clock()
    put(db, ["a"], ev(1))
    sink = FakeSink("a", lambda _: ItemResult(Outcome.RETRY, "t") if not sink.batches[1:] else ACKED)
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, rng=lambda: 1.0) as d:
        d.run_once()
        clock.t -= 86_400 * 365  # the wall clock jumps a year back
        d.run_once()
    assert len(sink.batches) == 2


def test_run_until_idle_sleeps_to_the_next_due_time(db: str) -> None:
    clock = Clock()
    fails = {"n": 2}

    def decide(_: str) -> ItemResult:
        if fails["n"] > 0:
            return ItemResult(Outcome.RETRY, "http:503")
        return ACKED

    class Flaky(FakeSink):
        def send(self, events: Sequence[bytes]) -> SendResult:
            out = super().send(events)
            fails["n"] -= 1
            return out

    sink = Flaky("a", decide)
    put(db, ["a"], ev(4))
    with Deliverer(db, [sink], clock=clock, sleep=clock.sleep, rng=lambda: 1.0) as d:
        rep = d.run_until_idle(deadline=clock.t + 60)
    assert rep.sinks["a"].acked == 4 and rep.sinks["a"].retried == 8
    assert clock.sleeps == [1.0, 2.0]


def test_run_until_idle_respects_deadline_and_ignores_blocked(db: str) -> None:
    clock = Clock()
    down = FakeSink("down", lambda _: ItemResult(Outcome.RETRY, "timeout"))
    blocked = FakeSink("blocked", lambda _: ItemResult(Outcome.BLOCKED, "http:403"))
    put(db, ["down", "blocked"], ev(2))
    start = clock.t
    with Deliverer(db, [down, blocked], clock=clock, sleep=clock.sleep, rng=lambda: 1.0) as d:
        d.run_until_idle(deadline=start + 20)
    assert clock.t <= start + 20
    assert len(blocked.batches) == 1
    assert 2 <= len(down.batches) <= 6


def test_status_and_retry_blocked_do_not_create_a_database(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.sqlite")
    with pytest.raises(FileNotFoundError):
        status(missing)
    with pytest.raises(FileNotFoundError):
        retry_blocked(missing, "a")
    assert not (tmp_path / "nope.sqlite").exists()


def test_status_reports_each_state(db: str) -> None:
    clock = Clock()
    decide = {"e0": ItemResult(Outcome.REJECTED, "bad"), "e1": ItemResult(Outcome.RETRY, "timeout")}
    put(db, ["a"], ev(4), now=clock.t - 50)
    with Deliverer(db, [FakeSink("a", lambda i: decide.get(i, ACKED))], clock=clock, sleep=clock.sleep) as d:
        d.run_once()
    put(db, ["a"], ev(1, start=4), now=clock.t)
    (row,) = status(db, ["a", "unused"])[:1]
    assert (row.sink, row.pending, row.retrying, row.dead, row.acked_retained, row.delivered_total) == (
        "a", 1, 1, 1, 2, 2)
    assert row.oldest_queued_at == clock.t - 50
    assert row.last_error == "timeout"
    assert [s.sink for s in status(db, ["a", "unused"])] == ["a", "unused"]
