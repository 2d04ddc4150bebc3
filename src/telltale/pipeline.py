"""One scan: discover → acquire → detect → emit → commit.

Events of every source are staged per source and gathered into write windows that
span sources (one fsync and one state commit per window, not per file). A source that
fails drops only its own uncommitted events; a long source is committed in windows as
its adapter yields resumable batches. Cursors advance only after the window's events
are durable in the JSONL output (see :mod:`telltale.state`).

A window's write and fsync run on a writer thread while the scan reads and encodes the
next window (the thread waits on the disk, not the CPU). Windows stay strictly ordered:
window N's cursors are committed, and window N+1's intent recorded, only after window
N's write returned; so at most one window is ever pending, as the state protocol needs.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from telltale import faults, utf8
from telltale.errors import OutputError, SourceError, StateError, UnsupportedSource
from telltale.events.envelope import ContentMode, base_event, path_hash, utc_now, with_user
from telltale.events.health import (
    operational_alert,
    scan_summary,
    scanner_error,
    source_health,
    source_unsupported,
    state_reset,
)
from telltale.events.loss import (
    QUARANTINE_EVENTS_PER_SOURCE,
    quarantine_aggregate,
    record_quarantined,
    scan_interrupted,
    source_removed,
    source_reset,
)
from telltale.events.redaction import redact_document
from telltale.index import schema as index_schema
from telltale.index.documents import event_id_of
from telltale.index.upkeep import index_window
from telltale.model import Observation, Quarantine
from telltale.prepared import Prepared, prepare
from telltale.readahead import AHEAD_BYTES, ReadAhead
from telltale.readers.jsonl import Restart, decode_cursor, encode_cursor
from telltale.sinks.jsonl import JsonlSink
from telltale.sources.base import AcquireContext, HistoryMode, SourceHealth
from telltale.sources.registry import adapter_for, spec_for, unsupported_reason
from telltale.sources.spec import Source
from telltale.state import CursorUpdate, PendingWindow, StateStore, note_sqlite_open, source_key

if TYPE_CHECKING:  # a scan with nothing new imports neither (see docs/performance.md)
    from concurrent.futures import Future, ThreadPoolExecutor

    from telltale.detect.ledger import AlertBatch
    from telltale.readpool import ReadPool

#: ``--log-path -``: events go to stdout; the state is only read (no cursor advances, nothing
#: is queued or indexed), and what one process has emitted is remembered in memory.
STDOUT_LOG = "-"

#: Bytes of encoded events gathered before a window is written and committed.
WINDOW_BYTES = 8 << 20
#: Sources committed per window at most (bounds a crash's re-read work).
WINDOW_SOURCES = 2_000
#: ``--jobs N``: worker processes read the changed sources only when at least two changed
#: sources hold this many unread bytes together (starting the workers costs about one
#: interpreter start-up; below this a scan is over before they would have helped).
POOL_MIN_BYTES = 8 << 20

_encoder = msgspec.json.Encoder()

_client_session = operator.attrgetter("client", "session_id")

#: One encoded event: its ``event.id`` and its JSONL line (no newline).
Item = tuple[str, bytes]


def _item(doc: dict[str, Any], user: str = "") -> Item:
    """A health, inventory or alert document, encoded: every string through the redactor
    (a store path or an error message may hold anything). ``user``: the account of the store
    it is about (a system-profile source's), set as ``user.name``."""
    return str(doc["event"]["id"]), _encoder.encode(redact_document(with_user(doc, user)))


#: A step run at the end of an emitting scan (the inventory): the events it adds, and a
#: function recording its own state inside the transaction that commits those events.
ExtraEvents = Callable[[StateStore | None, str], tuple[list[dict[str, Any]], Callable[[Any], None] | None]]


class SessionWindowLike(Protocol):
    def encode(self) -> bytes: ...


class Detector(Protocol):
    """What the pipeline needs from the detection engine."""

    @property
    def rule_count(self) -> int: ...

    def prepare(self) -> object:
        """Be ready to evaluate (a detector built on first use is built here)."""
        ...

    def evaluate(self, observations: Sequence[Observation], windows: MutableMapping[str, Any]) -> list[Any]: ...

    def decode_window(self, data: bytes) -> Any: ...

    def detection_document(self, detection: Any, base: dict[str, Any], content: str = ...) -> dict[str, Any]: ...

    def rollups(self, windows: Mapping[str, Any], observed_at: str) -> list[dict[str, Any]]:
        """``session_risk_summary`` documents of the sessions whose risk changed."""
        ...


class ScanOptions(msgspec.Struct):
    log_path: str
    state_path: str
    content: str = ContentMode.REDACTED
    dry_run: bool = False
    backfill: bool = False
    history_all: bool = False
    allow_fixtures: bool = False
    max_sources: int | None = None
    targeted: bool = False  # a watch-triggered scan of some sources, not a full scan
    scanner_error_threshold: int = 10
    scan_duration_threshold_seconds: float = 300.0
    log_rotate_max_size: int = 100 * 1024 * 1024
    log_rotate_keep: int = 5
    #: Group id of the log files (and directory) this run creates (``--log-group``).
    log_group: int | None = None
    window_bytes: int = WINDOW_BYTES
    #: Names of the outputs fed from the outbox (remote ones and additional JSONL files).
    remote_sinks: tuple[str, ...] = ()
    #: What an output takes, for those that do not take every event (``sinks.select``).
    sink_selectors: dict[str, Any] = msgspec.field(default_factory=dict)
    outbox_capacity: int = 1_000_000
    #: Processes reading changed sources (``--jobs``); 1: all in the scanning process.
    jobs: int = 1
    #: Unread bytes of the changed sources from which the worker processes are used.
    pool_min_bytes: int = POOL_MIN_BYTES
    #: Bytes of small changed sources read ahead of the one being written (0: none; see
    #: :mod:`telltale.readahead`).
    read_ahead_bytes: int = AHEAD_BYTES
    #: (home, account) of every home a system-profile run covers: whose a store that is gone
    #: was (``source_removed`` carries the account, as the store's other events did).
    account_homes: tuple[tuple[str, str], ...] = ()


class SourceReport(msgspec.Struct):
    kind: str
    client: str
    path: str
    status: str = "ok"  # ok | partial | empty | error | unchanged | unsupported
    #: The account whose home holds the store (system profile); empty: Telltale's own.
    user: str = ""
    records_read: int = 0
    other_records: int = 0
    observations: int = 0
    detections: int = 0
    quarantined: int = 0
    bytes_read: int = 0
    error: str | None = None
    quarantine_reasons: dict[str, int] = msgspec.field(default_factory=dict)
    #: Why the source cannot be read (``encrypted``...), also once it was reported.
    unsupported: str | None = None
    #: The first records set aside (where and why), for the summary; all are health events.
    skipped: list[Quarantine] = msgspec.field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "client": self.client,
            "path_hash": path_hash(self.path),
            **({"user": self.user} if self.user else {}),
            "status": self.status,
            "records_read": self.records_read,
            "other_records": self.other_records,
            "observations": self.observations,
            "detections": self.detections,
            "quarantined": self.quarantined,
            "bytes_read": self.bytes_read,
        }
        if self.error:
            out["error"] = self.error
        if self.unsupported:
            out["reason"] = self.unsupported
        if self.quarantine_reasons:
            out["quarantine_reasons"] = dict(sorted(self.quarantine_reasons.items()))
        return out


#: Skipped records kept per source for the summary (every one is a health event).
SKIPPED_KEPT = 3
#: Detections kept for the summary, the most severe first (all are events).
TOP_KEPT = 20
_SEVERITY_RANK = {"critical": 4, "high": 3, "medium": 2, "low": 1}


class DetectionBrief(msgspec.Struct, frozen=True):
    """One detection as the summary lists it; built from the (redacted) event document."""

    severity: str
    score: float
    title: str
    rule_id: str
    client: str
    session_id: str | None = None
    #: The session's working directory (the project), when the observation had one.
    project: str | None = None
    #: The command, path or URL the alert is about (or its excerpt), redacted.
    where: str | None = None
    #: Occurrences folded into this alert (one alert per session and rule).
    count: int = 1

    @property
    def rank(self) -> tuple[int, float]:
        return _SEVERITY_RANK.get(self.severity, 0), self.score


class DetectionTally(msgspec.Struct):
    """Detections of one scan by severity, and the most severe few."""

    by_severity: dict[str, int] = msgspec.field(default_factory=dict)
    top: list[DetectionBrief] = msgspec.field(default_factory=list)

    def add(self, brief: DetectionBrief) -> None:
        self.by_severity[brief.severity] = self.by_severity.get(brief.severity, 0) + 1
        if len(self.top) < TOP_KEPT or brief.rank > self.top[-1].rank:
            self.top.append(brief)
            self.top.sort(key=lambda b: b.rank, reverse=True)  # stable: first seen first among equals
            del self.top[TOP_KEPT:]


class ScanResult(msgspec.Struct):
    scan_id: str
    sources: list[SourceReport]
    emitted_count: int
    quarantined_count: int
    scanner_error_count: int
    detection_count: int
    duration_s: float
    discovery_errors: list[dict[str, str]]
    recovered: str | None = None
    dry_run: bool = False
    #: Set when SIGINT/SIGTERM stopped the scan: signal, sources done, sources selected.
    interrupted: dict[str, Any] | None = None
    #: ``--dry-run``: the alerts the scan would have written.
    would_emit: list[dict[str, Any]] = msgspec.field(default_factory=list)
    #: Detections by severity, and the most severe ones (for the summary).
    detections: DetectionTally = msgspec.field(default_factory=DetectionTally)
    #: ``--jobs``: worker processes that read this scan's changed sources (0: none started).
    workers: int = 0

    @property
    def detections_by_severity(self) -> dict[str, int]:
        return self.detections.by_severity

    @property
    def top_detections(self) -> list[DetectionBrief]:
        return self.detections.top

    def as_dict(self) -> dict[str, Any]:
        out = {
            "scan_id": self.scan_id,
            "dry_run": self.dry_run,
            "sources_scanned": sum(1 for s in self.sources if s.status not in ("unchanged", "unsupported")),
            "sources_unchanged": sum(1 for s in self.sources if s.status == "unchanged"),
            "sources_unsupported": sum(1 for s in self.sources if s.unsupported),
            "unsupported_reasons": _count(s.unsupported for s in self.sources if s.unsupported),
            "emitted_count": self.emitted_count,
            "quarantined_count": self.quarantined_count,
            "scanner_error_count": self.scanner_error_count,
            "discovery_error_count": len(self.discovery_errors),
            # Failed sources and discovery errors together (what a dashboard counts as errors).
            "error_count": self.scanner_error_count + len(self.discovery_errors),
            "detection_count": self.detection_count,
            "detections_by_severity": dict(self.detections.by_severity),
            "duration_s": round(self.duration_s, 6),
            "discovery_errors": self.discovery_errors,
            "recovered_window": self.recovered,
            "sources": [s.as_dict() for s in self.sources if s.status != "unchanged"],
        }
        if self.workers:
            out["worker_processes"] = self.workers
        if self.interrupted is not None:
            out["interrupted"] = self.interrupted
        if self.dry_run:
            out["detections"] = self.would_emit
        return out


#: Prefix of a reported unsupported source's reason once an adapter read it after all.
_READABLE_AGAIN = "~"


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return dict(sorted(counts.items()))


#: Stores that are databases (their WAL is part of what changes).
_DATABASE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".vscdb")


def stat_fingerprint(source: Source, listed: tuple[int, int, int, int] | None = None) -> str | None:
    """Cheap change check: identity, size and mtime of the store (and its WAL).

    ``listed``: those four as this run's discovery ``lstat``ed the store, when it did.
    """
    if listed is None:
        try:
            st = os.stat(source.path, follow_symlinks=False)
        except OSError:
            return None
        listed = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    device, inode, size, mtime_ns = listed
    fp = f"{device}:{inode}:{size}:{mtime_ns}"  # as earlier versions wrote it: no re-read on upgrade
    if source.kind.endswith(".sqlite") or source.path.endswith(_DATABASE_SUFFIXES):
        try:
            wal = os.stat(source.path + "-wal", follow_symlinks=False)
            fp += f":{wal.st_ino}:{wal.st_size}:{wal.st_mtime_ns}"
        except OSError:
            fp += ":-1"
    return fp


class _Window:
    """Events and cursor updates waiting for one durable write."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.ids: list[str] = []
        #: The observation each line was built from (``None``: a line the index reads back).
        self.observations: list[Observation | None] = []
        self.size = 0
        self.cursors: dict[str, CursorUpdate] = {}
        self.fingerprints: dict[str, str] = {}
        self.windows: dict[str, bytes] = {}
        #: Unsupported sources reported in this window (source key -> reason).
        self.unsupported: dict[str, str] = {}
        #: State ``meta`` entries installed with this window's cursors (``None`` deletes).
        self.meta: dict[str, bytes | None] = {}
        self.sources = 0
        self._alerts: AlertBatch | None = None

    @property
    def alerts(self) -> AlertBatch:
        """Alerts folded per (session, rule) until this window's events are staged."""
        if self._alerts is None:
            from telltale.detect.ledger import AlertBatch

            self._alerts = AlertBatch()
        return self._alerts

    def add(self, items: list[Item]) -> None:
        self.extend([event_id for event_id, _ in items], [line for _, line in items])

    def extend(
        self, ids: list[str], lines: list[bytes], observations: Sequence[Observation | None] | None = None
    ) -> None:
        """Add many events at once (C-level list extends and sizes: one call per batch)."""
        self.ids += ids
        self.lines += lines
        if observations is None:
            self.observations += [None] * len(lines)
        else:
            self.observations += observations
        self.size += sum(map(len, lines)) + len(lines)

    def empty(self) -> bool:
        return not self.lines and not self.cursors and not self.windows and not self.unsupported and not self.meta


class Scanner:
    """Runs scans over a list of discovered sources with one state store and one log."""

    def __init__(
        self,
        options: ScanOptions,
        *,
        detector: Detector | None = None,
        progress: Callable[[str, int], None] | None = None,
        extra_events: ExtraEvents | None = None,
        stream: StreamMemory | None = None,
    ) -> None:
        self.options = options
        self.detector = detector
        self.progress = progress
        self.extra_events = extra_events
        self.state: StateStore | None = None
        self.sink: JsonlSink | None = None
        #: ``--log-path -``: cursors, fingerprints, reported blind spots and detection windows
        #: of what this process wrote to stdout (the state on disk is never written).
        #: A loop passes the same memory to each iteration's scanner.
        self.stream: StreamMemory | None = None
        if options.log_path == STDOUT_LOG:
            self.stream = stream if stream is not None else StreamMemory()
        if self.stream is not None:
            if not options.dry_run and os.path.exists(options.state_path):
                self.state = _read_only_state(options.state_path)
        elif not options.dry_run:
            self.state = StateStore(options.state_path)
            # The local log: group-readable (a forwarder's group), in a directory it may traverse.
            self.sink = JsonlSink(
                options.log_path, max_size=options.log_rotate_max_size, keep=options.log_rotate_keep,
                mode=0o640, dir_mode=0o750, group=options.log_group,
            )
        elif os.path.exists(options.state_path):
            self.state = _read_only_state(options.state_path)
        #: Set when the outbox was full for a window (its events stay in the JSONL log only).
        self.outbox_full = False
        #: Set (by a signal handler) to stop the scan at the next batch or source boundary;
        #: what was read up to there is committed. ``stop_signal`` names the signal.
        self.stop = threading.Event()
        self.stop_signal: str | None = None
        self._writer: ThreadPoolExecutor | None = None
        #: ``--jobs N``: the worker processes reading this scan's changed sources, if started.
        self._pool: ReadPool | None = None
        self._ahead: ReadAhead | None = None
        #: The window being written: its write, its intent, and what its commit also does.
        self._inflight: tuple[Future[int], PendingWindow, Callable[[Any], None]] | None = None
        #: Detection windows staged during this scan but perhaps not committed yet (newest
        #: version per session): a later batch of the same session, in this source after a
        #: mid-source window or in another source, must continue from them, not from the
        #: state, which the writer thread may not have updated yet.
        self._pending_windows: dict[str, bytes] = {}
        #: Whether the state held any detection window when this scan started.
        self._stored_windows = True
        #: ``--dry-run``: the alerts the scan would have written (rule, severity, count, session).
        self.would_emit: list[dict[str, Any]] = []
        self._tally = DetectionTally()
        if self.state is not None and not options.dry_run and self.stream is None:
            with self.state.transaction() as conn:
                if index_schema.ensure(conn):
                    self._rebuild_index(conn)
                index_schema.set_meta(conn, "log_path", os.path.abspath(options.log_path))
                if options.remote_sinks:
                    from telltale.sinks import outbox

                    outbox.ensure_schema(conn)

    def _rebuild_index(self, conn: Any) -> None:
        """An index of another Telltale version was dropped: derive it again from the log
        now, so the read side never answers from an index that silently lost the past."""
        from telltale.index.rebuild import rebuild

        if not os.path.exists(self.options.log_path):
            return
        result = rebuild(conn, self.options.log_path, content=self.options.content)
        print(
            f"telltale: the read-side index in {self.options.state_path} was from another version of Telltale; "
            f"rebuilt it from the log ({result.events:,} events from {result.files} file(s))",
            file=sys.stderr,
        )

    def close(self) -> None:
        self._close_pool()
        self._drain()
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None
        if self.state is not None:
            self.state.close()

    # -- public --------------------------------------------------------------------
    def scan(
        self, sources: Sequence[Source], *, discovery_errors: Sequence[dict[str, str]] = (),
        stats: Mapping[str, tuple[int, int, int, int]] | None = None,
    ) -> ScanResult:
        """Read what changed in ``sources`` and emit it; ``stats`` are their ``lstat``s from
        discovery, just before (by path; a source without one is ``stat``ed here)."""
        try:
            # With detection, the event stage's encodings are kept for it (telltale.utf8).
            with utf8.sharing() if self.detector is not None else contextlib.nullcontext():
                return self._scan(sources, discovery_errors, stats or {})
        finally:
            self._close_pool()
            self._ahead = None  # sources read ahead of an interrupted scan are let go
            # On success everything is settled already; after an error, no write may still
            # run when the caller moves on (a pending window is finished by ``recover``).
            self._drain()

    def _scan(
        self, sources: Sequence[Source], discovery_errors: Sequence[dict[str, str]],
        stats: Mapping[str, tuple[int, int, int, int]],
    ) -> ScanResult:
        opts = self.options
        self._tally = DetectionTally()
        self._pending_windows = {} if self.stream is None else self.stream.windows
        # A window committed by this scan is in ``_pending_windows`` too: when the state held
        # none at its start (a first scan), no session needs looking up there (a query per
        # new session was ~10% of a cold scan).
        self._stored_windows = self.state is not None and self.state.has_detect_windows()
        self.would_emit = []
        started = time.monotonic()
        scan_id = uuid.uuid4().hex
        recovered = None
        writes_state = not opts.dry_run and self.stream is None
        if self.state is not None and writes_state:
            recovered = self.state.recover(self._recovered_commit)
        use_cursors = not (opts.backfill or opts.history_all)
        reset = self._state_reset(observed_at=utc_now()) if use_cursors else None
        selected = list(sources)
        if opts.max_sources is not None:
            selected = selected[: opts.max_sources]
        history = HistoryMode.ALL if opts.history_all else (
            HistoryMode.BACKFILL if opts.backfill else HistoryMode.INCREMENTAL
        )
        ctx = AcquireContext(history=history, dry_run=opts.dry_run, now=time.time())
        fingerprints = self._fingerprints() if use_cursors else {}
        reported = self._reported_unsupported()
        reports: list[SourceReport] = []
        window = _Window()
        if reset is not None:
            window.add([_item(reset)])  # before anything is emitted again
        emitted = 0
        detections_total = 0
        errors: list[dict[str, Any]] = []
        stop = self.stop
        interrupted_at: int | None = None
        removed = (self.state.meta_prefixed(REMOVED_PREFIX)
                   if use_cursors and self.state is not None and writes_state else {})
        fps, reads = self._plan(selected, use_cursors, fingerprints, removed, stats)
        pool = self._start_pool(selected, reads, ctx)
        workers = pool.size if pool is not None else 0
        ahead = self._ahead = None if pool is not None else self._read_ahead(selected, reads, stats, ctx)
        for index, source in enumerate(selected):
            if stop.is_set():
                interrupted_at = index
                break
            if self.progress is not None:
                self.progress("start", index)
            faults.hit("source")
            report = SourceReport(kind=source.kind, client=source.client, path=source.path, user=source.user)
            reports.append(report)
            key = source_key(source.kind, source.path)
            reason = unsupported_reason(source.kind)
            if reason is not None:  # found, never opened: the blind spot is reported, not read
                self._unsupported(window, report, source, key, reason, reported)
                continue
            fp = fps[index]
            read = reads.get(index)
            if read is None:
                report.status = "unchanged"
                known = reported.get(key)
                if known and not known.startswith(_READABLE_AGAIN):
                    report.unsupported = known  # an adapter found it unreadable and it has not changed
                continue
            if self.detector is not None:
                self.detector.prepare()  # a LazyDetector is built here, never inside a source's try
            cursor, restored = read
            if restored:  # the mark is cleared, so a later removal is reported again
                window.meta[REMOVED_PREFIX + key] = None
            staged = _Window()  # this source's events, not yet in the window
            staged_cursor: bytes | None = None
            staged_windows: dict[str, Any] = {}
            looked_up: set[str] = set()  # session keys already looked for in the state
            flushing = False  # an error while writing is the scan's, not this source's
            overflow = _QuarantineOverflow()  # quarantines past the first ones, counted
            try:
                batches = (pool.batches(index, stop.is_set) if pool is not None and pool.reads(index)
                           else ahead.batches(index) if ahead is not None else self._read_here(source, cursor, ctx))
                for prepared in batches:
                    batch = prepared.batch
                    faults.hit("batch")
                    report.records_read += batch.records_read
                    report.other_records += batch.other_records
                    report.bytes_read += batch.bytes_read
                    report.observations += len(batch.observations)
                    if batch.partial:
                        report.status = "partial"
                    if batch.revisit:
                        fp = None  # read it again next time, changed or not
                    if not opts.dry_run:
                        if batch.reset is not None:
                            staged.add([_item(_reset_event(source, batch.reset), source.user)])
                        if batch.quarantined:
                            staged.add(self._quarantine_events(source, report, batch.quarantined, overflow))
                    self._quarantine(report, batch.quarantined)
                    if batch.health and not opts.dry_run:
                        staged.add([_item(self._source_health(source, h), source.user) for h in batch.health])
                    observations = batch.observations  # normalised, and encoded unless a dry run
                    if not opts.dry_run and observations:
                        staged.extend(prepared.ids, prepared.lines, observations)
                    if self.detector is not None and observations:
                        self._detect(observations, staged_windows, looked_up, staged)
                    if batch.cursor is not None:
                        staged_cursor = batch.cursor
                    if self.progress is not None:
                        self.progress("bytes", batch.bytes_read)
                    if staged.size >= opts.window_bytes and not opts.dry_run:
                        # A long source: commit what it has so far at this resumable point.
                        self._stage_into(window, source, key, staged, staged_cursor, None,
                                         staged_windows, use_cursors, report)
                        flushing = True
                        emitted += self._flush(window)
                        flushing = False
                        window = _Window()
                        staged, staged_windows, looked_up = _Window(), {}, set()
                    if stop.is_set():
                        # Interrupted: keep what was read up to this batch's resumable cursor.
                        interrupted_at = index
                        report.status = "partial"
                        break
                else:
                    if pool is not None and pool.reads(index) and not pool.ended(index):  # stopped while waiting
                        interrupted_at = index
                        report.status = "partial"
            except UnsupportedSource as exc:  # the adapter recognised a store it cannot read
                staged, staged_windows = _Window(), {}
                self._unsupported(window, report, source, key, exc.reason, reported)
                self._stage_into(window, source, key, staged, None, fp, {}, use_cursors)
            except SourceError as exc:
                report.status = "error"
                report.error = exc.reason
                errors.append({"source": source, "reason": exc.reason, "detail": exc.detail})
                staged, staged_windows = _Window(), {}
            except (StateError, OutputError):
                raise  # the state or the output failed, not this source: the scan ends
            except Exception as exc:  # an adapter bug must not stop the other sources
                if flushing:
                    # The output or the state failed (this window's, or the one before whose
                    # commit it waited for): end the scan and leave the intent to ``recover``,
                    # never write another window after a torn one.
                    raise
                report.status = "error"
                report.error = "internal_error"
                detail = f"{getattr(exc, 'remote_name', None) or type(exc).__name__} in adapter"
                errors.append({"source": source, "reason": "internal_error", "detail": detail})
                if os.environ.get("TELLTALE_DEBUG"):
                    import traceback  # only here: importing it costs a no-change scan (textwrap)

                    traceback.print_exc(file=sys.stderr)
                staged, staged_windows = _Window(), {}
            else:
                known = reported.get(key)
                if known and not known.startswith(_READABLE_AGAIN):  # readable again: remember it was reported
                    window.unsupported[key] = reported[key] = _READABLE_AGAIN + known
                if report.status == "ok":
                    if report.quarantined:
                        report.status = "partial"
                    elif report.observations == 0 and report.records_read == 0:
                        report.status = "empty"
                if overflow.counts and not opts.dry_run:
                    staged.add([_item(overflow.event(source, utc_now()), source.user)])
                if interrupted_at is not None:
                    fp = None  # read only in part: the next scan reads it on, changed or not
                self._stage_into(window, source, key, staged, staged_cursor, fp, staged_windows, use_cursors, report)
                detections_total += report.detections
                if not opts.dry_run and (window.size >= opts.window_bytes or window.sources >= WINDOW_SOURCES):
                    emitted += self._flush(window)
                    window = _Window()
            if self.progress is not None:
                self.progress("source", 1)
            if interrupted_at is not None:
                break

        self._close_pool()  # read-only workers: ended at once, whatever they were doing
        duration = time.monotonic() - started
        observed = utc_now()
        health: list[dict[str, Any]] = []
        for err in errors:
            src: Source = err["source"]
            health.append(with_user(
                scanner_error(
                    scan_id=scan_id, kind=src.kind, client=src.client, path=src.path,
                    reason=err["reason"], detail=err["detail"], observed_at=observed,
                ),
                src.user,
            ))
        # The last window's commit may still be pending: settle it first, so the alerts see
        # what it did (a full outbox is only known once the commit has tried to enqueue).
        self._settle()
        health.extend(self._alerts(scan_id, reports, errors, duration, observed))
        extra_commit: Callable[[Any], None] | None = None
        prune: list[str] = []
        if interrupted_at is None and writes_state:
            if use_cursors and not opts.targeted and self.state is not None:
                removed_docs, marks, prune = self._removed_sources(sources, observed)
                health.extend(removed_docs)
                window.meta.update(marks)
            if self.extra_events is not None:
                extra_docs, extra_commit = self.extra_events(self.state, observed)
                health.extend(extra_docs)
        interrupted: dict[str, Any] | None = None
        if interrupted_at is not None:
            interrupted = {"signal": self.stop_signal or "signal", "sources_done": interrupted_at,
                           "sources_total": len(selected)}
            if not opts.dry_run:
                health.append(scan_interrupted(scan_id=scan_id, signal_name=interrupted["signal"],
                                               sources_done=interrupted_at, sources_total=len(selected),
                                               observed_at=observed))
        quarantined = sum(r.quarantined for r in reports)
        result = ScanResult(
            scan_id=scan_id,
            sources=reports,
            emitted_count=0,
            quarantined_count=quarantined,
            scanner_error_count=len(errors),
            detection_count=detections_total,
            duration_s=duration,
            discovery_errors=list(discovery_errors),
            recovered=recovered,
            dry_run=opts.dry_run,
            interrupted=interrupted,
            would_emit=list(self.would_emit) if opts.dry_run else [],
            detections=self._tally,
            workers=workers,
        )
        if not opts.dry_run:
            # Everything still in the window, the health events and the summary itself.
            result.emitted_count = emitted + len(window.lines) + len(health) + 1
            summary = result.as_dict()
            summary["duration_ns"] = int(duration * 1e9)
            health.append(scan_summary(scan_id=scan_id, summary=_summary_for_event(summary), observed_at=observed))
            window.add([_item(doc) for doc in health])
            self._flush(window, extra_commit, wait=True)
            if prune and self.state is not None:
                self.state.prune_sources(prune)
        else:
            result.emitted_count = 0
        return result

    def _state_reset(self, *, observed_at: str) -> dict[str, Any] | None:
        """A ``state_reset`` event when this state never recorded anything but the log
        already holds events: every source is about to be read again from the start."""
        if self.state is None or self.sink is None or self.options.dry_run or not self.state.is_new():
            return None
        held = self.sink.held_events()
        if held is None:
            return None
        print(
            f"telltale: warning: state {self.state.path} is new or empty but the log {held.path} already holds "
            "events; every source is read again from the beginning (a state_reset event marks the point; event "
            "ids are stable, so downstream dedupe is safe)",
            file=sys.stderr,
        )
        return state_reset(
            state_path=self.state.path, log_path=held.path, log_identity=(held.device, held.inode, held.size),
            observed_at=observed_at,
        )

    def changed_sources(self, sources: Sequence[Source]) -> list[Source]:
        """The sources a cursor-using scan would not skip as unchanged (``watch`` asks this
        before a triggered scan, so an event that changed nothing costs no scan)."""
        opts = self.options
        if opts.backfill or opts.history_all:
            return list(sources)
        committed = self._fingerprints()
        return [
            s for s in sources
            if (fp := stat_fingerprint(s)) is None or committed.get(source_key(s.kind, s.path)) != fp
        ]

    # -- helpers -------------------------------------------------------------------
    def _cursor(self, source: Source, key: str) -> bytes | None:
        if self.stream is not None and key in self.stream.cursors:
            return self.stream.cursors[key]
        return self.state.cursor(source.kind, source.path) if self.state is not None else None

    def _fingerprints(self) -> dict[str, str]:
        found = self._meta_map("fingerprints")
        if self.stream is not None:
            found.update(self.stream.fingerprints)
        return found

    def _meta_map(self, name: str) -> dict[str, str]:
        if self.state is None:
            return {}
        raw = self.state.meta(name)
        if not raw:
            return {}
        try:
            return msgspec.msgpack.decode(raw, type=dict[str, str])
        except msgspec.DecodeError:
            return {}

    def _reported_unsupported(self) -> dict[str, str]:
        """Unsupported sources already reported (source key -> reason, ``~reason`` when the
        source was read after all), from the state."""
        found = self._meta_map("unsupported")
        if self.stream is not None:
            found.update(self.stream.unsupported)
        return found

    def _unsupported(
        self, window: _Window, report: SourceReport, source: Source, key: str, reason: str, reported: dict[str, str]
    ) -> None:
        """Count an unreadable store; the first time (or a new reason) also report it.

        Only metadata is taken (one ``lstat``): the store is never opened.
        """
        report.unsupported = reason
        known = reported.get(key)
        if known in (reason, _READABLE_AGAIN + reason):  # reported before: never twice (same event id)
            report.status = "unchanged"
            if known != reason and not self.options.dry_run:
                window.unsupported[key] = reported[key] = reason
            return
        report.status = "unsupported"
        if self.options.dry_run:
            return
        size: int | None = None
        mtime: str | None = None
        try:
            st = os.lstat(source.path)
        except OSError:
            pass
        else:
            size = st.st_size
            mtime = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.st_mtime))
        doc = source_unsupported(
            kind=source.kind, client=source.client, path=source.path, reason=reason,
            size=size, mtime=mtime, observed_at=utc_now(),
        )
        window.add([_item(doc, source.user)])
        window.unsupported[key] = reported[key] = reason
    def _quarantine_events(
        self, source: Source, report: SourceReport, items: Sequence[Quarantine], overflow: _QuarantineOverflow
    ) -> list[Item]:
        """``record_quarantined`` events: the first ones of the source and run one by one,
        the rest counted into ``overflow`` (one aggregate event when the source ends)."""
        observed = utc_now()
        room = max(QUARANTINE_EVENTS_PER_SOURCE - report.quarantined, 0)
        out = [_item(record_quarantined(q, client=source.client, observed_at=observed), source.user)
               for q in items[:room]]
        for q in items[room:]:
            overflow.add(q)
        return out

    def _removed_sources(
        self, sources: Sequence[Source], observed: str
    ) -> tuple[list[dict[str, Any]], dict[str, bytes | None], list[str]]:
        """Sources with a cursor that are gone from disk: one ``source_removed`` each.

        A removal is marked in the state (``removed:<key>``, installed with the window that
        writes the event) so it is reported once; the cursor row stays, so a restored file
        is not read again from its start. Marks older than ``REMOVED_RETENTION`` are
        pruned with their cursor rows. Sources not found by this discovery but still on
        disk (another root, ``--client``) are not removed.
        """
        assert self.state is not None
        found = {source_key(s.kind, s.path) for s in sources}
        marks = self.state.meta_prefixed(REMOVED_PREFIX)
        now = time.time()
        prune = [k[len(REMOVED_PREFIX):] for k, v in marks.items() if now - _float(v) > REMOVED_RETENTION]
        docs: list[dict[str, Any]] = []
        meta: dict[str, bytes | None] = {}
        for key, kind, path in self.state.cursor_keys():
            if key in found or REMOVED_PREFIX + key in marks:
                continue
            try:
                os.lstat(path)
                continue
            except (FileNotFoundError, NotADirectoryError):
                pass
            except OSError:
                continue  # not readable is not gone
            row = self.state.cursor_row(key)
            if row is None:
                continue
            cursor, updated = row
            jsonl = decode_cursor(cursor)
            docs.append(with_user(source_removed(
                kind=kind, client=_client_of(kind), path=path, cursor=cursor,
                last_offset=jsonl.offset if jsonl else None, last_line=jsonl.line if jsonl else None,
                last_scanned_at=_iso(updated), observed_at=observed,
            ), _account_of(path, self.options.account_homes)))
            meta[REMOVED_PREFIX + key] = repr(now).encode()
        return docs, meta, prune

    def _source_health(self, source: Source, health: SourceHealth) -> dict[str, Any]:
        return source_health(
            kind=source.kind, client=source.client, path=source.path, reason=health.reason,
            identity=health.identity, fields=health.fields, observed_at=utc_now(),
        )

    def _quarantine(self, report: SourceReport, items: Iterable[Quarantine]) -> None:
        for item in items:
            report.quarantined += 1
            report.quarantine_reasons[item.reason] = report.quarantine_reasons.get(item.reason, 0) + 1
            if len(report.skipped) < SKIPPED_KEPT:
                report.skipped.append(item)

    def _read_here(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Prepared]:
        """A source read in this process: its adapter's batches, normalised and encoded."""
        adapter = adapter_for(source.kind)
        content, encode = self.options.content, not self.options.dry_run
        for batch in adapter.acquire(source, cursor, ctx):
            yield prepare(batch, content, source.user, encode=encode)

    def _read_ahead(
        self, selected: Sequence[Source], reads: Mapping[int, tuple[bytes | None, bool]],
        stats: Mapping[str, tuple[int, int, int, int]], ctx: AcquireContext,
    ) -> ReadAhead | None:
        """Small changed sources read a few at a time (see :mod:`telltale.readahead`), by
        their size (discovery's ``lstat``, else a ``stat``) less a JSONL cursor's offset;
        a database (its WAL is not in that size) is read as it is written."""
        if len(reads) < 2 or self.options.read_ahead_bytes <= 0:
            return None
        sizes: dict[int, int] = {}
        for index, (cursor, _restored) in reads.items():
            source = selected[index]
            if not (source.kind.endswith(".sqlite") or source.path.endswith(_DATABASE_SUFFIXES)):
                listed = stats.get(source.path)
                sizes[index] = _unread_bytes(source, cursor, None if listed is None else listed[2])

        def read(index: int) -> Iterator[Prepared]:
            return self._read_here(selected[index], reads[index][0], ctx)

        return ReadAhead(read, sorted(reads), sizes, self.stop.is_set, ahead_bytes=self.options.read_ahead_bytes)

    def _plan(
        self, selected: Sequence[Source], use_cursors: bool, fingerprints: Mapping[str, str],
        removed: Mapping[str, bytes], stats: Mapping[str, tuple[int, int, int, int]],
    ) -> tuple[list[str | None], dict[int, tuple[bytes | None, bool]]]:
        """Each source's fingerprint (``stat`` only), and the sources to read with their
        cursors and whether each is back after a removal.

        Taken before anything is read: a source that changes while the scan reads it keeps
        the older fingerprint, so the next scan reads it again.
        """
        fps: list[str | None] = []
        reads: dict[int, tuple[bytes | None, bool]] = {}
        for index, source in enumerate(selected):
            if unsupported_reason(source.kind) is not None:
                fps.append(None)
                continue
            key = source_key(source.kind, source.path)
            fp = stat_fingerprint(source, stats.get(source.path))
            fps.append(fp)
            if use_cursors and fp is not None and fingerprints.get(key) == fp:
                continue
            cursor = self._cursor(source, key) if use_cursors else None
            restored = REMOVED_PREFIX + key in removed
            if restored:
                # Back after it was reported removed (restored from a backup: a new inode).
                # Its bytes decide whether the cursor still holds, not its identity.
                cursor = _restored_cursor(cursor, source)
            reads[index] = (cursor, restored)
        return fps, reads

    def _start_pool(
        self, selected: Sequence[Source], reads: Mapping[int, tuple[bytes | None, bool]], ctx: AcquireContext
    ) -> ReadPool | None:
        """``--jobs N``: worker processes for the changed sources, when there are enough of
        them to pay for starting the workers (see ``POOL_MIN_BYTES``); else ``None``."""
        opts = self.options
        if opts.jobs <= 1 or len(reads) < 2 or self.stop.is_set():
            return None
        if sum(_unread_bytes(selected[i], cursor) for i, (cursor, _) in reads.items()) < opts.pool_min_bytes:
            return None
        from telltale.readpool import ReadPool, Task
        from telltale.sources.registry import adapter_module

        kinds = sorted({selected[i].kind for i in reads})
        self._pool = ReadPool(min(opts.jobs, len(reads)), opts.content, encode=not opts.dry_run,
                              preload=[adapter_module(kind) for kind in kinds])
        self._pool.submit([Task(i, selected[i], cursor, ctx) for i, (cursor, _) in sorted(reads.items())])
        return self._pool

    def _close_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _detect(
        self, observations: Sequence[Observation], staged_windows: dict[str, Any], looked_up: set[str],
        staged: _Window,
    ) -> None:
        """Evaluate a batch; its alerts are folded per (session, rule) in ``staged`` until it is staged."""
        assert self.detector is not None
        # Distinct (client, session) pairs first: a batch holds few sessions and many observations.
        pairs = set(map(_client_session, observations))
        keys = {f"{client}:{session}" for client, session in pairs if session}
        missing = [k for k in keys if k not in staged_windows and k not in looked_up]
        looked_up.update(missing)
        if missing and not (self.options.backfill or self.options.history_all):
            pending = self._pending_windows
            found = {k: pending[k] for k in missing if k in pending}
            rest = [k for k in missing if k not in found]
            look = rest and self.state is not None and self._stored_windows
            stored = self.state.detect_windows(rest) if look and self.state is not None else {}
            for k, data in {**stored, **found}.items():
                try:
                    staged_windows[k] = self.detector.decode_window(data)
                except Exception:  # a corrupt window only loses sequence memory
                    continue
        alerts = staged.alerts
        try:
            for det in self.detector.evaluate(observations, staged_windows):
                alerts.add(det)
        finally:
            if self._ahead is None or not self._ahead.pending:  # their encodings are kept for them
                utf8.forget()

    def _alert_items(
        self, staged: _Window, staged_windows: dict[str, Any], report: SourceReport | None, user: str
    ) -> None:
        """The staged window's alerts (one per session and rule, with counts) and the
        ``session_risk_summary`` of each session whose risk changed, as events (``user``:
        the account of the store they were read from)."""
        if self.detector is None:
            return
        detections = staged.alerts.drain()
        if report is not None:
            report.detections += len(detections)
        if self.options.dry_run:
            self.would_emit.extend(_would_emit(d) for d in detections)
            for det in detections:
                self._tally.add(DetectionBrief(
                    severity=str(det.severity), score=float(det.score), title=str(det.title), rule_id=str(det.rule_id),
                    client=str(det.client), session_id=det.session_id, count=int(getattr(det, "count", 1) or 1),
                ))
            return
        if not detections and not staged_windows:
            return  # most sources: nothing to emit, not even a timestamp to take
        observed = utc_now()
        out: list[Item] = []
        for det in detections:
            base = base_event(
                event_id=det.detection_id,
                dataset="telltale.detection",
                action="detection",
                kind="alert",
                timestamp=det.occurred_at,
                observed_at=observed,
                user=user,
            )
            document = self.detector.detection_document(det, base, self.options.content)
            self._tally.add(_brief(document, det))
            out.append((det.detection_id, _encoder.encode(document)))
        if staged_windows:
            out.extend(_item(doc, user) for doc in self.detector.rollups(staged_windows, observed))
        staged.add(out)

    def _stage_into(
        self,
        window: _Window,
        source: Source,
        key: str,
        staged: _Window,
        cursor: bytes | None,
        fingerprint: str | None,
        staged_windows: dict[str, Any],
        use_cursors: bool,
        report: SourceReport | None = None,
    ) -> None:
        self._alert_items(staged, staged_windows, report, source.user)
        window.extend(staged.ids, staged.lines, staged.observations)
        window.sources += 1
        if use_cursors:
            if cursor is not None:
                window.cursors[key] = CursorUpdate(key, source.kind, source.path, cursor)
            if fingerprint is not None:
                window.fingerprints[key] = fingerprint
            for k, w in staged_windows.items():
                window.windows[k] = self._pending_windows[k] = w.encode()

    def _flush(self, window: _Window, extra_commit: Callable[[Any], None] | None = None, *, wait: bool = False) -> int:
        """Record a window's intent and start its durable write. Returns events written.

        The previous window is settled first (its write awaited, its cursors committed).
        With ``wait``, this window is settled too before returning.
        """
        if self.stream is not None and not self.options.dry_run:
            return self.stream.write(window.lines, window.cursors, window.fingerprints, window.unsupported)
        if self.options.dry_run or self.state is None or self.sink is None or window.empty():
            if wait:
                self._settle()
            return 0
        self._settle()
        payload_size = window.size
        self.sink.rotate_if_needed(payload_size)
        device, inode, size = self.sink.identity()
        pending = PendingWindow(
            log_path=self.sink.path,
            log_device=device,
            log_inode=inode,
            start_size=size,
            end_size=size + (payload_size if window.lines else 0),
            cursors=list(window.cursors.values()),
            windows=window.windows,
            # State that suppresses re-emission travels with the intent, so ``recover``
            # installs it with the cursors (the inventory digest, removal marks).
            meta={**window.meta, **getattr(extra_commit, "meta", {})},
        )
        self.state.begin_window(pending)
        fingerprints = window.fingerprints
        unsupported = window.unsupported

        def save_fingerprints(conn: Any) -> None:
            assert self.state is not None
            if unsupported:
                known = self._reported_unsupported()
                known.update(unsupported)
                self.state.set_meta(conn, "unsupported", msgspec.msgpack.encode(known))
            if not fingerprints:
                return
            current = self._fingerprints()
            current.update(fingerprints)
            self.state.set_meta(conn, "fingerprints", msgspec.msgpack.encode(current))

        items = list(zip(window.ids, window.lines, strict=True)) if self.options.remote_sinks else []
        lines, ids, observations = window.lines, window.ids, window.observations

        def in_commit(conn: Any) -> None:
            save_fingerprints(conn)
            self._enqueue(conn, items)
            index_window(
                conn, device=device, inode=inode, start=size, lines=lines, ids=ids, observations=observations,
                content=self.options.content,
            )
            if extra_commit is not None:
                extra_commit(conn)

        if wait and self._writer is None:
            # One window and nothing else in flight (a scan with nothing new writes only its
            # summary): written here, in the same order, without starting a writer thread.
            self.sink.write(window.lines)
            self.state.commit_window(pending, in_commit)
            return len(window.lines)
        if self._writer is None:
            from concurrent.futures import ThreadPoolExecutor

            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="telltale-writer")
        self._inflight = (self._writer.submit(self.sink.write, window.lines), pending, in_commit)
        if wait:
            self._settle()
        return len(window.lines)

    def _settle(self) -> None:
        """Wait for the window being written; once it is durable, commit its cursors.

        A failed write raises here (an ``OutputError``) and its cursors stay where they
        were: the events are read again by the next scan, at least once.
        """
        inflight = self._inflight
        if inflight is None:
            return
        future, pending, in_commit = inflight
        try:
            future.result()
        except BaseException:
            if future.done():  # the write failed: nothing is left running
                self._inflight = None
            raise  # interrupted while waiting: ``_drain`` still waits for the write
        self._inflight = None
        assert self.state is not None
        self.state.commit_window(pending, in_commit)

    def _drain(self) -> None:
        """Let a write still running finish, without committing it (error paths)."""
        inflight, self._inflight = self._inflight, None
        if inflight is not None:
            inflight[0].exception()

    def _enqueue(self, conn: Any, items: Sequence[Item]) -> None:
        """Queue a window's events for the remote outputs, in the window's own commit."""
        sinks = self.options.remote_sinks
        if not sinks or not items:
            return
        from telltale.sinks import outbox

        if outbox.capacity_exceeded(conn, self.options.outbox_capacity):
            self.outbox_full = True
            return
        selectors = self.options.sink_selectors
        everything = [name for name in sinks if name not in selectors]
        if everything:
            outbox.enqueue(conn, everything, items)
        if selectors:
            # Each output stores only what it takes: an event's head is read once for all of them.
            from telltale.sinks.select import event_head

            heads = [event_head(line) for _, line in items]
            for name in sinks:
                selector = selectors.get(name)
                if selector is not None:
                    taken = [item for item, head in zip(items, heads, strict=True) if selector.takes_head(head)]
                    if taken:
                        outbox.enqueue(conn, [name], taken)

    def _recovered_commit(self, pending: PendingWindow, data: bytes) -> Callable[[Any], None]:
        """Re-derive a recovered window's items from the bytes already in the JSONL log:
        queued for the remote outputs and indexed, in the commit that installs its cursors."""
        items: list[Item] = []
        for line in data.splitlines():
            try:
                event_id = _id_decoder.decode(line).event.id
            except msgspec.DecodeError:
                continue
            items.append((event_id, line))

        lines = data.split(b"\n")[:-1]  # every line of the window ends with a newline

        def commit(conn: Any) -> None:
            self._enqueue(conn, items)
            index_window(
                conn, device=pending.log_device, inode=pending.log_inode, start=pending.start_size, lines=lines,
                ids=[event_id_of(line) or "" for line in lines], observations=None, content=self.options.content,
            )

        return commit

    def emit(self, docs: Sequence[dict[str, Any]]) -> int:
        """Write extra documents (e.g. delivery alerts) as one window of their own."""
        window = _Window()
        window.add([_item(doc) for doc in docs])
        return self._flush(window, wait=True)

    def _alerts(
        self,
        scan_id: str,
        reports: Sequence[SourceReport],
        errors: Sequence[dict[str, Any]],
        duration: float,
        observed: str,
    ) -> list[dict[str, Any]]:
        opts = self.options
        alerts: list[dict[str, Any]] = []
        claude = [r for r in reports if r.client == "claude" and r.status != "unchanged"]
        if not opts.targeted and claude and all(r.status == "error" for r in claude):
            alerts.append(
                operational_alert(
                    scan_id=scan_id,
                    alert_type="source_parse_outage",
                    severity="warning",
                    summary=f"every selected Claude Code source failed ({len(claude)})",
                    observed_at=observed,
                    fields={"client": "claude", "failed_sources": len(claude)},
                )
            )
        if len(errors) >= opts.scanner_error_threshold > 0:
            alerts.append(
                operational_alert(
                    scan_id=scan_id,
                    alert_type="scanner_error_threshold_exceeded",
                    severity="warning",
                    summary=f"{len(errors)} sources failed in one scan",
                    observed_at=observed,
                    fields={"scanner_error_count": len(errors), "threshold": opts.scanner_error_threshold},
                )
            )
        if self.outbox_full:
            alerts.append(
                operational_alert(
                    scan_id=scan_id,
                    alert_type="outbox_capacity_reached",
                    severity="high",
                    summary="the delivery outbox is full; new events stay in the local JSONL log only",
                    observed_at=observed,
                    fields={"capacity": opts.outbox_capacity, "sinks": list(opts.remote_sinks)},
                )
            )
        if opts.scan_duration_threshold_seconds > 0 and duration > opts.scan_duration_threshold_seconds:
            alerts.append(
                operational_alert(
                    scan_id=scan_id,
                    alert_type="scan_duration_threshold_exceeded",
                    severity="warning",
                    summary=f"scan took {duration:.1f}s",
                    observed_at=observed,
                    fields={"duration_s": round(duration, 3), "threshold_s": opts.scan_duration_threshold_seconds},
                )
            )
        return alerts


#: ``meta`` key prefix marking a source reported removed (value: when, epoch seconds).
REMOVED_PREFIX = "removed:"
#: How long a removed source's cursor row is kept (a restored file is not re-read).
REMOVED_RETENTION = 30 * 86_400.0


class StreamMemory:
    """What a ``--log-path -`` process has written to stdout, so that its next scan (watch,
    ``--interval-seconds``) continues from there without writing the state."""

    def __init__(self, out: Any = None) -> None:
        self.out = out
        self.cursors: dict[str, bytes] = {}
        self.fingerprints: dict[str, str] = {}
        self.unsupported: dict[str, str] = {}
        #: Detection windows, newest per session (the scan's pending windows, kept).
        self.windows: dict[str, bytes] = {}

    def write(
        self, lines: Sequence[bytes], cursors: dict[str, CursorUpdate], fingerprints: dict[str, str],
        unsupported: dict[str, str],
    ) -> int:
        out = self.out or sys.stdout.buffer
        if lines:
            out.write(b"".join(line + b"\n" for line in lines))
            out.flush()
        self.cursors.update((key, update.cursor) for key, update in cursors.items())
        self.fingerprints.update(fingerprints)
        self.unsupported.update(unsupported)
        return len(lines)


class _QuarantineOverflow:
    """Quarantines of one source and run past the individually reported ones."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.first: Quarantine | None = None
        self.last: Quarantine | None = None

    def add(self, q: Quarantine) -> None:
        self.counts[q.reason] = self.counts.get(q.reason, 0) + 1
        if self.first is None:
            self.first = q
        self.last = q

    def event(self, source: Source, observed: str) -> dict[str, Any]:
        assert self.first is not None and self.last is not None
        return quarantine_aggregate(self.first, self.last, self.counts, client=source.client, observed_at=observed)


def _would_emit(det: Any) -> dict[str, Any]:
    """What a dry run reports of one alert it would write (ids and counts, no content)."""
    return {
        "detection_id": det.detection_id,
        "rule_id": det.rule_id,
        "severity": det.severity,
        "score": det.score,
        "count": det.count,
        "client": det.client,
        "session_id": det.session_id,
        "first_seen": det.first_seen,
        "last_seen": det.last_seen,
    }


def _brief(doc: dict[str, Any], det: Any) -> DetectionBrief:
    """A detection as the summary lists it, from its event document: the values there are
    redacted already and follow the content mode (with ``none`` no command, path or cwd)."""
    telltale = doc.get("telltale") or {}
    detection = telltale.get("detection") or {}
    rule = doc.get("rule") or {}
    where = (
        (doc.get("process") or {}).get("command_line")
        or (doc.get("file") or {}).get("path")
        or (doc.get("url") or {}).get("full")
        or detection.get("excerpt")
    )
    session = ((doc.get("gen_ai") or {}).get("conversation") or {}).get("id")
    return DetectionBrief(
        severity=str(detection.get("severity") or det.severity),
        score=float(detection.get("score") or det.score or 0),
        title=str(rule.get("name") or rule.get("id") or "detection"),
        rule_id=str(rule.get("id") or ""),
        client=str(telltale.get("client") or ""),
        session_id=str(session) if session else None,
        project=str(telltale["cwd"]) if telltale.get("cwd") else None,
        where=str(where) if where else None,
        count=int(getattr(det, "count", 1) or 1),
    )


def _account_of(path: str, homes: Sequence[tuple[str, str]]) -> str:
    """The account whose home holds ``path`` (the deepest home that does), or ``""``."""
    best, owner = -1, ""
    for home, user in homes:
        prefix = home.rstrip("/\\")
        inside = path == prefix or (path.startswith(prefix) and path[len(prefix)] in "/\\")
        if inside and len(prefix) > best:
            best, owner = len(prefix), user
    return owner


def _reset_event(source: Source, restart: Restart) -> dict[str, Any]:
    return source_reset(
        kind=source.kind, client=source.client, path=source.path, reason=restart.reason,
        previous_offset=restart.previous_offset, previous_size=restart.previous_size, size=restart.size,
        previous_head=restart.previous_head, head=restart.head, previous_inode=restart.previous_inode,
        inode=restart.inode, observed_at=utc_now(),
    )


def _restored_cursor(cursor: bytes | None, source: Source) -> bytes | None:
    """A JSONL cursor carried over to the restored file's identity (head and tail
    fingerprints still have to match); any other cursor as it is."""
    prior = decode_cursor(cursor)
    if prior is None:
        return cursor
    try:
        st = os.stat(source.path, follow_symlinks=False)
    except OSError:
        return cursor
    return encode_cursor(msgspec.structs.replace(prior, device=st.st_dev, inode=st.st_ino))


def _unread_bytes(source: Source, cursor: bytes | None, size: int | None = None) -> int:
    """About how many bytes of a source a scan will read: its size (``size``: as discovery
    listed it) past a JSONL cursor's offset, or its whole size (a database, a document:
    the cursor says nothing of bytes); 0 for a source that is gone."""
    if size is None:
        try:
            size = os.stat(source.path).st_size
        except OSError:
            return 0
    prior = decode_cursor(cursor)
    return max(size - prior.offset, 0) if prior is not None else size


def _client_of(kind: str) -> str:
    try:
        return spec_for(kind).client
    except KeyError:
        return kind.partition(".")[0]


def _float(raw: bytes) -> float:
    try:
        return float(raw.decode())
    except (UnicodeDecodeError, ValueError):
        return 0.0


def _iso(epoch: float | None) -> str | None:
    if not epoch:
        return None
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _IdEvent(msgspec.Struct):
    id: str


class _IdDoc(msgspec.Struct):
    event: _IdEvent


_id_decoder = msgspec.json.Decoder(_IdDoc)


def _summary_for_event(summary: dict[str, Any]) -> dict[str, Any]:
    """The scan summary as carried in the health event (per-source list bounded)."""
    out = dict(summary)
    sources = out.pop("sources", [])
    out["sources"] = sources[:200]
    out["sources_truncated"] = len(sources) > 200
    return out


def _read_only_state(path: str) -> StateStore:
    store = StateStore.__new__(StateStore)
    store.path = path
    import sqlite3

    store.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    note_sqlite_open(path)
    return store
