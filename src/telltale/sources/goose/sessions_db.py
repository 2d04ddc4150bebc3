"""Goose's ``sessions.db``: sessions, messages and (newer builds) a usage ledger.

Read through the snapshot reader (:mod:`telltale.readers.sqlite`: WAL read without
touching the sidecars, no locks, one read transaction). Goose inserts a message row once
it is complete (``add_message``) and never updates it; but ``replace_conversation``
(compaction, import, edits) deletes a session's rows and inserts the conversation again
under new ids. So the cursor is the ``messages.id`` high-water mark *plus*, per session,
the newest ``created_timestamp`` emitted and digests of the rows emitted at that second:
a row at or before that point that was emitted already is recognised by its content and
never emitted twice, and its observation id is content-derived (session, time, role,
digest), the same whatever row id it was given.

Sessions are emitted once each (``working_dir``, ``session_type``, ``created_at``), with or
without messages. Usage: the ``usage_ledger`` table when it exists (one row per provider
call: model, tokens, cache, cost; insert-only, its own high-water mark), else the
session's ``accumulated_*_tokens`` columns as growth since last emitted (``usage_scope =
session_delta``, as for Crush).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.digest import blake2b
from telltale.errors import SourceError
from telltale.model import (
    BoundExceeded,
    Family,
    Observation,
    Provenance,
    Quarantine,
    Stage,
    TokenUsage,
    encode_arguments,
    iso_time,
)
from telltale.readers.sqlite import MAX_CELL_BYTES, Admission, Row, SqliteSnapshot, cell_int
from telltale.sources._jsonl_driver import Recorder
from telltale.sources.base import AcquireContext, Batch, HistoryMode, PendingBatch, cursor_decoder
from telltale.sources.goose import wire as w
from telltale.sources.goose.tools import AUTHORED_KEYS, facets
from telltale.sources.spec import Source

KIND = "goose.sqlite"
CLIENT = "goose"
AGENT = "goose"
PAGE_ROWS = 2_000
MAX_ROW_BYTES = 8 << 20
MAX_SESSIONS = 10_000
#: Digests of rows emitted at a session's newest second (a burst within one second).
MAX_DIGESTS = 256

assert MAX_ROW_BYTES <= MAX_CELL_BYTES


class _Session(msgspec.Struct, array_like=True):
    ts: int = -1  # newest created_timestamp emitted
    seen: str = ""  # digests of the rows emitted at ts
    tokens: tuple[int, int] = (0, 0)  # accumulated input/output last emitted as usage


class GooseCursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    hw: int = 0
    ledger: int = 0
    sessions: dict[str, _Session] = {}


_encoder = msgspec.json.Encoder()


decode_cursor = cursor_decoder(GooseCursor)


def digest(role: str, content: bytes) -> str:
    raw = blake2b(role.encode() + b"\x1f" + content, digest_size=6).digest()
    return base64.urlsafe_b64encode(raw).decode("ascii")



def _sql_time(value: object) -> str | None:
    """``2025-12-02 16:58:55`` (SQLite ``CURRENT_TIMESTAMP``, UTC) as ISO-8601."""
    if isinstance(value, str) and len(value) >= 19 and value[10] == " ":
        return iso_time(value[:10] + "T" + value[11:] + ("" if value.endswith("Z") else "Z"))
    return iso_time(value)


class _Run:
    def __init__(self, source: Source, snap: SqliteSnapshot, prior: GooseCursor | None, ctx: AcquireContext) -> None:
        self.source = source
        self.snap = snap
        self.keep_cursor = ctx.history is HistoryMode.INCREMENTAL and not ctx.dry_run
        self.state = prior if prior is not None else GooseCursor()
        self.out = PendingBatch()
        self.tables = snap.tables()
        self.columns = set(snap.columns("messages"))
        self.session_rows: dict[str, Row] = {}

    def batch(self) -> Batch:
        out, self.out = self.out, PendingBatch()
        self.snap.verify_unchanged()
        self.snap.admission = Admission()
        cursor = _encoder.encode(self.state) if self.keep_cursor else None
        return out.batch(cursor)

    def quarantine(self, reason: str, row: Row, err: BoundExceeded | None = None) -> None:
        rid = cell_int(row.get("id"))
        sid = row.get("session_id")
        self.out.quarantined.append(Quarantine(
            source_kind=KIND, path=self.source.path, reason=reason,
            session_id=sid if isinstance(sid, str) else None,
            sequence=rid, row=str(rid), field=err.field if err else None, bound=err.bound if err else None))

    # -- sessions --------------------------------------------------------------------
    def sessions(self) -> None:
        if "sessions" not in self.tables:
            return
        have = set(self.snap.columns("sessions"))
        wanted = [c for c in ("id", "working_dir", "created_at", "session_type", "accumulated_input_tokens",
                              "accumulated_output_tokens", "input_tokens", "output_tokens") if c in have]
        if "id" not in wanted:
            return
        order = " ORDER BY updated_at DESC" if "updated_at" in have else ""
        rows = self.snap.query_all(f"SELECT {', '.join(wanted)} FROM sessions{order} LIMIT ?", (MAX_SESSIONS,))
        for row in rows:
            sid = row["id"]
            if not isinstance(sid, str):
                continue
            self.session_rows[sid] = row
            if sid not in self.state.sessions:
                self.state.sessions[sid] = _Session()
                self.emit_session(sid, row)
        if len(self.state.sessions) > MAX_SESSIONS:
            keep = set(self.session_rows)
            self.state.sessions = {k: v for k, v in self.state.sessions.items() if k in keep}

    def emit_session(self, sid: str, row: Row) -> None:
        self.out.records += 1
        cwd = row.get("working_dir")
        kind = row.get("session_type")
        attributes = {"session_type": kind} if isinstance(kind, str) and kind else {}
        rec = Recorder(KIND)
        try:
            rec.add(source_identity=f"goose:{sid}", coordinate="session", family=Family.SESSION, client=CLIENT,
                    agent=AGENT, session_id=sid, sequence=0, cwd=cwd if isinstance(cwd, str) and cwd else None,
                    occurred_at=_sql_time(row.get("created_at")), attributes=attributes,
                    provenance=Provenance(source_kind=KIND, path=self.source.path, row=f"sessions:{sid}"))
        except BoundExceeded as err:
            self.quarantine("unbounded_value", {"id": None, "session_id": sid}, err)
            return
        self.out.observations.extend(rec.take())

    # -- messages --------------------------------------------------------------------
    def messages(self) -> Iterator[Batch]:
        if not {"id", "session_id", "role", "content_json"} <= self.columns:
            raise SourceError("schema", "messages lacks id, session_id, role or content_json")
        extra = [c for c in ("created_timestamp", "message_id") if c in self.columns]
        select = ("SELECT id, session_id, role, length(content_json) AS size, CASE WHEN length(content_json) <= "
                  f"{MAX_ROW_BYTES} THEN content_json END AS content_json"
                  + "".join(f", {c}" for c in extra) + " FROM messages WHERE id > ? ORDER BY id LIMIT ?")
        while True:
            page = self.snap.query_all(select, (self.state.hw, PAGE_ROWS))
            for row in page:
                self.row(row)
            if page:
                self.state.hw = max(self.state.hw, cell_int(page[-1]["id"]) or 0)
            if len(page) < PAGE_ROWS:
                return
            yield self.batch()

    def row(self, row: Row) -> None:
        out = self.out
        out.records += 1
        sid, role = row["session_id"], row["role"]
        if not isinstance(sid, str) or not isinstance(role, str):
            self.quarantine("schema_mismatch", row)
            return
        size = cell_int(row["size"]) or 0
        out.bytes += size
        raw = row["content_json"]
        if raw is None:
            self.quarantine("unbounded_value", row, BoundExceeded("content_json", MAX_ROW_BYTES, size))
            return
        content = raw.encode("utf-8") if isinstance(raw, str) else raw
        if not isinstance(content, bytes):
            self.quarantine("schema_mismatch", row)
            return
        created = cell_int(row.get("created_timestamp")) or 0
        key = digest(role, content)
        session = self.state.sessions.setdefault(sid, _Session())
        if created < session.ts or (created == session.ts and key in session.seen):
            out.other += 1  # a conversation written again (replace_conversation): emitted before
            return
        if created > session.ts:
            session.ts, session.seen = created, ""
        session.seen = (session.seen + key)[-MAX_DIGESTS * 8:]
        try:
            blocks = w.blocks_decoder.decode(content)
        except msgspec.ValidationError:
            self.quarantine("schema_mismatch", row)
            return
        except (msgspec.DecodeError, RecursionError):
            self.quarantine("malformed_json", row)
            return
        info = self.session_rows.get(sid, {})
        message_id = row.get("message_id")
        cwd = info.get("working_dir")
        common: dict[str, Any] = {
            "client": CLIENT, "agent": AGENT, "session_id": sid, "sequence": cell_int(row["id"]) or 0,
            "occurred_at": iso_time(created) if created else None,
            "cwd": cwd if isinstance(cwd, str) and cwd else None,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, row=str(row["id"]),
                                     record_id=message_id if isinstance(message_id, str) else None),
        }
        try:
            items = project(KIND, f"goose:{sid}", f"msg:{created}:{role}:{key}", role, blocks, common)
        except BoundExceeded as err:
            self.quarantine("unbounded_value", row, err)
            return
        except (msgspec.DecodeError, RecursionError):
            self.quarantine("malformed_json", row)
            return
        if not items:
            out.other += 1
        out.observations.extend(items)

    # -- usage -----------------------------------------------------------------------
    def usage(self) -> None:
        if "usage_ledger" in self.tables:
            self.ledger()
            return
        for sid, row in self.session_rows.items():
            tin = cell_int(row.get("accumulated_input_tokens"))
            tout = cell_int(row.get("accumulated_output_tokens"))
            if tin is None and tout is None:
                tin, tout = cell_int(row.get("input_tokens")), cell_int(row.get("output_tokens"))
            now = (tin or 0, tout or 0)
            session = self.state.sessions.setdefault(sid, _Session())
            if now == (0, 0) or now == session.tokens:
                continue
            grew = now[0] >= session.tokens[0] and now[1] >= session.tokens[1]
            base = session.tokens if grew else (0, 0)
            rec = Recorder(KIND)
            rec.add(source_identity=f"goose:{sid}", coordinate=f"usage:{now[0]}:{now[1]}", family=Family.USAGE,
                    client=CLIENT, agent=AGENT, session_id=sid, sequence=0,
                    usage=TokenUsage(input_tokens=now[0] - base[0], output_tokens=now[1] - base[1]),
                    attributes={"usage_scope": "session_delta"},
                    provenance=Provenance(source_kind=KIND, path=self.source.path, row=f"sessions:{sid}"))
            self.out.observations.extend(rec.take())
            session.tokens = now

    def ledger(self) -> None:
        have = set(self.snap.columns("usage_ledger"))
        if not {"id", "session_id"} <= have:
            return
        cols = [c for c in ("id", "session_id", "created_timestamp", "model", "input_tokens", "output_tokens",
                            "total_tokens", "cache_read_tokens", "cache_write_tokens", "cost", "is_compaction")
                if c in have]
        rows = self.snap.query_all(f"SELECT {', '.join(cols)} FROM usage_ledger WHERE id > ? ORDER BY id LIMIT ?",
                                   (self.state.ledger, PAGE_ROWS * 10))
        for row in rows:
            self.out.records += 1
            sid = row.get("session_id")
            lid = cell_int(row.get("id")) or 0
            self.state.ledger = max(self.state.ledger, lid)
            usage = TokenUsage(input_tokens=cell_int(row.get("input_tokens")),
                               output_tokens=cell_int(row.get("output_tokens")),
                               cache_read_input_tokens=cell_int(row.get("cache_read_tokens")),
                               cache_creation_input_tokens=cell_int(row.get("cache_write_tokens")),
                               total_tokens=cell_int(row.get("total_tokens")))
            if not isinstance(sid, str) or usage.is_empty():
                self.out.other += 1
                continue
            attributes = {"usage_scope": "response"}
            if isinstance(row.get("cost"), int | float):
                attributes["cost_usd"] = f"{float(row['cost']):.6f}"  # type: ignore[arg-type]
            if row.get("is_compaction"):
                attributes["compaction"] = "true"
            model = row.get("model")
            rec = Recorder(KIND)
            try:
                rec.add(source_identity=f"goose:{sid}", coordinate=f"ledger:{lid}", family=Family.USAGE,
                        client=CLIENT, agent=AGENT, session_id=sid, sequence=lid, usage=usage,
                        model=model if isinstance(model, str) and model else None,
                        occurred_at=iso_time(cell_int(row.get("created_timestamp"))), attributes=attributes,
                        provenance=Provenance(source_kind=KIND, path=self.source.path, row=f"usage_ledger:{lid}"))
            except BoundExceeded as err:
                self.quarantine("unbounded_value", {"id": lid, "session_id": sid}, err)
                continue
            self.out.observations.extend(rec.take())


def project(kind: str, identity: str, coordinate: str, role: str, blocks: list[w.Block],
            common: dict[str, Any]) -> list[Observation]:
    """A message's observations (shared by the database and the legacy JSONL reader)."""
    rec = Recorder(kind)
    texts: list[str] = []
    for index, block in enumerate(blocks):
        if block.type == "text" and block.text:
            texts.append(block.text)
        elif block.type in w.REQUESTS:
            name, args, error = w.call_of(block)
            fields = facets(name, args)
            rec.add(source_identity=identity, coordinate=f"{coordinate}:call:{block.id or index}",
                    family=Family.TOOL, stage=Stage.REQUESTED, tool_name=name, call_id=block.id,
                    arguments=encode_arguments(args if isinstance(args, dict | list | str) else None, AUTHORED_KEYS),
                    attributes={"frontend": "true"} if block.type == "frontendToolRequest" else {},
                    **fields, **common)
            if error is not None:  # the call could not even be parsed: Goose answers with the error
                rec.add(source_identity=identity, coordinate=f"{coordinate}:call:{block.id or index}:error",
                        family=Family.TOOL, stage=Stage.RESULT, tool_name=name, call_id=block.id, result=error,
                        is_error=True, **common)
        elif block.type == "toolResponse":
            text, is_error = w.result_of(block)
            rec.add(source_identity=identity, coordinate=f"{coordinate}:result:{block.id or index}",
                    family=Family.TOOL, stage=Stage.RESULT, call_id=block.id, result=text, is_error=is_error,
                    **common)
    if texts and role in ("user", "assistant"):
        rec.add(source_identity=identity, coordinate=f"{coordinate}:text", family=Family.MESSAGE, role=role,
                text="\n".join(texts), **common)
    return rec.take()


class GooseSessionsAdapter:
    """Goose's SQLite session store (``sessions/sessions.db``)."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
        with SqliteSnapshot(source.path) as snap:
            tables = snap.tables()
            if "messages" not in tables:
                if tables and "sessions" not in tables:
                    raise SourceError("schema", "no Goose sessions or messages table")
                yield Batch(observations=[], quarantined=[], cursor=None)
                return
            run = _Run(source, snap, prior, ctx)
            run.sessions()
            yield from run.messages()
            run.usage()
            yield run.batch()
