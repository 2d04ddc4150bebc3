"""Durable outbox: at-least-once delivery of events to remote sinks.

The outbox lives in the scanner's state SQLite database (the pipeline owns that file, its
WAL mode and its connection). ``enqueue`` runs inside the pipeline's own transaction, the
one that also commits cursors, so an event is queued exactly when its cursor advances.
A ``Deliverer`` then drains the queue on its own connection, in short transactions, and
never holds a transaction open while talking to a receiver.

Tables (names prefixed ``outbox_``):

* ``outbox_event(event_id, body)``: one copy of each event's JSON, shared by all sinks;
* ``outbox_item(seq, sink, event_id, state, attempts, next_attempt_at, reason, ...)``:
  one row per (sink, event). ``state`` is ``pending`` (never tried), ``retrying``
  (``attempts`` > 0, waits for ``next_attempt_at``), ``blocked`` (the sink refused our
  credentials or endpoint; waits for ``telltale delivery retry-blocked``), ``dead``
  (rejected for good, ``reason`` bounded and content-free) or ``acked`` (delivered; the
  row stays ``ack_retention`` seconds without its body so a re-enqueue is a no-op);
* ``outbox_sink(sink, ...)``: per-sink block flag, consecutive failures and sink-level
  back-off, counters.

Times in the database are wall-clock seconds (``time.time``): they must mean the same
after a restart, which a monotonic clock does not promise. A value further in the future
than the back-off cap (a clock stepped back) is treated as due.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from telltale import faults
from telltale.sinks import ItemResult, Outcome, RemoteSink, SendResult, bounded_reason
from telltale.state import note_sqlite_open

#: Queued states count against the capacity; dead letters have their own bound.
QUEUED_STATES = ("pending", "retrying", "blocked")
DEFAULT_CAPACITY = 1_000_000

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox_event (
    event_id TEXT PRIMARY KEY,
    body     BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox_item (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    sink            TEXT NOT NULL,
    event_id        TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at REAL NOT NULL DEFAULT 0,
    reason          TEXT,
    enqueued_at     REAL NOT NULL,
    updated_at      REAL NOT NULL,
    UNIQUE (sink, event_id)
);
CREATE INDEX IF NOT EXISTS outbox_item_due ON outbox_item (sink, next_attempt_at, seq)
    WHERE state IN ('pending', 'retrying');
CREATE INDEX IF NOT EXISTS outbox_item_state ON outbox_item (state, sink, updated_at);
CREATE INDEX IF NOT EXISTS outbox_item_event ON outbox_item (event_id);
CREATE TABLE IF NOT EXISTS outbox_sink (
    sink           TEXT PRIMARY KEY,
    blocked_at     REAL,
    blocked_reason TEXT,
    failures       INTEGER NOT NULL DEFAULT 0,
    retry_at       REAL NOT NULL DEFAULT 0,
    last_error     TEXT,
    last_error_at  REAL,
    delivered      INTEGER NOT NULL DEFAULT 0,
    last_ack_at    REAL
);
"""


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create the outbox tables if missing (idempotent; safe inside the owner's migration)."""
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def enqueue(
    conn: sqlite3.Connection,
    sink_names: Sequence[str],
    events: Sequence[tuple[str, bytes]],
    *,
    now: float | None = None,
) -> int:
    """Queue ``events`` ((event_id, json bytes)) for each sink; return rows added.

    Runs inside the caller's open transaction and never commits. A (sink, event_id) that
    is already queued, dead or recently acknowledged is left alone, so replaying a scan
    does not deliver twice. Items for a blocked sink are queued as ``blocked``.
    """
    faults.hit("enqueue")
    if not sink_names or not events:
        return 0
    stamp = time.time() if now is None else now
    blocked = {
        row[0]
        for row in conn.execute("SELECT sink FROM outbox_sink WHERE blocked_at IS NOT NULL")
    }
    states = [(name, "blocked" if name in blocked else "pending") for name in sink_names]
    added = 0
    insert_item = (
        "INSERT OR IGNORE INTO outbox_item (sink, event_id, state, enqueued_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?)"
    )
    for event_id, body in events:
        new = 0
        for name, state in states:
            new += conn.execute(insert_item, (name, event_id, state, stamp, stamp)).rowcount
        if new:
            conn.execute("INSERT OR IGNORE INTO outbox_event (event_id, body) VALUES (?, ?)", (event_id, body))
            added += new
    return added


def _drop_bodies(conn: sqlite3.Connection, event_ids: Iterable[tuple[str]]) -> None:
    """Delete event bodies no queued or dead item needs any more."""
    conn.executemany(
        "DELETE FROM outbox_event WHERE event_id = ? AND NOT EXISTS (SELECT 1 FROM outbox_item i "
        "WHERE i.event_id = outbox_event.event_id AND i.state != 'acked')",
        event_ids,
    )


def queued_count(conn: sqlite3.Connection) -> int:
    row = conn.execute(
        "SELECT count(*) FROM outbox_item WHERE state IN ('pending', 'retrying', 'blocked')"
    ).fetchone()
    return int(row[0])


def capacity_exceeded(conn: sqlite3.Connection, capacity: int = DEFAULT_CAPACITY) -> bool:
    """True when the queued (undelivered, not dead) items have reached ``capacity``.

    The pipeline checks this before enqueueing; when it is true it does not enqueue for
    the remote sinks (the events are still in the local JSONL file) and raises an
    operational alert, so a long receiver outage cannot fill the disk.
    """
    return queued_count(conn) >= capacity


@dataclass(frozen=True)
class SinkPolicy:
    """How one sink is driven; from the outputs file's common fields."""

    batch_size: int = 500
    max_retries: int | None = None
    backoff_initial: float = 1.0
    backoff_max: float = 300.0


@dataclass
class SinkReport:
    """What one sink did in one run."""

    sink: str
    attempted: int = 0
    acked: int = 0
    retried: int = 0
    rejected: int = 0
    requests: int = 0
    blocked_reason: str | None = None
    errors: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """The sink needs attention: blocked, or nothing got through while something failed."""
        return self.blocked_reason is not None or (self.acked == 0 and (self.retried + self.rejected) > 0)


@dataclass
class DeliveryReport:
    sinks: dict[str, SinkReport] = field(default_factory=dict)
    queued: int = 0
    capacity_exceeded: bool = False

    def sink(self, name: str) -> SinkReport:
        rep = self.sinks.get(name)
        if rep is None:
            rep = self.sinks[name] = SinkReport(name)
        return rep

    @property
    def failures(self) -> list[SinkReport]:
        """Sinks the pipeline should raise a ``sink_delivery_failure`` alert about."""
        return [rep for rep in self.sinks.values() if rep.failed]

    @property
    def acked(self) -> int:
        return sum(rep.acked for rep in self.sinks.values())

    def merge(self, other: DeliveryReport) -> None:
        for name, rep in other.sinks.items():
            mine = self.sink(name)
            mine.attempted += rep.attempted
            mine.acked += rep.acked
            mine.retried += rep.retried
            mine.rejected += rep.rejected
            mine.requests += rep.requests
            mine.blocked_reason = rep.blocked_reason or mine.blocked_reason
            for key, n in rep.errors.items():
                mine.errors[key] = mine.errors.get(key, 0) + n
            mine.notes.extend(rep.notes)
        self.queued = other.queued
        self.capacity_exceeded = other.capacity_exceeded


@dataclass(frozen=True)
class SinkStatus:
    sink: str
    pending: int
    retrying: int
    blocked: int
    dead: int
    acked_retained: int
    delivered_total: int
    oldest_queued_at: float | None
    blocked_reason: str | None
    last_error: str | None
    retry_at: float | None


def backoff(attempt: int, initial: float, cap: float, rng: Callable[[], float]) -> float:
    """Full-jitter exponential back-off: uniform in [0, min(cap, initial·2^(attempt-1))]."""
    ceiling = min(cap, initial * (2.0 ** min(max(attempt - 1, 0), 62)))
    return rng() * ceiling


def connect(db_path: str, busy_timeout: float = 30.0) -> sqlite3.Connection:
    """Our own connection to the state database (autocommit; explicit short transactions)."""
    conn = sqlite3.connect(db_path, timeout=busy_timeout, isolation_level=None)
    note_sqlite_open(db_path)  # no raw open() of it from now on: it would drop SQLite's locks
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    return conn


class Deliverer:
    """Drains the outbox into the sinks; one failing sink never stops the others."""

    def __init__(
        self,
        db_path: str,
        sinks: Sequence[RemoteSink],
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        capacity: int = DEFAULT_CAPACITY,
        policies: Mapping[str, SinkPolicy] | None = None,
        rng: Callable[[], float] = random.random,
        busy_timeout: float = 30.0,
        lease: float = 120.0,
        ack_retention: float = 86_400.0,
        dead_limit: int = 10_000,
        max_batches_per_run: int = 1_000,
    ) -> None:
        names = [s.name for s in sinks]
        if len(set(names)) != len(names):
            raise ValueError("sink names must be unique")
        self.db_path = db_path
        self.sinks = list(sinks)
        self.clock = clock
        self.sleep = sleep
        self.capacity = capacity
        self.policies = dict(policies or {})
        self.rng = rng
        self.lease = lease
        self.ack_retention = ack_retention
        self.dead_limit = dead_limit
        self.max_batches_per_run = max_batches_per_run
        self.conn = connect(db_path, busy_timeout)
        self._write(ensure_schema)

    def close(self) -> None:
        self.conn.close()
        for sink in self.sinks:
            closer = getattr(sink, "close", None)
            if callable(closer):
                closer()

    def __enter__(self) -> Deliverer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------------

    def _write(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            out = fn(self.conn)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return out

    def policy(self, name: str) -> SinkPolicy:
        return self.policies.get(name, SinkPolicy())

    # -- one pass ---------------------------------------------------------------------

    def run_once(self) -> DeliveryReport:
        """Deliver everything that is due now, sink by sink, batch by batch.

        A sink stops for this pass at its first batch that did not fully succeed (it is
        probably down; its back-off decides when to try again), when it is blocked, or
        after ``max_batches_per_run`` batches.
        """
        report = DeliveryReport()
        self._write(self._housekeeping)
        for sink in self.sinks:
            rep = report.sink(sink.name)
            self._drain_sink(sink, rep)
        report.queued = queued_count(self.conn)
        report.capacity_exceeded = report.queued >= self.capacity
        return report

    def _sink_row(self, name: str) -> tuple[float | None, str | None, int, float]:
        row = self.conn.execute(
            "SELECT blocked_at, blocked_reason, failures, retry_at FROM outbox_sink WHERE sink = ?", (name,)
        ).fetchone()
        if row is None:
            return None, None, 0, 0.0
        return row[0], row[1], int(row[2]), float(row[3])

    def _drain_sink(self, sink: RemoteSink, rep: SinkReport) -> None:
        pol = self.policy(sink.name)
        blocked_at, blocked_reason, _, retry_at = self._sink_row(sink.name)
        if blocked_at is not None:
            rep.blocked_reason = blocked_reason
            return
        now = self.clock()
        if retry_at > now and retry_at - now <= pol.backoff_max + self.lease:
            return
        for _ in range(self.max_batches_per_run):
            batch = self._write(lambda c: self._lease_batch(c, sink.name, pol.batch_size))
            if not batch:
                return
            try:
                result = sink.send([b[3] for b in batch])
                if len(result.items) != len(batch):
                    raise ValueError("sink returned a result per event count mismatch")
            except Exception as exc:  # a sink bug must not stop the other sinks
                result = SendResult.uniform(
                    len(batch), ItemResult(Outcome.RETRY, bounded_reason("sink_exception", type(exc).__name__))
                )
            rep.requests += 1
            rep.attempted += len(batch)
            rep.notes.extend(result.notes)
            clean = self._write(partial(self._apply, sink=sink.name, pol=pol, batch=batch, result=result, rep=rep))
            if not clean:
                return

    def _lease_batch(
        self, conn: sqlite3.Connection, sink: str, size: int
    ) -> list[tuple[int, str, int, bytes]]:
        now = self.clock()
        rows = conn.execute(
            "SELECT i.seq, i.event_id, i.attempts, e.body FROM outbox_item i "
            "JOIN outbox_event e ON e.event_id = i.event_id "
            "WHERE i.sink = ? AND i.state IN ('pending', 'retrying') AND i.next_attempt_at <= ? "
            "ORDER BY i.next_attempt_at, i.seq LIMIT ?",
            (sink, now, size),
        ).fetchall()
        if rows:
            # Lease: another deliverer (a second process) skips these until the lease ends.
            conn.executemany(
                "UPDATE outbox_item SET next_attempt_at = ? WHERE seq = ?",
                [(now + self.lease, r[0]) for r in rows],
            )
        return [(int(r[0]), str(r[1]), int(r[2]), bytes(r[3])) for r in rows]

    def _apply(
        self,
        conn: sqlite3.Connection,
        *,
        sink: str,
        pol: SinkPolicy,
        batch: Sequence[tuple[int, str, int, bytes]],
        result: SendResult,
        rep: SinkReport,
    ) -> bool:
        """Record the outcomes; return True when the whole batch was acknowledged."""
        now = self.clock()
        acked: list[tuple[float, int]] = []
        acked_ids: list[tuple[str]] = []
        retry: list[tuple[str, int, float, str, float, int]] = []
        dead: list[tuple[str, float, int]] = []
        blocked: ItemResult | None = None
        unblocked_back: list[tuple[float, int]] = []
        last_error: str | None = None
        max_wait = 0.0
        for (seq, event_id, attempts, _), item in zip(batch, result.items, strict=True):
            if item.outcome is Outcome.ACKED:
                acked.append((now, seq))
                acked_ids.append((event_id,))
                continue
            last_error = item.reason or item.outcome.value
            rep.errors[last_error] = rep.errors.get(last_error, 0) + 1
            if item.outcome is Outcome.REJECTED:
                dead.append((bounded_reason(item.reason or "rejected"), now, seq))
                rep.rejected += 1
            elif item.outcome is Outcome.BLOCKED:
                blocked = blocked or item
                unblocked_back.append((now, seq))
            else:
                n = attempts + 1
                if pol.max_retries is not None and n > pol.max_retries:
                    dead.append((bounded_reason("retries_exhausted", item.reason), now, seq))
                    rep.rejected += 1
                    continue
                wait = backoff(n, pol.backoff_initial, pol.backoff_max, self.rng)
                if item.retry_after is not None:
                    wait = max(wait, min(item.retry_after, pol.backoff_max))
                max_wait = max(max_wait, wait)
                retry.append(("retrying", n, now + wait, bounded_reason(item.reason or "retry"), now, seq))
                rep.retried += 1
        if acked:
            conn.executemany(
                "UPDATE outbox_item SET state = 'acked', reason = NULL, updated_at = ? WHERE seq = ?", acked
            )
            _drop_bodies(conn, acked_ids)
            rep.acked += len(acked)
        if retry:
            conn.executemany(
                "UPDATE outbox_item SET state = ?, attempts = ?, next_attempt_at = ?, reason = ?, updated_at = ? "
                "WHERE seq = ?",
                retry,
            )
        if dead:
            conn.executemany(
                "UPDATE outbox_item SET state = 'dead', reason = ?, updated_at = ? WHERE seq = ?", dead
            )
        if unblocked_back:
            conn.executemany(
                "UPDATE outbox_item SET next_attempt_at = 0, updated_at = ? WHERE seq = ?", unblocked_back
            )
        conn.execute("INSERT OR IGNORE INTO outbox_sink (sink) VALUES (?)", (sink,))
        if acked:
            conn.execute(
                "UPDATE outbox_sink SET delivered = delivered + ?, last_ack_at = ? WHERE sink = ?",
                (len(acked), now, sink),
            )
        if blocked is not None:
            reason = bounded_reason(blocked.reason or "blocked")
            conn.execute(
                "UPDATE outbox_sink SET blocked_at = ?, blocked_reason = ?, last_error = ?, last_error_at = ? "
                "WHERE sink = ?",
                (now, reason, reason, now, sink),
            )
            conn.execute(
                "UPDATE outbox_item SET state = 'blocked', updated_at = ? "
                "WHERE sink = ? AND state IN ('pending', 'retrying')",
                (now, sink),
            )
            rep.blocked_reason = reason
            return False
        if retry and not acked:
            # Nothing got through: back the whole sink off, not only these items.
            failures = conn.execute(
                "UPDATE outbox_sink SET failures = failures + 1 WHERE sink = ? RETURNING failures", (sink,)
            ).fetchone()[0]
            wait = max(max_wait, backoff(int(failures), pol.backoff_initial, pol.backoff_max, self.rng))
            conn.execute(
                "UPDATE outbox_sink SET retry_at = ?, last_error = ?, last_error_at = ? WHERE sink = ?",
                (now + wait, last_error, now, sink),
            )
            return False
        if acked:
            conn.execute("UPDATE outbox_sink SET failures = 0, retry_at = 0 WHERE sink = ?", (sink,))
        if last_error is not None:
            conn.execute(
                "UPDATE outbox_sink SET last_error = ?, last_error_at = ? WHERE sink = ?", (last_error, now, sink)
            )
        return not retry

    def _housekeeping(self, conn: sqlite3.Connection) -> None:
        """Forget old acknowledgements, bound dead letters, repair clock steps."""
        now = self.clock()
        conn.execute(
            "DELETE FROM outbox_item WHERE state = 'acked' AND updated_at < ?", (now - self.ack_retention,)
        )
        for (sink,) in conn.execute("SELECT DISTINCT sink FROM outbox_item WHERE state = 'dead'").fetchall():
            gone = conn.execute(
                "DELETE FROM outbox_item WHERE seq IN (SELECT seq FROM outbox_item WHERE state = 'dead' "
                "AND sink = ? ORDER BY updated_at DESC, seq DESC LIMIT -1 OFFSET ?) RETURNING event_id",
                (sink, self.dead_limit),
            ).fetchall()
            _drop_bodies(conn, gone)
        horizon = max((p.backoff_max for p in self.policies.values()), default=SinkPolicy().backoff_max)
        horizon += self.lease
        conn.execute(
            "UPDATE outbox_item SET next_attempt_at = ? WHERE state IN ('pending', 'retrying') "
            "AND next_attempt_at > ?",
            (now, now + horizon),
        )
        conn.execute("UPDATE outbox_sink SET retry_at = ? WHERE retry_at > ?", (now, now + horizon))

    # -- until idle -------------------------------------------------------------------

    def next_due(self) -> float | None:
        """When something becomes deliverable next (None: nothing queued for a live sink)."""
        best: float | None = None
        for sink in self.sinks:
            blocked_at, _, _, retry_at = self._sink_row(sink.name)
            if blocked_at is not None:
                continue
            row = self.conn.execute(
                "SELECT min(next_attempt_at) FROM outbox_item WHERE sink = ? AND state IN ('pending', 'retrying')",
                (sink.name,),
            ).fetchone()
            if row is None or row[0] is None:
                continue
            due = max(float(row[0]), retry_at)
            best = due if best is None else min(best, due)
        return best

    def run_until_idle(self, deadline: float, *, stop: Callable[[], bool] | None = None) -> DeliveryReport:
        """Run passes until nothing deliverable is left, ``deadline`` (on ``clock``) passes
        or ``stop()`` is true (checked between passes and while waiting).

        Between passes it sleeps until the next item or sink back-off is due. Blocked
        sinks and dead letters do not keep it busy.
        """
        total = DeliveryReport()
        while True:
            total.merge(self.run_once())
            due = self.next_due()
            now = self.clock()
            if due is None or now >= deadline or due >= deadline or (stop is not None and stop()):
                return total
            while due > now:  # with a stop: in short naps, so that it is seen while waiting
                self.sleep(min(due, deadline) - now if stop is None else min(due, deadline, now + 0.2) - now)
                if stop is not None and stop():
                    return total
                now = self.clock()


def _open_existing(db_path: str) -> sqlite3.Connection:
    """Open the state database without creating it (an operator command on a wrong path
    must not leave an empty database behind)."""
    from pathlib import Path

    uri = Path(db_path).absolute().as_uri() + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
        note_sqlite_open(db_path)
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error as exc:
        raise FileNotFoundError(db_path) from exc
    return conn


def _has_schema(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox_item'").fetchone()
    return row is not None


def status(db_path: str, sinks: Iterable[str] = ()) -> list[SinkStatus]:
    """Per-sink queue counts and state, for ``telltale delivery status`` (read only)."""
    conn = _open_existing(db_path)
    try:
        if not _has_schema(conn):
            return [SinkStatus(n, 0, 0, 0, 0, 0, 0, None, None, None, None) for n in sorted(set(sinks))]
        counts: dict[str, dict[str, int]] = {}
        oldest: dict[str, float] = {}
        for sink, state, n, first in conn.execute(
            "SELECT sink, state, count(*), min(enqueued_at) FROM outbox_item GROUP BY sink, state"
        ):
            counts.setdefault(sink, {})[state] = int(n)
            if state in QUEUED_STATES and first is not None:
                oldest[sink] = min(oldest.get(sink, first), float(first))
        meta = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT sink, blocked_reason, last_error, retry_at, delivered, blocked_at FROM outbox_sink"
            )
        }
        names = sorted(set(counts) | set(meta) | set(sinks))
        out = []
        for name in names:
            c = counts.get(name, {})
            m = meta.get(name, (None, None, 0.0, 0, None))
            out.append(
                SinkStatus(
                    sink=name,
                    pending=c.get("pending", 0),
                    retrying=c.get("retrying", 0),
                    blocked=c.get("blocked", 0),
                    dead=c.get("dead", 0),
                    acked_retained=c.get("acked", 0),
                    delivered_total=int(m[3] or 0),
                    oldest_queued_at=oldest.get(name),
                    blocked_reason=m[0] if m[4] is not None else None,
                    last_error=m[1],
                    retry_at=float(m[2]) if m[2] else None,
                )
            )
        return out
    finally:
        conn.close()


def retry_blocked(db_path: str, sink: str) -> int:
    """Lift a sink's block; its blocked items become pending again. Returns how many."""
    conn = _open_existing(db_path)
    try:
        if not _has_schema(conn):
            return 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            n = conn.execute(
                "UPDATE outbox_item SET state = CASE WHEN attempts > 0 THEN 'retrying' ELSE 'pending' END, "
                "next_attempt_at = 0 WHERE sink = ? AND state = 'blocked'",
                (sink,),
            ).rowcount
            conn.execute(
                "UPDATE outbox_sink SET blocked_at = NULL, blocked_reason = NULL, failures = 0, retry_at = 0 "
                "WHERE sink = ?",
                (sink,),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return int(n)
    finally:
        conn.close()
