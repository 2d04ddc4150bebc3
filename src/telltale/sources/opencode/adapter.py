"""OpenCode SQLite acquisition: schema choice, selections, windows and cursors.

One scan reads one schema from one read snapshot (:class:`~telltale.readers.sqlite.SqliteSnapshot`):

* **v2** when ``session_message`` is *complete*: it exists with every required column
  (``id, session_id, type, time_updated, data``) *and* holds at least one row. An empty
  ``session_message`` beside populated legacy tables is a store that has not moved yet.
* **legacy** ``message``/``part`` otherwise (required: ``message(id, session_id, data)``,
  ``part(id, message_id, time_updated, data)``; other columns are optional).

Legacy incremental scans select every text/tool/step-finish part (and every row whose JSON
does not parse, so it can be quarantined) with ``time_updated >= high-water − 10 min``, in
keyset pages of at most 5,000 by ``(time_updated, id)``; more than 25,000 selected parts
fail closed (``SourceError("saturated")``). The complete selection is mapped once, and the
messages it needs (plus every message updated in the window) are read with it.

v2 incremental scans drain ``session_message`` by ``(time_updated, id)`` in windows of at
most 5,000 rows and 8 MiB of retained ``data``, up to 64 windows per scan, each yielding a
batch whose cursor resumes exactly after it; a later scan continues a remainder. Only a
window whose first row alone exceeds 8 MiB fails.

The re-read overlap is de-duplicated by the cursor's *edge set*: the (``time_updated``,
observation id) of everything built from rows a later overlap will select again; those are
not emitted twice, while a row whose new revision builds a new observation (a tool part
moving from ``running`` to ``completed``) does emit it.

``HistoryMode.ALL`` reads everything from the earliest row in windows and returns no
cursor; ``BACKFILL``, ``dry_run`` and the first ordinary scan sample the newest 5,000
parts (rows); only the bootstrap installs a cursor, and a sample that left older parts out
is marked ``partial``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import msgspec

from telltale.errors import SourceError
from telltale.model import Observation, Quarantine, utf8_len
from telltale.readers.sqlite import Admission, Row, SqliteSnapshot, quote_ident
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.opencode import native
from telltale.sources.opencode.native import Context, Emitter, Item, Malformed
from telltale.sources.spec import Source

#: Restart overlap: every incremental selection starts this far before the high-water.
OVERLAP_MS = 600_000
#: Legacy keyset page and sampling size (parts); also the v2 window row limit.
PAGE_ROWS = 5_000
#: Largest legacy incremental selection mapped source-atomically.
MAX_SELECTION_PARTS = 25_000
#: v2 rolling windows per scan and the ``data`` bytes one window may retain.
V2_MAX_WINDOWS = 64
V2_RETAINED_BYTES = 8 * 1024 * 1024
#: Entries of the cursor's edge set (newest kept).
EDGE_MAX = 10_000
#: Observations per yielded batch.
BATCH_ITEMS = 2_000
#: Bound parameters per IN (...) query.
IN_CHUNK = 500

LEGACY = "legacy"
V2 = "v2"

LEGACY_MESSAGE_REQUIRED = ("id", "session_id", "data")
LEGACY_PART_REQUIRED = ("id", "message_id", "time_updated", "data")
V2_REQUIRED = ("id", "session_id", "type", "time_updated", "data")
SESSION_COLUMNS = ("id", "parent_id", "directory", "time_created")

# Text, tool and step-finish parts, plus rows whose JSON does not parse (to quarantine them).
# CASE keeps json_extract away from malformed rows (it would fail the whole query).
_PART_SELECTED = (
    "(CASE WHEN json_valid(data) THEN json_extract(data, '$.type') IN ('text', 'tool', 'step-finish')"
    " ELSE 1 END)"
)
_PART_IS_STEP_FINISH = " AND (CASE WHEN json_valid(data) THEN json_extract(data, '$.type') = 'step-finish' END)"


class OpenCodeCursor(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Resume point: schema, high-water ``time_updated`` and its tie-breaking id.

    ``resume`` (v2): a remainder is pending, continue exactly after ``(hw, id)``.
    ``edge``: what was emitted from rows the overlap re-reads, as ``[time_updated, keys]``
    where ``keys`` concatenates 12-hex-digit prefixes of observation (or quarantine) ids.
    """

    schema: str
    hw: int
    id: str = ""
    resume: bool = False
    edge: list[tuple[int, str]] = msgspec.field(default_factory=list)
    v: int = 1


_cursor_decoder = msgspec.json.Decoder(OpenCodeCursor)
_encoder = msgspec.json.Encoder()


def decode_cursor(raw: bytes | None) -> OpenCodeCursor | None:
    if not raw:
        return None
    try:
        cursor = _cursor_decoder.decode(raw)
    except msgspec.DecodeError:
        return None  # unreadable: bootstrap again (ids are deterministic downstream)
    return cursor if cursor.schema in (LEGACY, V2) else None


def encode_cursor(cursor: OpenCodeCursor) -> bytes:
    return _encoder.encode(cursor)


KEY_CHARS = 12


def _short(key: str) -> str:
    return key[:KEY_CHARS]


def _expand(edge: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """``[(tu, "k1k2...")]`` -> ``[(tu, k1), (tu, k2), ...]``."""
    return [(tu, keys[i : i + KEY_CHARS]) for tu, keys in edge for i in range(0, len(keys), KEY_CHARS)]


def _compress(entries: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    grouped: dict[int, list[str]] = {}
    for tu, key in entries:
        grouped.setdefault(tu, []).append(key)
    return [(tu, "".join(sorted(keys))) for tu, keys in sorted(grouped.items())]


class Layout(msgspec.Struct):
    """What the snapshot holds, as far as OpenCode acquisition cares."""

    schema: str | None
    columns: dict[str, tuple[str, ...]]
    session_table: str | None

    def cols(self, table: str, wanted: Sequence[str]) -> list[str]:
        have = self.columns.get(table, ())
        return [c for c in wanted if c in have]


def detect_layout(snap: SqliteSnapshot) -> Layout:
    """Choose the one schema this scan reads (v2 precedence when complete)."""
    tables = snap.tables()
    names = ("message", "part", "session_message", "session", "session_v2")
    columns: dict[str, tuple[str, ...]] = {t: snap.columns(t) for t in names if t in tables}
    v2_ok = "session_message" in columns and all(c in columns["session_message"] for c in V2_REQUIRED)
    legacy_ok = (
        "message" in columns and "part" in columns
        and all(c in columns["message"] for c in LEGACY_MESSAGE_REQUIRED)
        and all(c in columns["part"] for c in LEGACY_PART_REQUIRED)
    )
    if v2_ok and snap.has_rows("session_message"):
        schema: str | None = V2
    elif legacy_ok:
        schema = LEGACY
    elif v2_ok:
        schema = V2  # an empty v2 store
    elif not tables:
        schema = None  # an empty database file: nothing to read yet
    else:
        raise SourceError("schema", "no complete OpenCode transcript tables")
    session_table = None
    for name in (("session_v2", "session") if schema == V2 else ("session",)):
        if name in columns and "id" in columns[name]:
            session_table = name
            break
    return Layout(schema, columns, session_table)


def _ms(value: object) -> int | None:
    """A native epoch-millisecond cell, or None when it is not an integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _chunks(values: Sequence[str], size: int = IN_CHUNK) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def _select_in(snap: SqliteSnapshot, table: str, cols: Sequence[str], key: str,
               values: Iterable[str], extra: str = "") -> list[Row]:
    ids = sorted(set(values))
    rows: list[Row] = []
    select = ", ".join(quote_ident(c) for c in cols)
    for chunk in _chunks(ids):
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT {select} FROM {quote_ident(table)} WHERE {quote_ident(key)} IN ({marks}){extra}"
        rows.extend(snap.query(sql, chunk))
    return rows


def _check_unique_keys(rows: Sequence[Row]) -> None:
    """Duplicate keyset coordinates inside one selection are a store integrity failure."""
    keys = {(repr(r.get("time_updated")), repr(r.get("id"))) for r in rows}
    if len(keys) != len(rows):
        raise SourceError("schema", "duplicate (time_updated, id) keyset coordinates")


def _batches(items: Sequence[Item], *, cursor: bytes | None, partial: bool, records: int,
             other: int, nbytes: int) -> Iterator[Batch]:
    """Split one mapped selection into batches; only the last carries the cursor."""
    count = max(1, -(-len(items) // BATCH_ITEMS))
    for n in range(count):
        chunk = items[n * BATCH_ITEMS : (n + 1) * BATCH_ITEMS]
        last = n == count - 1
        yield Batch(
            observations=[i for i in chunk if isinstance(i, Observation)],
            quarantined=[i for i in chunk if isinstance(i, Quarantine)],
            cursor=cursor if last else None,
            records_read=records if last else 0,
            other_records=other if last else 0,
            bytes_read=nbytes if last else 0,
            partial=partial and last,
        )


class _Plan(msgspec.Struct):
    """How this acquisition selects rows."""

    mode: str  # "incremental" | "sample" | "all"
    prior: OpenCodeCursor | None
    install_cursor: bool


class _Edge(msgspec.Struct):
    """Keys already emitted (old edge) and what this scan built (for the new edge)."""

    prior: set[str] = msgspec.field(default_factory=set)
    built: list[tuple[int, str]] = msgspec.field(default_factory=list)
    old: list[tuple[int, str]] = msgspec.field(default_factory=list)

    def filter(self, items: Sequence[tuple[int, str, Item]]) -> list[Item]:
        out: list[Item] = []
        for tu, key, item in items:
            self.built.append((tu, _short(key)))
            if _short(key) not in self.prior:
                out.append(item)
        return out

    def cut(self, hw: int) -> list[tuple[int, str]]:
        floor = hw - OVERLAP_MS
        merged = {k: t for t, k in self.old if t >= floor}
        for t, k in self.built:
            if t >= floor:
                merged[k] = max(t, merged.get(k, t))
        newest = sorted(((t, k) for k, t in merged.items()), reverse=True)[:EDGE_MAX]
        return _compress(newest)


class OpenCodeAdapter:
    """Source-owned adapter of ``opencode.sqlite`` (see the module docstring)."""

    kind = native.KIND
    #: The product whose observations this adapter emits (Kilo Code reuses the adapter).
    brand = native.OPENCODE

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        if ctx.history == HistoryMode.ALL:
            plan = _Plan("all", None, False)
        elif ctx.history == HistoryMode.BACKFILL or ctx.dry_run:
            plan = _Plan("sample", None, False)
        else:
            prior = decode_cursor(cursor)
            plan = _Plan("incremental", prior, True) if prior else _Plan("sample", None, True)
        with SqliteSnapshot(source.path) as snap:
            try:
                snap.query_all("SELECT json_valid('{}') AS ok")
            except SourceError as exc:
                raise SourceError("unsupported", "SQLite library lacks the JSON functions") from exc
            layout = detect_layout(snap)
            if layout.schema is None:
                snap.verify_unchanged()
                yield Batch(observations=[], quarantined=[], cursor=cursor if plan.prior else None)
                return
            if layout.schema == LEGACY:
                yield from _LegacyReader(snap, layout, source.path, plan, self.brand).run()
            else:
                yield from _V2Reader(snap, layout, source.path, plan, self.brand).run()


# -- shared per-window state ----------------------------------------------------------------
class _Sessions:
    """Session rows (cwd, parent) and which session observations this acquisition emitted."""

    def __init__(self, snap: SqliteSnapshot, layout: Layout) -> None:
        self.snap = snap
        self.layout = layout
        self.rows: dict[str, Row] = {}
        self.emitted: set[str] = set()

    def load(self, ids: Iterable[str]) -> None:
        table = self.layout.session_table
        wanted = [i for i in set(ids) if i not in self.rows]
        if table is None or not wanted:
            return
        cols = self.layout.cols(table, SESSION_COLUMNS)
        for row in _select_in(self.snap, table, cols, "id", wanted):
            if isinstance(row.get("id"), str):
                self.rows[str(row["id"])] = row

    def cwd(self, session_id: str) -> str | None:
        value = self.rows.get(session_id, {}).get("directory")
        return value if isinstance(value, str) and value else None

    def maybe_emit(self, em: Emitter, path: str, session_id: str, low: int | None) -> None:
        """One session observation per session the selection reaches (new ones only)."""
        if session_id in self.emitted:
            return
        row = self.rows.get(session_id)
        created = _ms(row.get("time_created")) if row else None
        if low is not None and (created is None or created < low):
            return  # an older session: announced when it was new (or by a forensic pass)
        self.emitted.add(session_id)
        parent = row.get("parent_id") if row else None
        ctx = Context(path=path, session_id=session_id, row=f"session:{session_id}", record_id=session_id,
                      tu=created if created is not None else 0, cwd=self.cwd(session_id))
        em.session(ctx, created, parent if isinstance(parent, str) and parent else None)


# -- legacy message/part -------------------------------------------------------------------
class _LegacyReader:
    def __init__(self, snap: SqliteSnapshot, layout: Layout, path: str, plan: _Plan,
                 brand: native.Brand = native.OPENCODE) -> None:
        self.brand = brand
        self.snap = snap
        self.layout = layout
        self.path = path
        self.plan = plan
        self.part_cols = layout.cols("part", ("id", "message_id", "session_id", "time_created",
                                              "time_updated", "data"))
        self.msg_cols = layout.cols("message", ("id", "session_id", "time_created", "time_updated", "data"))
        self.sessions = _Sessions(snap, layout)
        self.processed_messages: set[str] = set()
        #: Message rows the last mapped selection read (their times bound the high-water too).
        self.loaded_messages: list[Row] = []

    # -- selections ----------------------------------------------------------------------
    def _parts_page(self, after: tuple[object, object] | None, low: int | None, limit: int,
                    newest: bool = False) -> list[Row]:
        where = [_PART_SELECTED]
        params: list[object] = []
        if after is not None:
            where.append("(time_updated > ? OR (time_updated = ? AND id > ?))")
            params += [after[0], after[0], after[1]]
        elif low is not None:
            where.append("time_updated >= ?")
            params.append(low)
        order = "time_updated DESC, id DESC" if newest else "time_updated, id"
        select = ", ".join(quote_ident(c) for c in self.part_cols)
        sql = f"SELECT {select} FROM part WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
        page = self.snap.query_all(sql, [*params, limit])
        _check_unique_keys(page)
        return page

    def _selection(self, low: int) -> list[Row]:
        """The complete incremental selection, or ``saturated`` above 25,000 parts."""
        rows: list[Row] = []
        after: tuple[object, object] | None = None
        while True:
            limit = min(PAGE_ROWS, MAX_SELECTION_PARTS + 1 - len(rows))
            page = self._parts_page(after, low, limit)
            rows.extend(page)
            if len(rows) > MAX_SELECTION_PARTS:
                raise SourceError("saturated", f"more than {MAX_SELECTION_PARTS} parts selected")
            if len(page) < limit:
                return rows
            after = (page[-1].get("time_updated"), page[-1].get("id"))

    def _has_step_finish(self, message_ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for row in _select_in(self.snap, "part", ["message_id"], "message_id", message_ids,
                              _PART_IS_STEP_FINISH):
            if isinstance(row.get("message_id"), str):
                found.add(str(row["message_id"]))
        return found

    # -- modes ---------------------------------------------------------------------------
    def run(self) -> Iterator[Batch]:
        if self.plan.mode == "all":
            yield from self._run_all()
            return
        edge = _Edge()
        extra_messages: list[Row] = []
        partial = False
        if self.plan.mode == "incremental":
            prior = self.plan.prior
            assert prior is not None
            edge.old = _expand(prior.edge)
            edge.prior = {k for _, k in edge.old}
            low = prior.hw - OVERLAP_MS
            parts = self._selection(low)
            if "time_updated" in self.msg_cols:
                select = ", ".join(quote_ident(c) for c in self.msg_cols)
                extra_messages = self.snap.query_all(
                    f"SELECT {select} FROM message WHERE time_updated >= ? ORDER BY time_updated, id", [low])
            window_low: int | None = low
        else:
            newest = self._parts_page(None, None, PAGE_ROWS + 1, newest=True)
            partial = len(newest) > PAGE_ROWS
            parts = newest[:PAGE_ROWS][::-1]
            window_low = None
        em = Emitter(self.path, self.brand)
        other = self._map(em, parts, extra_messages, window_low)
        self.snap.verify_unchanged()
        items = edge.filter(em.items)
        cursor: bytes | None = None
        if self.plan.install_cursor:
            cursor = encode_cursor(self._cursor(parts, self.loaded_messages, edge))
        yield from _batches(items, cursor=cursor, partial=partial,
                            records=len(parts) + len(self.processed_messages), other=other,
                            nbytes=self.snap.admission.bytes)

    def _cursor(self, parts: Sequence[Row], messages: Sequence[Row], edge: _Edge) -> OpenCodeCursor:
        prior = self.plan.prior
        best: tuple[int, str] = (prior.hw, prior.id) if prior and prior.schema == LEGACY else (
            (prior.hw, "") if prior else (0, ""))
        for row in (*parts, *messages):
            tu, rid = _ms(row.get("time_updated")), row.get("id")
            if tu is not None and isinstance(rid, str) and (tu, rid) > best:
                best = (tu, rid)
        return OpenCodeCursor(schema=LEGACY, hw=best[0], id=best[1], edge=edge.cut(best[0]))

    def _run_all(self) -> Iterator[Batch]:
        """Forensic pass: every part from the earliest, window by window, then leftover messages."""
        after: tuple[object, object] | None = None
        while True:
            self.snap.admission = Admission()
            page = self._parts_page(after, None, PAGE_ROWS)
            if not page:
                break
            em = Emitter(self.path, self.brand)
            before = len(self.processed_messages)
            other = self._map(em, page, [], None)
            self.snap.verify_unchanged()
            yield from _batches([i for _, _, i in em.items], cursor=None, partial=False,
                                records=len(page) + len(self.processed_messages) - before, other=other,
                                nbytes=self.snap.admission.bytes)
            if len(page) < PAGE_ROWS:
                break
            after = (page[-1].get("time_updated"), page[-1].get("id"))
        # Messages no selected part reached (e.g. an assistant reply with only reasoning).
        select = ", ".join(quote_ident(c) for c in self.msg_cols)
        order = "time_created, id" if "time_created" in self.msg_cols else "id"
        offset_key: tuple[object, object] | None = None
        params: list[object]
        while True:
            self.snap.admission = Admission()
            if offset_key is None:
                sql, params = f"SELECT {select} FROM message ORDER BY {order} LIMIT ?", [PAGE_ROWS]
            elif "time_created" in self.msg_cols:
                sql = (f"SELECT {select} FROM message WHERE (time_created > ? OR (time_created = ? AND id > ?))"
                       f" ORDER BY {order} LIMIT ?")
                params = [offset_key[0], offset_key[0], offset_key[1], PAGE_ROWS]
            else:
                sql, params = f"SELECT {select} FROM message WHERE id > ? ORDER BY id LIMIT ?", [
                    offset_key[1], PAGE_ROWS]
            page = self.snap.query_all(sql, params)
            if not page:
                break
            fresh = [r for r in page if r.get("id") not in self.processed_messages]
            if fresh:
                em = Emitter(self.path, self.brand)
                before = len(self.processed_messages)
                other = self._map(em, [], fresh, None)
                self.snap.verify_unchanged()
                yield from _batches([i for _, _, i in em.items], cursor=None, partial=False,
                                    records=len(self.processed_messages) - before, other=other,
                                    nbytes=self.snap.admission.bytes)
            if len(page) < PAGE_ROWS:
                break
            offset_key = (page[-1].get("time_created"), page[-1].get("id"))

    # -- mapping -------------------------------------------------------------------------
    def _map(self, em: Emitter, parts: Sequence[Row], extra_messages: Sequence[Row],
             window_low: int | None) -> int:
        """Map one complete selection in native order; returns parts read but not projected."""
        path = self.path
        by_message: dict[str, list[Row]] = {}
        other = 0
        for row in parts:
            mid = row.get("message_id")
            if not isinstance(mid, str) or not isinstance(row.get("id"), str):
                em.quarantine_row(None, None, f"part:{_label(row.get('id'))}", _ms(row.get("time_updated")) or 0,
                                  "schema_mismatch", "message_id")
                continue
            by_message.setdefault(mid, []).append(row)
        messages: dict[str, Row] = {}
        for row in _select_in(self.snap, "message", self.msg_cols, "id", by_message):
            messages[str(row["id"])] = row
        for row in extra_messages:
            if isinstance(row.get("id"), str):
                messages.setdefault(str(row["id"]), row)
        self.loaded_messages = list(messages.values())
        decoded: dict[str, native.LegacyMessage | Malformed] = {}
        for mid, row in messages.items():
            try:
                decoded[mid] = native.decode_legacy_message(row.get("data"))
            except Malformed as exc:
                decoded[mid] = exc
        # Which assistant messages may fall back to their own tokens (no step-finish part).
        candidates = [
            mid for mid, msg in decoded.items()
            if isinstance(msg, native.LegacyMessage) and msg.role == "assistant" and msg.tokens is not None
            and msg.time is not None and msg.time.completed is not None and mid not in self.processed_messages
            and (window_low is None or (_ms(messages[mid].get("time_updated")) or 0) >= window_low)
        ]
        with_steps = self._has_step_finish(candidates) if candidates else set()
        session_of: dict[str, str | None] = {}
        for mid, row in messages.items():
            sid = row.get("session_id")
            if not isinstance(sid, str) or not sid:
                part_sids = {p.get("session_id") for p in by_message.get(mid, ())}
                sid = next((s for s in part_sids if isinstance(s, str) and s), None)
            session_of[mid] = sid
        self.sessions.load(s for s in session_of.values() if s)

        def order(mid: str) -> tuple[int, str]:
            return (_ms(messages[mid].get("time_created")) or 0, mid)

        for mid in sorted(by_message.keys() - messages.keys()):
            for row in by_message[mid]:  # parts whose message row is gone
                em.quarantine_row(None, str(row["id"]), f"part:{_label(row['id'])}", _ms(row.get("time_updated")) or 0,
                                  "schema_mismatch", "message_id")
        for mid in sorted(messages, key=order):
            mrow = messages[mid]
            msg = decoded[mid]
            sid = session_of[mid]
            mtu = _ms(mrow.get("time_updated")) or 0
            parts_here = sorted(by_message.get(mid, ()), key=lambda r: str(r["id"]))
            self.processed_messages.add(mid)
            attribution = native.Attribution(None, None, ())
            if not isinstance(msg, Malformed) and sid is not None:
                try:
                    attribution = native.attribution(msg.model, msg.modelID, msg.providerID)
                except Malformed as exc:
                    msg = exc
            if isinstance(msg, Malformed) or sid is None:
                reason, fld = (msg.reason, msg.field) if isinstance(msg, Malformed) else ("schema_mismatch",
                                                                                          "session_id")
                em.quarantine_row(sid, mid, f"message:{mid}", mtu, reason, fld)
                for row in parts_here:
                    em.quarantine_row(sid, str(row["id"]), f"part:{_label(row['id'])}",
                                      _ms(row.get("time_updated")) or 0, "schema_mismatch", "message")
                continue
            ambiguous = isinstance(msg.sessionID, str) and msg.sessionID != sid
            cwd = self.sessions.cwd(sid) or (msg.path.cwd if msg.path else None)
            mode = msg.agent or msg.mode
            self.sessions.maybe_emit(em, path, sid, window_low)
            if mid in candidates and mid not in with_steps:
                ctx = Context(path=path, session_id=sid, row=f"message:{mid}", record_id=mid, tu=mtu, cwd=cwd,
                              attribution=attribution, session_ambiguous=ambiguous, mode=mode)
                native.legacy_message_usage(em, ctx, mid, msg)
            for row in parts_here:
                pid = str(row["id"])
                tu = _ms(row.get("time_updated"))
                part_sid = row.get("session_id")
                ctx = Context(path=path, session_id=sid, row=f"part:{pid}", record_id=pid, tu=tu or 0, cwd=cwd,
                              attribution=attribution, mode=mode,
                              session_ambiguous=ambiguous or (isinstance(part_sid, str) and part_sid != sid))
                if tu is None:
                    em.quarantine(ctx, "schema_mismatch", "time_updated")
                    continue
                try:
                    part = native.decode_legacy_part(row.get("data"))
                except Malformed as exc:
                    em.quarantine(ctx, exc.reason, exc.field)
                    continue
                if not native.map_legacy_part(em, ctx, pid, row.get("time_created"), part, msg):
                    other += 1
        return other


# -- v2 session_message ------------------------------------------------------------------
class _V2Reader:
    def __init__(self, snap: SqliteSnapshot, layout: Layout, path: str, plan: _Plan,
                 brand: native.Brand = native.OPENCODE) -> None:
        self.brand = brand
        self.snap = snap
        self.layout = layout
        self.path = path
        self.plan = plan
        self.cols = layout.cols("session_message", ("id", "session_id", "type", "time_created",
                                                    "time_updated", "seq", "data"))
        self.sessions = _Sessions(snap, layout)

    def _window(self, after: tuple[object, object] | None, low: int | None) -> tuple[list[Row], bool]:
        """Rows after the resume point, up to 5,000 rows or 8 MiB of data; and whether more remain."""
        where, params = "1", list[object]()
        if after is not None:
            where, params = "(time_updated > ? OR (time_updated = ? AND id > ?))", [after[0], after[0], after[1]]
        elif low is not None:
            where, params = "time_updated >= ?", [low]
        select = ", ".join(quote_ident(c) for c in self.cols)
        sql = f"SELECT {select} FROM session_message WHERE {where} ORDER BY time_updated, id LIMIT ?"
        rows: list[Row] = []
        retained = 0
        more = False
        try:
            for row in self.snap.query(sql, [*params, PAGE_ROWS + 1]):
                if len(rows) == PAGE_ROWS:
                    more = True
                    break
                data = row.get("data")
                size = utf8_len(data) if isinstance(data, str) else len(data) if isinstance(data, bytes) else 0
                if retained + size > V2_RETAINED_BYTES:
                    if not rows:
                        raise SourceError("saturated", "one session_message row exceeds the 8 MiB window budget")
                    more = True
                    break
                retained += size
                rows.append(row)
        except SourceError as exc:
            # A row over the admission limits ends the window before it; the next window starts
            # at that row and fails there, so only a window that cannot pass its resume point fails.
            if exc.reason != "over_budget" or not rows:
                raise
            more = True
        _check_unique_keys(rows)
        return rows, more

    def run(self) -> Iterator[Batch]:
        plan = self.plan
        if plan.mode == "sample":
            yield from self._sample()
            return
        edge = _Edge()
        after: tuple[object, object] | None = None
        low: int | None = None
        hw, hw_id = 0, ""
        if plan.prior is not None:
            prior = plan.prior
            edge.old = _expand(prior.edge)
            edge.prior = {k for _, k in edge.old}
            hw, hw_id = prior.hw, prior.id
            if prior.schema == V2 and prior.resume:
                after = (prior.hw, prior.id)
            else:
                low = prior.hw - OVERLAP_MS
        # Sessions created before the overlap were announced by an earlier scan.
        window_low = plan.prior.hw - OVERLAP_MS if plan.mode == "incremental" and plan.prior else None
        windows = 0
        while True:
            windows += 1
            self.snap.admission = Admission()
            rows, more = self._window(after, low)
            em = Emitter(self.path, self.brand)
            other = self._map(em, rows, window_low)
            self.snap.verify_unchanged()
            if plan.mode == "all":
                items = [i for _, _, i in em.items]
                yield from _batches(items, cursor=None, partial=False, records=len(rows), other=other,
                                    nbytes=self.snap.admission.bytes)
            else:
                items = edge.filter(em.items)
                if rows:
                    last = (_ms(rows[-1].get("time_updated")), rows[-1].get("id"))
                    if last[0] is not None and isinstance(last[1], str) and (more or (last[0], last[1]) > (hw, hw_id)):
                        hw, hw_id = last[0], last[1]
                stop = not more or windows >= V2_MAX_WINDOWS
                cursor = OpenCodeCursor(schema=V2, hw=hw, id=hw_id, resume=more, edge=edge.cut(hw))
                edge.old = _expand(cursor.edge)
                yield from _batches(items, cursor=encode_cursor(cursor), partial=more and stop,
                                    records=len(rows), other=other, nbytes=self.snap.admission.bytes)
            if not more or (plan.mode != "all" and windows >= V2_MAX_WINDOWS):
                return
            after = (rows[-1].get("time_updated"), rows[-1].get("id"))

    def _sample(self) -> Iterator[Batch]:
        select = ", ".join(quote_ident(c) for c in self.cols)
        newest = self.snap.query_all(
            f"SELECT {select} FROM session_message ORDER BY time_updated DESC, id DESC LIMIT ?", [PAGE_ROWS + 1])
        _check_unique_keys(newest)
        partial = len(newest) > PAGE_ROWS
        rows = newest[:PAGE_ROWS][::-1]
        em = Emitter(self.path, self.brand)
        other = self._map(em, rows, None)
        self.snap.verify_unchanged()
        edge = _Edge()
        items = edge.filter(em.items)
        cursor = None
        if self.plan.install_cursor:
            hw, hw_id = 0, ""
            for row in rows:
                tu, rid = _ms(row.get("time_updated")), row.get("id")
                if tu is not None and isinstance(rid, str) and (tu, rid) > (hw, hw_id):
                    hw, hw_id = tu, rid
            cursor = encode_cursor(OpenCodeCursor(schema=V2, hw=hw, id=hw_id, edge=edge.cut(hw)))
        yield from _batches(items, cursor=cursor, partial=partial, records=len(rows), other=other,
                            nbytes=self.snap.admission.bytes)

    def _map(self, em: Emitter, rows: Sequence[Row], window_low: int | None) -> int:
        path = self.path
        self.sessions.load(str(r["session_id"]) for r in rows if isinstance(r.get("session_id"), str))
        order = sorted(rows, key=lambda r: (str(r.get("session_id")), _seq(r), str(r.get("id"))))
        other = 0
        for row in order:
            rid, sid, rtype = row.get("id"), row.get("session_id"), row.get("type")
            tu = _ms(row.get("time_updated"))
            label = f"session_message:{_label(rid)}"
            if not isinstance(rid, str) or not isinstance(sid, str) or not sid or tu is None:
                em.quarantine_row(sid if isinstance(sid, str) else None, rid if isinstance(rid, str) else None,
                                  label, tu or 0, "schema_mismatch", "id")
                continue
            cwd = self.sessions.cwd(sid)
            base = Context(path=path, session_id=sid, row=label, record_id=rid, tu=tu, cwd=cwd)
            if not isinstance(rtype, str) or rtype not in native.V2_TYPES:
                em.quarantine(base, "unknown_record_type", "type")
                continue
            try:
                msg = native.decode_v2_message(row.get("data"))
                attribution = native.attribution(msg.model, msg.modelID, msg.providerID)
            except Malformed as exc:
                em.quarantine(base, exc.reason, exc.field)
                continue
            ctx = Context(path=path, session_id=sid, row=label, record_id=rid, tu=tu, cwd=cwd,
                          attribution=attribution, mode=msg.agent,
                          session_ambiguous=isinstance(msg.sessionID, str) and msg.sessionID != sid)
            self.sessions.maybe_emit(em, path, sid, window_low)
            if not native.map_v2_row(em, ctx, rid, rtype, msg):
                other += 1
        return other


def _seq(row: Row) -> int:
    seq = _ms(row.get("seq"))
    if seq is not None:
        return seq
    return _ms(row.get("time_created")) or 0


def _label(value: object) -> str:
    """A row id for provenance: the id when it is text, else a bounded type marker."""
    return value[:256] if isinstance(value, str) else f"<{type(value).__name__}>"
