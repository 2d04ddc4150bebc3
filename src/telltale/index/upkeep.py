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
import sqlite3
from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

import msgspec

from telltale.digest import blake2b
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
    """A 60-bit key for an ``event.id``: its first 15 hex digits (hashed when it is not hex)."""
    try:
        if len(event_id) >= 15:
            return int(event_id[:15], 16)
    except ValueError:
        pass
    return int.from_bytes(blake2b(event_id.encode(), digest_size=8).digest(), "big") >> 4


#: Bucket of each minute met (``YYYY-MM-DDTHH:MM``, canonical UTC times): one parse per minute.
_BUCKETS: dict[str, int] = {}


def bucket_of(at: str) -> int:
    """The 15-minute UTC bucket (epoch seconds) of an event time."""
    if len(at) >= 16 and at.endswith("Z"):
        minute = at[:16]
        bucket = _BUCKETS.get(minute)
        if bucket is None:
            if len(_BUCKETS) > 100_000:
                _BUCKETS.clear()
            bucket = _BUCKETS[minute] = _parse_bucket(minute + ":00Z")
        return bucket
    return _parse_bucket(at)


def _parse_bucket(at: str) -> int:
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

    __slots__ = ("ctx", "detections", "events", "first", "last", "messages", "risk", "severity", "spans", "tool_calls")

    def __init__(self) -> None:
        self.ctx: tuple[Any, ...] | None = None
        #: (points, severity number, occurrences) of the window's last risk rollup.
        self.risk: tuple[int, int, int] | None = None
        self.events = self.messages = self.tool_calls = self.detections = self.severity = 0
        self.first: str | None = None
        self.last: str | None = None
        self.spans: list[list[int]] = []


class _Batch:
    """The facts of one window, gathered before they are written."""

    def __init__(self, file_id: int, rowids: dict[tuple[str, str], int]) -> None:
        self.file_id = file_id
        self.rowids = rowids
        self.sessions: dict[tuple[str, str], _Session] = {}
        #: (key, session key, model, at, tokens, hash of the agent's response id or None) of
        #: each usage event, in log order.
        self.responses: list[tuple[str, tuple[str, str], str, str, tuple[int, int, int, int, int], int | None]] = []
        self.detections: list[tuple[Any, ...]] = []
        self.health: list[tuple[Any, ...]] = []
        self.scans: list[tuple[Any, ...]] = []
        self._span_key: tuple[str, str] | None = None
        self._span: list[int] | None = None

    def span(self, key: tuple[str, str], offset: int, end: int) -> _Session:
        """The session's accumulator, its byte span grown by ``[offset, end)``."""
        s = self.sessions.get(key)
        if s is None:
            s = self.sessions[key] = _Session()
        span = self._span
        if self._span_key == key and span is not None and span[1] == offset:
            span[1] = end
        else:
            self._span = [offset, end]
            self._span_key = key
            s.spans.append(self._span)
        return s

    def session(self, key: tuple[str, str], at: str | None, offset: int, end: int) -> _Session:
        """One event of a session, read from its line."""
        s = self.span(key, offset, end)
        s.events += 1
        if at:
            if s.first is None or at < s.first:
                s.first = at
            if s.last is None or at > s.last:
                s.last = at
        return s

    # -- the two front ends ------------------------------------------------------------
    def run(
        self, run: Sequence[Observation], lines: Sequence[bytes], first: int, key: tuple[str, str], offset: int,
        end: int, content: str,
    ) -> None:
        """Consecutive new events of one session (``lines[first:]`` are theirs), in bytes
        ``[offset, end)`` of the log: counted, timed and spanned at once."""
        stamps = [o.occurred_at for o in run]
        if None in stamps or "" in stamps:  # observed time: only the line has it
            stamps = [t or documents.decode_document(lines[first + k]).timestamp for k, t in enumerate(stamps)]
        times: list[str] = stamps  # type: ignore[assignment]  # every one is set now
        s = self.span(key, offset, end)
        s.events += len(run)
        lo, hi = min(times), max(times)
        if s.first is None or lo < s.first:
            s.first = lo
        if s.last is None or hi > s.last:
            s.last = hi
        # Counted as the log's ``event.action`` says: a message or usage has no stage, a call is requested.
        families = [o.family for o in run]
        if _MESSAGE in families:
            s.messages += [o.stage for o in run if o.family is _MESSAGE].count(None)
        if _TOOL in families:
            s.tool_calls += [o.stage for o in run if o.family is _TOOL].count(_REQUESTED)
        if _USAGE in families:
            responses = self.responses
            for k, o in enumerate(run):
                u = o.usage
                if u is not None and o.family is _USAGE and o.stage is None:
                    rid = o.response_id
                    responses.append(
                        (rid or o.observation_id, key, o.model or "", times[k], tokens(u, u.total_tokens),
                         _response_hash(rid) if rid else None)
                    )  # fmt: skip
        if s.ctx is None:
            s.ctx = _context_of_observation(run[0], content)

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
                        _response_hash(tt.response_id) if tt.response_id else None,
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
        elif dataset == "telltale.session_risk":
            risk = tt.session_risk
            if key is None or risk is None or risk.total_points is None:
                return
            s = self.sessions.get(key) or self.sessions.setdefault(key, _Session())  # not an event of its timeline
            s.risk = (risk.total_points, SEVERITY_NUMBER.get(risk.severity or "", 0), risk.occurrences or 0)
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


def _doc_key(doc: documents.Document | None) -> tuple[str, str] | None:
    if doc is None:
        return None
    gen_ai = doc.gen_ai
    session_id = gen_ai.conversation.id if gen_ai is not None and gen_ai.conversation is not None else None
    return (doc.telltale.client or "", session_id) if session_id else None


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
    n = len(lines)
    if not n:
        return 0
    obs_of: Sequence[Observation | None] = observations if observations is not None else [None] * n
    # Runs of consecutive lines of one session (a transcript's events come in long runs);
    # a line without its observation is a run of its own, read back.
    runs: list[tuple[tuple[str, str] | None, int, int, documents.Document | None]] = []
    decode = documents.decode_document
    i = 0
    while i < n:
        o = obs_of[i]
        if o is None:
            try:
                doc: documents.Document | None = decode(lines[i])
            except (msgspec.DecodeError, ValueError):
                doc = None
            runs.append((_doc_key(doc), i, i + 1, doc))
            i += 1
            continue
        sid, client = o.session_id, o.client
        j = i + 1
        while j < n and (p := obs_of[j]) is not None and p.session_id == sid and p.client == client:
            j += 1
        runs.append(((client, sid) if sid else None, i, j, None))
        i = j
    rowids = _session_rowids(conn, {r[0] for r in runs if r[0] is not None})
    owners: list[int] = []
    for key, a, b, _ in runs:
        owners += [rowids[key] if key is not None else 0] * (b - a)
    fresh = _unseen(conn, owners, ids)
    batch = _Batch(file_id(conn, device, inode), rowids)
    # Byte offset of line i: start + (lengths of the lines before it) + i newlines.
    before = list(accumulate(map(len, lines), initial=start))
    for key, a, b, doc in runs:
        if doc is not None:
            if fresh[a]:
                batch.document(doc, before[a] + a, before[b] + b)
            continue
        if key is None:
            continue
        while a < b:  # the new lines of the run, in stretches (a duplicate splits a run)
            if not fresh[a]:
                a += 1
                continue
            c = a + 1
            while c < b and fresh[c]:
                c += 1
            batch.run(obs_of[a:c], lines, a, key, before[a] + a, before[c] + c, content)  # type: ignore[arg-type]
            a = c
    _write(conn, batch)
    return sum(fresh)


def _keys(ids: Sequence[str]) -> list[int]:
    try:
        return [int(i[:15], 16) for i in ids]  # the ids Telltale makes are hex digests
    except ValueError:
        return [id64(i) for i in ids]


def _session_rowids(conn: sqlite3.Connection, keys: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
    """The rowid of each session (created, empty, when new)."""
    if not keys:
        return {}
    out: dict[tuple[str, str], int] = {}
    wanted = _json.encode(sorted(keys))
    for rowid, client, session_id in conn.execute(
        "SELECT id, client, session_id FROM ix_sessions WHERE (client, session_id) IN"
        " (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))",
        (wanted,),
    ):
        out[(client, session_id)] = int(rowid)
    for key in sorted(keys - out.keys()):
        row = conn.execute("INSERT INTO ix_sessions(client, session_id) VALUES (?, ?) RETURNING id", key).fetchone()
        out[key] = int(row[0])
    return out


def _unseen(conn: sqlite3.Connection, owners: Sequence[int], ids: Sequence[str]) -> list[bool]:
    """For each line, whether its event is new; records the new ones as seen.

    The seen ids are kept per session as packed 64-bit arrays, one row per session and
    window: a window reads the arrays of the sessions it touches (duplicates come from
    re-reading a source, so they fall in the same sessions) and appends one row per
    session, instead of inserting into an index keyed by hashes all over the set.
    """
    keys = _keys(ids)
    seen: set[int] = set()
    sessions = _json.encode(sorted(set(owners)))
    query = "SELECT ids FROM ix_seen WHERE session IN (SELECT value FROM json_each(?))"
    for (blob,) in conn.execute(query, (sessions,)):
        seen.update(array("q", blob))
    if seen.isdisjoint(keys) and len(set(keys)) == len(keys) and all(ids):
        fresh = [True] * len(keys)
    else:
        fresh = []
        for position, key in enumerate(keys):
            if key in seen or not ids[position]:
                fresh.append(False)
                continue
            seen.add(key)  # a second copy inside the window is a duplicate too
            fresh.append(True)
    by_session: dict[int, array[int]] = {}
    for owner, key, new in zip(owners, keys, fresh, strict=True):
        if new:
            packed = by_session.get(owner)
            if packed is None:
                packed = by_session[owner] = array("q")
            packed.append(key)
    conn.executemany(
        "INSERT INTO ix_seen(session, ids) VALUES (?, ?)", [(k, v.tobytes()) for k, v in by_session.items()]
    )
    return fresh


_UPDATE_SESSION = """
UPDATE ix_sessions SET
    agent = coalesce(agent, :agent),
    agent_version = coalesce(:version, agent_version),
    cwd = coalesce(cwd, :cwd),
    cwd_hash = coalesce(cwd_hash, :cwd_hash),
    parent_session_id = coalesce(parent_session_id, :parent),
    parent_call_id = coalesce(parent_call_id, :call),
    first_at = CASE WHEN first_at IS NULL OR :first < first_at THEN :first ELSE first_at END,
    last_at = CASE WHEN last_at IS NULL OR :last > last_at THEN :last ELSE last_at END,
    events = events + :events,
    messages = messages + :messages,
    tool_calls = tool_calls + :tools,
    detections = detections + :detections,
    max_severity = max(max_severity, :severity),
    risk_points = coalesce(:risk_points, risk_points),
    risk_severity = CASE WHEN :risk_points IS NULL THEN risk_severity ELSE :risk_severity END,
    risk_occurrences = coalesce(:risk_occurrences, risk_occurrences)
WHERE id = :id
"""
_CONTEXT = ("agent", "version", "cwd", "cwd_hash", "parent", "call")


def _write(conn: sqlite3.Connection, batch: _Batch) -> None:
    spans: list[tuple[int, int, int, int]] = []
    for key, s in batch.sessions.items():
        rowid = batch.rowids[key]
        ctx = s.ctx or (None, None, None, None, None, None)
        values = dict(zip(_CONTEXT, ctx, strict=True))
        values.update(first=s.first, last=s.last, events=s.events, messages=s.messages, tools=s.tool_calls,
                      detections=s.detections, severity=s.severity, id=rowid)  # fmt: skip
        points, level, occurrences = s.risk or (None, 0, None)
        values.update(risk_points=points, risk_severity=level, risk_occurrences=occurrences)
        conn.execute(_UPDATE_SESSION, values)
        spans.extend((rowid, batch.file_id, a, b) for a, b in s.spans)
    conn.executemany("INSERT INTO ix_spans(session, file, start, end) VALUES (?,?,?,?)", spans)
    if batch.responses:
        _responses(conn, batch, batch.rowids)
    if batch.detections:
        conn.executemany(
            "INSERT OR IGNORE INTO ix_detections(id, at, session, client, rule_id, rule_name, severity, severity_name,"
            " score, category, message, tool, evidence, file, offset, length) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(d[0], d[1], batch.rowids.get(d[2]) if d[2] else None, *d[3:]) for d in batch.detections],
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


def _responses(conn: sqlite3.Connection, batch: _Batch, sessions: dict[tuple[str, str], int]) -> None:
    """Usage: each response once, the last line winning; the rollups move by deltas.

    A response keyed by its ``event.id`` is new (its event is) and only adds to its
    bucket. One with the agent's own response identity may have been met before, in this
    window or an earlier one: what it added then is taken back first (``ix_responses``).
    """
    hashes = sorted({r[5] for r in batch.responses if r[5] is not None})
    known: dict[int, tuple[Any, ...]] = {}  # hash -> (session, bucket, model, 5 counts)
    if hashes:
        for row in conn.execute(
            "SELECT hash, session, bucket, model, input, cache_creation, cache_read, output, total FROM ix_responses"
            " WHERE hash IN (SELECT value FROM json_each(?))",
            (_json.encode(hashes),),
        ):
            known[row[0]] = row[1:]
    changed: dict[int, tuple[Any, ...]] = {}
    parts: dict[tuple[int, int, str], list[tuple[int, ...]]] = {}  # (bucket, session, model) -> signed entries
    buckets = _BUCKETS
    for _key, skey, model, at, t, h in batch.responses:
        session = sessions[skey]
        bucket = buckets.get(at[:16]) if at.endswith("Z") else None
        if bucket is None:
            bucket = bucket_of(at)
        if h is not None:
            old = known.get(h)
            if old is not None:
                parts.setdefault((old[1], old[0], old[2]), []).append((-1, -old[3], -old[4], -old[5], -old[6], -old[7]))
            known[h] = changed[h] = (session, bucket, model, *t)
        parts.setdefault((bucket, session, model), []).append((1, *t))
    conn.executemany(
        "INSERT OR REPLACE INTO ix_responses(hash, session, bucket, model, input, cache_creation, cache_read, output,"
        " total) VALUES (?,?,?,?,?,?,?,?,?)",
        [(h, *v) for h, v in changed.items()],
    )
    usage = {k: tuple(map(sum, zip(*v, strict=True))) for k, v in parts.items()}
    conn.executemany(
        "INSERT INTO ix_usage(bucket, session, model, responses, input, cache_creation, cache_read, output, total)"
        " VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(bucket, session, model) DO UPDATE SET"
        " responses = responses + excluded.responses, input = input + excluded.input,"
        " cache_creation = cache_creation + excluded.cache_creation, cache_read = cache_read + excluded.cache_read,"
        " output = output + excluded.output, total = total + excluded.total",
        [(*k, *v) for k, v in usage.items()],
    )
    conn.executemany(
        "DELETE FROM ix_usage WHERE bucket = ? AND session = ? AND model = ? AND responses <= 0",
        [k for k, v in usage.items() if v[0] < 0],
    )
    totals: dict[int, list[int]] = {}
    for (_, session, _), v in usage.items():
        tot = totals.setdefault(session, [0, 0, 0, 0, 0])
        for j in range(5):
            tot[j] += v[j + 1]
    conn.executemany(
        "UPDATE ix_sessions SET input = input + ?, cache_creation = cache_creation + ?, cache_read = cache_read + ?,"
        " output = output + ?, total = total + ? WHERE id = ?",
        [(*v, k) for k, v in totals.items()],
    )


def _response_hash(key: str) -> int:
    """A 60-bit key for an agent's response identity."""
    return int.from_bytes(blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest(), "big") >> 4
