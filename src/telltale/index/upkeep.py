"""Index upkeep: one written window of log lines into the index tables.

The scan calls :func:`index_window` inside the transaction that commits the window's
cursors, with the observations its activity lines were built from (no line is decoded
again on that path: a decode would cost more than the 10% of a scan the index may
take). Detection and health lines, and every line during ``index rebuild``, are read
back through the narrow views of :mod:`telltale.index.documents`. Both paths feed the
same :class:`_Batch`, so an index kept by scans equals one rebuilt from the log.

Every event counts once by ``event.id`` (``ix_seen``); every provider response once by
the agent's own response identity when it has one (Claude: ``message.id`` +
``requestId``), the line indexed last winning, so a response copied into a resumed or
subagent transcript is not counted twice.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from collections.abc import Sequence
from typing import Any

import msgspec

from telltale.index import documents
from telltale.index.schema import BUCKET_SECONDS
from telltale.model import Family, Observation, Stage, TokenUsage

#: Severity names of detections, as numbers (the ECS ``event.severity`` of detection events).
SEVERITY_NUMBER = {"informational": 1, "low": 21, "medium": 47, "high": 73, "critical": 99}
#: Evidence entries kept per detection in the index (the log holds them all).
EVIDENCE_KEPT = 5
_EVIDENCE_CHARS = 512
_CHUNK = 900

_json = msgspec.json.Encoder()
_TOOL, _MESSAGE, _USAGE = Family.TOOL, Family.MESSAGE, Family.USAGE
_REQUESTED = Stage.REQUESTED


def id64(event_id: str) -> int:
    """A signed 64-bit key for an ``event.id`` (its first 16 hex digits; hashed otherwise)."""
    try:
        if len(event_id) >= 16:
            return int(event_id[:16], 16) - (1 << 63)
    except ValueError:
        pass
    return int.from_bytes(hashlib.blake2b(event_id.encode(), digest_size=8).digest(), "big") - (1 << 63)


def bucket_of(at: str) -> int:
    """The 15-minute UTC bucket (epoch seconds) of an event time."""
    try:
        moment = dt.datetime.fromisoformat(at)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    seconds = int(moment.timestamp())
    return seconds - seconds % BUCKET_SECONDS


def tokens(usage: TokenUsage | documents.Usage, reported_total: int | None) -> tuple[int, int, int, int, int]:
    """(input without cache, cache creation, cache read, output, total): ccusage's columns.

    The canonical input counts every input token, cached ones included; the cache parts
    are clamped to it (a Codex count of cached tokens above the input is the input).
    """
    if isinstance(usage, TokenUsage):
        total_in = usage.input_tokens or 0
        read = usage.cache_read_input_tokens or 0
        created = usage.cache_creation_input_tokens or 0
    else:
        total_in = usage.input_tokens or 0
        read = (usage.cache_read.input_tokens or 0) if usage.cache_read else 0
        created = (usage.cache_creation.input_tokens or 0) if usage.cache_creation else 0
    output = usage.output_tokens or 0
    read = min(read, total_in)
    created = min(created, total_in - read)
    fresh = total_in - read - created
    total = reported_total if reported_total else total_in + output
    return fresh, created, read, output, total


class _Session:
    """What one window adds to one session."""

    __slots__ = ("ctx", "detections", "events", "first", "last", "messages", "severity", "spans", "tool_calls")

    def __init__(self) -> None:
        self.ctx: tuple[Any, ...] | None = None
        self.events = self.messages = self.tool_calls = self.detections = self.severity = 0
        self.first: str | None = None
        self.last: str | None = None
        self.spans: list[list[int]] = []


class _Batch:
    """The facts of one window, gathered before they are written."""

    def __init__(self, file_id: int) -> None:
        self.file_id = file_id
        self.sessions: dict[tuple[str, str], _Session] = {}
        #: (key, session key, model, at, tokens) of each usage event, in log order.
        self.responses: list[tuple[str, tuple[str, str], str, str, tuple[int, int, int, int, int]]] = []
        self.detections: list[tuple[Any, ...]] = []
        self.health: list[tuple[Any, ...]] = []
        self.scans: list[tuple[Any, ...]] = []
        self._span_key: tuple[str, str] | None = None
        self._span: list[int] | None = None

    def session(self, key: tuple[str, str], at: str | None, offset: int, end: int) -> _Session:
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = _Session()
        s.events += 1
        if at:
            if s.first is None or at < s.first:
                s.first = at
            if s.last is None or at > s.last:
                s.last = at
        span = self._span
        if self._span_key == key and span is not None and span[1] == offset:
            span[1] = end
        else:
            self._span = [offset, end]
            self._span_key = key
            s.spans.append(self._span)
        return s

    # -- the two front ends ------------------------------------------------------------
    def observation(self, obs: Observation, line: bytes, offset: int, end: int, content: str) -> None:
        session_id = obs.session_id
        if not session_id:
            return
        at = obs.occurred_at
        if not at:
            at = documents.decode_document(line).timestamp  # observed time: only the line has it
        key = (obs.client, session_id)
        s = self.session(key, at, offset, end)
        family = obs.family
        if family is _TOOL:
            if obs.stage is _REQUESTED:
                s.tool_calls += 1
        elif family is _MESSAGE:
            s.messages += 1
        elif family is _USAGE and obs.usage is not None and obs.stage is None:
            self.responses.append(
                (
                    obs.response_id or obs.observation_id,
                    key,
                    obs.model or "",
                    at,
                    tokens(obs.usage, obs.usage.total_tokens),
                )
            )
        if s.ctx is None:
            s.ctx = _context_of_observation(obs, content)

    def document(self, doc: documents.Document, offset: int, end: int) -> None:
        event, tt, gen_ai = doc.event, doc.telltale, doc.gen_ai
        dataset = event.dataset
        session_id = gen_ai.conversation.id if gen_ai is not None and gen_ai.conversation is not None else None
        key = (tt.client or "", session_id) if session_id else None
        if dataset == "telltale.activity":
            if key is None:
                return
            s = self.session(key, doc.timestamp, offset, end)
            action = event.action
            if action == "tool_call":
                s.tool_calls += 1
            elif action == "message":
                s.messages += 1
            elif action == "usage" and gen_ai is not None and gen_ai.usage is not None:
                model = gen_ai.request.model if gen_ai.request is not None else None
                self.responses.append(
                    (
                        tt.response_id or event.id,
                        key,
                        model or "",
                        doc.timestamp,
                        tokens(gen_ai.usage, tt.usage_total_tokens),
                    )
                )
            if s.ctx is None:
                s.ctx = _context_of_document(doc)
        elif dataset == "telltale.detection":
            det = tt.detection or documents.Detection()
            severity = SEVERITY_NUMBER.get(det.severity or "", event.severity or 0)
            if key is not None:
                s = self.session(key, doc.timestamp, offset, end)
                s.detections += 1
                s.severity = max(s.severity, severity)
            rule = doc.rule or documents.Rule()
            evidence = [
                {"field": e.field, "value": (e.value or "")[:_EVIDENCE_CHARS]} for e in det.evidence[:EVIDENCE_KEPT]
            ]
            tool = gen_ai.tool.name if gen_ai is not None and gen_ai.tool is not None else None
            self.detections.append(
                (
                    event.id, doc.timestamp, key, tt.client, rule.id, rule.name, severity, det.severity,
                    det.score, rule.category or (det.categories[0] if det.categories else None), doc.message,
                    tool, _json.encode(evidence).decode(), self.file_id, offset, end - offset,
                )
            )  # fmt: skip
        elif dataset == "telltale.health":
            if event.action == "scan_summary":
                summary = tt.scan or documents.ScanSummary()
                sources = bytes(summary.sources).decode()
                self.scans.append(
                    (
                        tt.scan_id or event.id, doc.timestamp, summary.duration_s, summary.emitted_count,
                        summary.quarantined_count, summary.scanner_error_count, summary.detection_count, sources,
                    )
                )  # fmt: skip
                return
            kind = tt.source.kind if tt.source is not None else None
            self.health.append(
                (
                    event.id, doc.timestamp, event.action, event.kind,
                    tt.alert_type or (doc.error.code if doc.error is not None else None),
                    tt.severity or (doc.log.level if doc.log is not None else None),
                    tt.client, kind, (doc.message or "")[:_EVIDENCE_CHARS], self.file_id, offset, end - offset,
                )
            )  # fmt: skip


def _context_of_observation(obs: Observation, content: str) -> tuple[Any, ...]:
    """(agent, version, cwd, cwd_hash, parent session, parent call) as the log holds them."""
    from telltale.events.activity import outgoing_session_fields

    cwd, cwd_hash, attributes = outgoing_session_fields(obs, content)
    return (obs.agent, attributes.get("version"), cwd, cwd_hash, obs.parent_session_id, obs.parent_call_id)


def _context_of_document(doc: documents.Document) -> tuple[Any, ...]:
    tt, gen_ai = doc.telltale, doc.gen_ai
    agent = gen_ai.agent.name if gen_ai is not None and gen_ai.agent is not None else None
    version = (tt.attributes or {}).get("version")
    return (agent, version, tt.cwd, tt.cwd_hash, tt.parent_session_id, tt.parent_call_id)


# -- entry point ---------------------------------------------------------------------------


def file_id(conn: sqlite3.Connection, device: int, inode: int) -> int:
    conn.execute("INSERT OR IGNORE INTO ix_files(device, inode) VALUES (?, ?)", (device, inode))
    row = conn.execute("SELECT id FROM ix_files WHERE device = ? AND inode = ?", (device, inode)).fetchone()
    return int(row[0])


def index_window(
    conn: sqlite3.Connection,
    *,
    device: int,
    inode: int,
    start: int,
    lines: Sequence[bytes],
    ids: Sequence[str],
    observations: Sequence[Observation | None] | None,
    content: str,
) -> int:
    """Index ``lines``, written at byte ``start`` of the log file (device, inode).

    ``ids`` are the lines' ``event.id``s; ``observations[i]`` is the observation line
    ``i`` was built from, or ``None`` (the line is then read back). Returns the number
    of events that were new to the index.
    """
    if not lines:
        return 0
    fresh = _unseen(conn, ids)
    batch = _Batch(file_id(conn, device, inode))
    offset = start
    decode = documents.decode_document
    for i, line in enumerate(lines):
        end = offset + len(line) + 1
        if i in fresh:
            obs = observations[i] if observations is not None else None
            if obs is not None:
                batch.observation(obs, line, offset, end, content)
            else:
                try:
                    doc = decode(line)
                except (msgspec.DecodeError, ValueError):
                    doc = None
                if doc is not None:
                    batch.document(doc, offset, end)
        offset = end
    _write(conn, batch)
    return len(fresh)


def _unseen(conn: sqlite3.Connection, ids: Sequence[str]) -> set[int]:
    """Positions of the lines whose event is new; marks them seen."""
    keys = [id64(i) for i in ids]
    seen: set[int] = set()
    for first in range(0, len(keys), _CHUNK):
        chunk = keys[first : first + _CHUNK]
        marks = ",".join("?" * len(chunk))
        seen.update(r[0] for r in conn.execute(f"SELECT id FROM ix_seen WHERE id IN ({marks})", chunk))
    fresh: set[int] = set()
    new: list[tuple[int]] = []
    for position, key in enumerate(keys):
        if key in seen or not ids[position]:
            continue
        seen.add(key)  # a second copy inside the window is a duplicate too
        fresh.add(position)
        new.append((key,))
    conn.executemany("INSERT INTO ix_seen(id) VALUES (?)", new)
    return fresh


_UPSERT_SESSION = """
INSERT INTO ix_sessions(client, session_id, agent, agent_version, cwd, cwd_hash, parent_session_id,
    parent_call_id, first_at, last_at, events, messages, tool_calls, detections, max_severity)
VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
ON CONFLICT(client, session_id) DO UPDATE SET
    agent = coalesce(agent, excluded.agent),
    agent_version = coalesce(excluded.agent_version, agent_version),
    cwd = coalesce(cwd, excluded.cwd),
    cwd_hash = coalesce(cwd_hash, excluded.cwd_hash),
    parent_session_id = coalesce(parent_session_id, excluded.parent_session_id),
    parent_call_id = coalesce(parent_call_id, excluded.parent_call_id),
    first_at = CASE WHEN first_at IS NULL OR excluded.first_at < first_at THEN excluded.first_at ELSE first_at END,
    last_at = CASE WHEN last_at IS NULL OR excluded.last_at > last_at THEN excluded.last_at ELSE last_at END,
    events = events + excluded.events,
    messages = messages + excluded.messages,
    tool_calls = tool_calls + excluded.tool_calls,
    detections = detections + excluded.detections,
    max_severity = max(max_severity, excluded.max_severity)
RETURNING id, cwd, cwd_hash
"""


def _write(conn: sqlite3.Connection, batch: _Batch) -> None:
    rowids: dict[tuple[str, str], tuple[int, str]] = {}
    spans: list[tuple[int, int, int, int]] = []
    for key, s in batch.sessions.items():
        ctx = s.ctx or (None, None, None, None, None, None)
        row = conn.execute(
            _UPSERT_SESSION,
            (key[0], key[1], *ctx, s.first, s.last, s.events, s.messages, s.tool_calls, s.detections, s.severity),
        ).fetchone()
        rowids[key] = (int(row[0]), row[1] or row[2] or "")
        spans.extend((row[0], batch.file_id, a, b) for a, b in s.spans)
    conn.executemany("INSERT INTO ix_spans(session, file, start, end) VALUES (?,?,?,?)", spans)
    if batch.responses:
        _responses(conn, batch, rowids)
    if batch.detections:
        conn.executemany(
            "INSERT OR IGNORE INTO ix_detections(id, at, session, client, rule_id, rule_name, severity, severity_name,"
            " score, category, message, tool, evidence, file, offset, length) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(d[0], d[1], rowids[d[2]][0] if d[2] in rowids else None, *d[3:]) for d in batch.detections],
        )
    if batch.health:
        conn.executemany(
            "INSERT OR IGNORE INTO ix_health(id, at, action, kind, type, severity, client, source_kind, message,"
            " file, offset, length) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            batch.health,
        )
    if batch.scans:
        conn.executemany(
            "INSERT OR IGNORE INTO ix_scans(scan_id, at, duration_s, emitted, quarantined, errors, detections, sources)"
            " VALUES (?,?,?,?,?,?,?,?)",
            batch.scans,
        )


_Tokens = tuple[int, int, int, int, int]


def _responses(conn: sqlite3.Connection, batch: _Batch, rowids: dict[tuple[str, str], tuple[int, str]]) -> None:
    """Usage: each response once by its key, the last line winning; rollups moved by deltas."""
    keys = list({r[0] for r in batch.responses})
    current: dict[str, tuple[Any, ...]] = {}
    for first in range(0, len(keys), _CHUNK):
        chunk = keys[first : first + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            "SELECT key, session, client, model, project, bucket, input, cache_creation, cache_read, output, total"
            f" FROM ix_responses WHERE key IN ({marks})",
            chunk,
        ):
            current[row[0]] = tuple(row[1:])
    usage: dict[tuple[int, str, str, str], list[int]] = {}
    models: dict[tuple[int, str], list[int]] = {}
    totals: dict[int, list[int]] = {}

    def move(session: int | None, client: str, model: str, project: str, bucket: int, t: Sequence[int], sign: int
             ) -> None:  # fmt: skip
        u = usage.setdefault((bucket, client, model, project), [0, 0, 0, 0, 0, 0])
        u[0] += sign
        for j in range(5):
            u[j + 1] += sign * t[j]
        if session is not None:
            m = models.setdefault((session, model), [0, 0, 0, 0, 0, 0])
            m[0] += sign
            s = totals.setdefault(session, [0, 0, 0, 0, 0])
            for j in range(5):
                m[j + 1] += sign * t[j]
                s[j] += sign * t[j]

    for key, skey, model, at, t in batch.responses:
        session, project = rowids[skey]
        client = skey[0]
        bucket = bucket_of(at)
        old = current.get(key)
        if old is not None:
            move(old[0], old[1], old[2], old[3], old[4], old[5:10], -1)
        move(session, client, model, project, bucket, t, 1)
        current[key] = (session, client, model, project, bucket, *t)
    conn.executemany(
        "INSERT OR REPLACE INTO ix_responses(key, session, client, model, project, bucket, input, cache_creation,"
        " cache_read, output, total) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [(k, *v) for k, v in current.items()],
    )
    conn.executemany(
        "INSERT INTO ix_usage(bucket, client, model, project, responses, input, cache_creation, cache_read, output,"
        " total) VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT(bucket, client, model, project) DO UPDATE SET"
        " responses = responses + excluded.responses, input = input + excluded.input,"
        " cache_creation = cache_creation + excluded.cache_creation, cache_read = cache_read + excluded.cache_read,"
        " output = output + excluded.output, total = total + excluded.total",
        [(*k, *v) for k, v in usage.items()],
    )
    emptied = [k for k, v in usage.items() if v[0] < 0]
    conn.executemany(
        "DELETE FROM ix_usage WHERE bucket = ? AND client = ? AND model = ? AND project = ? AND responses <= 0", emptied
    )
    conn.executemany(
        "INSERT INTO ix_session_models(session, model, responses, input, cache_creation, cache_read, output, total)"
        " VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(session, model) DO UPDATE SET"
        " responses = responses + excluded.responses, input = input + excluded.input,"
        " cache_creation = cache_creation + excluded.cache_creation, cache_read = cache_read + excluded.cache_read,"
        " output = output + excluded.output, total = total + excluded.total",
        [(*k, *v) for k, v in models.items()],
    )
    conn.executemany(
        "DELETE FROM ix_session_models WHERE session = ? AND model = ? AND responses <= 0",
        [k for k, v in models.items() if v[0] < 0],
    )
    conn.executemany(
        "UPDATE ix_sessions SET input = input + ?, cache_creation = cache_creation + ?, cache_read = cache_read + ?,"
        " output = output + ?, total = total + ? WHERE id = ?",
        [(*v, k) for k, v in totals.items()],
    )
