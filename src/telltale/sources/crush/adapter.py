"""Crush's ``crush.db``: messages whose ``parts`` are rewritten while they stream.

Read through the snapshot reader (:mod:`telltale.readers.sqlite`: no locks, no sidecars,
one read transaction). Rows are inserted in order and updated in place until finished,
so the cursor is a row high-water mark (``rowid``) plus the ids of rows at or below it
that were not settled yet. A row is emitted once, when first seen settled: a user,
system or tool row (created finished), an assistant row with its ``finish`` part, or any
row with a later row in its session. A change to a row after that is never re-emitted.

Windows of :data:`PAGE_ROWS` rows are committed one by one. A ``parts`` cell over
:data:`MAX_ROW_BYTES` is never delivered (SQL returns its length only); it, a zstd frame
that inflates past its bound, malformed JSON and a record over a canonical bound are
quarantined by message id, and the rest goes through.

Usage: Crush keeps token counts per session only (``prompt_tokens``,
``completion_tokens``, ``cost``, updated as the session goes on). Each scan emits, for a
session whose counts grew, one usage observation with the growth since the counts last
emitted (``attributes.usage_scope = session_delta``); its id names the counts it brings
the session to, so the same counts are never emitted twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
import zstandard

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
from telltale.sources import _project_local
from telltale.sources._jsonl_driver import Recorder
from telltale.sources.base import AcquireContext, Batch, HistoryMode, PendingBatch, cursor_decoder
from telltale.sources.crush import wire as w
from telltale.sources.crush.tools import AUTHORED_KEYS, facets
from telltale.sources.spec import Source

KIND = "crush.sqlite"
CLIENT = "crush"
AGENT = "crush"
#: Message rows per window (each window is admitted and committed on its own).
PAGE_ROWS = 2_000
#: One ``parts`` cell read at most; a larger one is quarantined without being delivered.
MAX_ROW_BYTES = 8 << 20
#: Unsettled rows remembered (oldest forgotten first: never emitted, the source partial).
MAX_OPEN = 2_000
#: Sessions whose emitted counts are remembered; sessions read per scan for usage.
MAX_SESSIONS = 10_000
#: Bound parameters per ``IN (...)``.
IN_CHUNK = 500

REQUIRED = ("id", "session_id", "role", "parts")
OPTIONAL = ("model", "provider", "created_at", "is_summary_message")

assert MAX_ROW_BYTES <= MAX_CELL_BYTES


class CrushCursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    hw: int = 0
    open: list[str] = []
    usage: dict[str, tuple[int, int, float]] = {}


_encoder = msgspec.json.Encoder()


decode_cursor = cursor_decoder(CrushCursor)



def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), IN_CHUNK):
        yield values[i:i + IN_CHUNK]


class _Run:
    """One acquisition of one database."""

    def __init__(self, source: Source, snap: SqliteSnapshot, prior: CrushCursor | None, ctx: AcquireContext) -> None:
        self.source = source
        self.snap = snap
        self.keep_cursor = ctx.history is HistoryMode.INCREMENTAL and not ctx.dry_run
        self.state = prior if prior is not None and ctx.history is HistoryMode.INCREMENTAL else CrushCursor()
        self.out = PendingBatch()
        self.columns = set(snap.columns("messages"))
        self.tables = snap.tables()
        parent = os.path.dirname(source.path)
        self.cwd = os.path.dirname(parent) if os.path.basename(parent) == ".crush" else None
        store = _project_local.NO_GIT
        if self.cwd is not None:
            store = _project_local.git_status(self.cwd, ".crush/" + os.path.basename(source.path))
        self.attributes = {"project_store": store}
        self.bounds: dict[str, tuple[int, int]] = {}  # session -> (first rowid, last rowid)
        self.sessions: dict[str, Row] = {}

    # -- batching --------------------------------------------------------------------
    def batch(self, partial: bool = False) -> Batch:
        out, self.out = self.out, PendingBatch()
        self.snap.verify_unchanged()
        self.snap.admission = Admission()
        cursor = _encoder.encode(self.state) if self.keep_cursor else None
        return out.batch(cursor, partial=partial)

    def quarantine(self, reason: str, row: Row, err: BoundExceeded | None = None) -> None:
        self.out.quarantined.append(Quarantine(
            source_kind=KIND, path=self.source.path, reason=reason, session_id=_short(row.get("session_id")),
            record_id=_short(row.get("id")), sequence=cell_int(row.get("rid")), row=_short(row.get("id")),
            field=err.field if err is not None else None, bound=err.bound if err is not None else None))

    # -- rows ------------------------------------------------------------------------
    def _select(self) -> str:
        cols = ["rowid AS rid", "id", "session_id", "role", "length(parts) AS size",
                f"CASE WHEN length(parts) <= {MAX_ROW_BYTES} THEN parts END AS parts"]
        cols += [c for c in OPTIONAL if c in self.columns]
        return "SELECT " + ", ".join(cols) + " FROM messages"

    def rows(self) -> Iterator[Batch]:
        state = self.state
        if state.open:  # rows read before and not settled then
            wanted = list(state.open)
            found: list[Row] = []
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                found.extend(self.snap.query(f"{self._select()} WHERE id IN ({marks}) AND rowid <= ?",
                                             [*chunk, state.hw]))
            found.sort(key=lambda r: cell_int(r["rid"]) or 0)
            state.open = []
            self.page(found)
            yield self.batch()
        while True:
            page = self.snap.query_all(f"{self._select()} WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                       (state.hw, PAGE_ROWS))
            if not page:
                break
            self.page(page)
            state.hw = max(state.hw, cell_int(page[-1]["rid"]) or 0)
            if len(page) < PAGE_ROWS:
                break
            yield self.batch(partial=bool(state.open))

    def page(self, rows: list[Row]) -> None:
        self.load_sessions({r["session_id"] for r in rows if isinstance(r["session_id"], str)})
        for row in rows:
            self.row(row)
        del self.state.open[:-MAX_OPEN]

    def load_sessions(self, ids: set[str]) -> None:
        wanted = sorted(i for i in ids if i not in self.bounds)
        for chunk in _chunks(wanted):
            marks = ",".join("?" * len(chunk))
            for r in self.snap.query(f"SELECT session_id, min(rowid) AS lo, max(rowid) AS hi FROM messages"
                                     f" WHERE session_id IN ({marks}) GROUP BY session_id", chunk):
                if isinstance(r["session_id"], str):
                    self.bounds[r["session_id"]] = (cell_int(r["lo"]) or 0, cell_int(r["hi"]) or 0)
            if "sessions" in self.tables:
                cols = [c for c in ("id", "parent_session_id", "created_at") if c in self.snap.columns("sessions")]
                if "id" in cols:
                    for r in self.snap.query(f"SELECT {', '.join(cols)} FROM sessions WHERE id IN ({marks})", chunk):
                        if isinstance(r["id"], str):
                            self.sessions[r["id"]] = r

    def row(self, row: Row) -> None:
        out = self.out
        out.records += 1
        rid = cell_int(row["rid"]) or 0
        mid, sid, role = row["id"], row["session_id"], row["role"]
        if not isinstance(mid, str) or not isinstance(sid, str) or not isinstance(role, str):
            self.quarantine("schema_mismatch", row)
            return
        size = cell_int(row["size"]) or 0
        out.bytes += size
        raw = row["parts"]
        if raw is None:
            if size > MAX_ROW_BYTES:
                self.quarantine("unbounded_value", row, BoundExceeded("parts", MAX_ROW_BYTES, size))
            else:
                self.quarantine("schema_mismatch", row)
            return
        cell = raw.encode("utf-8") if isinstance(raw, str) else raw
        if not isinstance(cell, bytes):
            self.quarantine("schema_mismatch", row)
            return
        try:
            parts = w.parts_decoder.decode(w.stored_parts(cell))
        except w.TooLarge:
            self.quarantine("unbounded_value", row, BoundExceeded("parts", w.MAX_PARTS_BYTES, w.MAX_PARTS_BYTES + 1))
            return
        except zstandard.ZstdError:
            self.quarantine("malformed_zstd", row)
            return
        except msgspec.ValidationError:
            self.quarantine("schema_mismatch", row)
            return
        except (msgspec.DecodeError, RecursionError):
            self.quarantine("malformed_json", row)
            return
        finished = any(p.type == "finish" for p in parts)
        lo, hi = self.bounds.get(sid, (rid, rid))
        if role == "assistant" and not finished and rid >= hi:
            self.state.open.append(mid)  # still streaming: look again next scan
            return
        try:
            items = self.project(row, rid, mid, sid, role, parts, first=rid <= lo)
        except BoundExceeded as err:
            self.quarantine("unbounded_value", row, err)
            return
        except (msgspec.DecodeError, RecursionError):
            self.quarantine("malformed_json", row)
            return
        if not items:
            out.other += 1
        out.observations.extend(items)

    def project(self, row: Row, rid: int, mid: str, sid: str, role: str, parts: list[w.Wrapper],
                *, first: bool) -> list[Observation]:
        rec = Recorder(KIND)
        identity = f"crush:{sid}"
        model = row.get("model") if isinstance(row.get("model"), str) and row.get("model") else None
        provider = row.get("provider") if isinstance(row.get("provider"), str) and row.get("provider") else None
        common: dict[str, Any] = {
            "client": CLIENT, "agent": AGENT, "session_id": sid, "sequence": rid, "cwd": self.cwd,
            "occurred_at": iso_time(cell_int(row.get("created_at"))), "attributes": self.attributes,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, row=mid, record_id=mid),
        }
        if first:
            info = self.sessions.get(sid, {})
            parent = info.get("parent_session_id")
            rec.add(source_identity=identity, coordinate="session", family=Family.SESSION,
                    **{**common, "occurred_at": iso_time(cell_int(info.get("created_at"))) or common["occurred_at"]},
                    parent_session_id=parent if isinstance(parent, str) and parent else None,
                    model=model, provider=provider)
        texts: list[str] = []
        hidden = False
        for index, part in enumerate(parts):
            kind = part.type
            if kind == "text":
                text = w.text_decoder.decode(part.data)
                if text.text:
                    texts.append(text.text)
                    hidden = hidden or text.hidden
            elif kind == "tool_call":
                call = w.tool_call_decoder.decode(part.data)
                args = _arguments(call.input)
                rec.add(source_identity=identity, coordinate=f"message:{mid}:call:{call.id or index}",
                        family=Family.TOOL, stage=Stage.REQUESTED, tool_name=call.name or None,
                        call_id=call.id or None, arguments=encode_arguments(args, AUTHORED_KEYS),
                        model=model, provider=provider, **facets(call.name, args), **common)
            elif kind == "tool_result":
                result = w.tool_result_decoder.decode(part.data)
                rec.add(source_identity=identity, coordinate=f"message:{mid}:result:{result.tool_call_id or index}",
                        family=Family.TOOL, stage=Stage.RESULT, tool_name=result.name or None,
                        call_id=result.tool_call_id or None, result=result.content, is_error=result.is_error,
                        **common)
            elif kind == "shell_command":
                shell = w.shell_decoder.decode(part.data)
                call_id = f"{mid}:shell:{index}"
                rec.add(source_identity=identity, coordinate=f"message:{mid}:shell:{index}", family=Family.TOOL,
                        stage=Stage.REQUESTED, tool_name="shell", call_id=call_id, command=shell.command,
                        arguments=encode_arguments({"command": shell.command}, AUTHORED_KEYS), **common)
                rec.add(source_identity=identity, coordinate=f"message:{mid}:shell:{index}:result",
                        family=Family.TOOL, stage=Stage.RESULT, tool_name="shell", call_id=call_id,
                        result=shell.output, exit_code=shell.exit_code, is_error=bool(shell.exit_code), **common)
        if texts and role in ("user", "assistant", "system"):
            summary = bool(row.get("is_summary_message"))
            attributes = {**self.attributes, "summary": "true"} if summary else self.attributes
            rec.add(source_identity=identity, coordinate=f"message:{mid}:text", family=Family.MESSAGE,
                    role=role, text="\n".join(texts), injected=hidden or summary or role == "system",
                    model=model, provider=provider, **{**common, "attributes": attributes})
        return rec.take()

    # -- usage -----------------------------------------------------------------------
    def usage(self) -> None:
        if "sessions" not in self.tables:
            return
        cols = set(self.snap.columns("sessions"))
        if not {"id", "prompt_tokens", "completion_tokens"} <= cols:
            return
        order = " ORDER BY updated_at DESC" if "updated_at" in cols else ""
        cost = "cost" if "cost" in cols else "0.0 AS cost"
        rows = self.snap.query_all(f"SELECT id, prompt_tokens, completion_tokens, {cost} FROM sessions{order} LIMIT ?",
                                   (MAX_SESSIONS,))
        seen = self.state.usage
        for row in rows:
            sid = row["id"]
            prompt, completion = cell_int(row["prompt_tokens"]) or 0, cell_int(row["completion_tokens"]) or 0
            spent = float(row["cost"]) if isinstance(row["cost"], int | float) else 0.0
            if not isinstance(sid, str) or (prompt == 0 and completion == 0):
                continue
            before = seen.get(sid, (0, 0, 0.0))
            if (prompt, completion) == before[:2]:
                continue
            grew = prompt >= before[0] and completion >= before[1]
            base = before if grew else (0, 0, 0.0)  # counts went down: a reset session, count afresh
            model, provider = self.latest_model(sid)
            attributes = {**self.attributes, "usage_scope": "session_delta",
                          "session_prompt_tokens": str(prompt), "session_completion_tokens": str(completion)}
            if spent > base[2]:
                attributes["cost_usd"] = f"{spent - base[2]:.6f}"
            self.out.observations.append(_one(
                source_identity=f"crush:{sid}", coordinate=f"usage:{prompt}:{completion}", family=Family.USAGE,
                client=CLIENT, agent=AGENT, session_id=sid, sequence=0, cwd=self.cwd, model=model,
                provider=provider, attributes=attributes,
                usage=TokenUsage(input_tokens=prompt - base[0], output_tokens=completion - base[1]),
                provenance=Provenance(source_kind=KIND, path=self.source.path, row=f"sessions:{sid}")))
            seen[sid] = (prompt, completion, spent)
        if len(seen) > MAX_SESSIONS:
            keep = {r["id"] for r in rows if isinstance(r["id"], str)}
            self.state.usage = {k: v for k, v in seen.items() if k in keep}

    def latest_model(self, sid: str) -> tuple[str | None, str | None]:
        if "model" not in self.columns:
            return None, None
        provider = "provider" if "provider" in self.columns else "NULL AS provider"
        rows = self.snap.query_all(
            f"SELECT model, {provider} FROM messages WHERE session_id = ? AND role = 'assistant'"
            " AND model IS NOT NULL AND model != '' ORDER BY rowid DESC LIMIT 1", (sid,))
        if not rows:
            return None, None
        model, prov = rows[0]["model"], rows[0]["provider"]
        return (model if isinstance(model, str) else None), (prov if isinstance(prov, str) and prov else None)


def _one(**fields: Any) -> Observation:
    rec = Recorder(KIND)
    rec.add(**fields)
    return rec.take()[0]


def _arguments(text: str) -> Any:
    if not text:
        return None
    try:
        return w.any_decoder.decode(text)
    except msgspec.DecodeError:
        return text  # a call cut short while streaming: keep what was written


def _short(value: object) -> str | None:
    return value if isinstance(value, str) and len(value) <= 256 else None


class CrushAdapter:
    """Crush's per-project SQLite store (``.crush/crush.db``)."""

    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
        with SqliteSnapshot(source.path) as snap:
            tables = snap.tables()
            if "messages" not in tables:
                if tables:
                    raise SourceError("schema", "no Crush messages table")
                yield Batch(observations=[], quarantined=[], cursor=None)  # an empty file: nothing yet
                return
            missing = [c for c in REQUIRED if c not in snap.columns("messages")]
            if missing:
                raise SourceError("schema", f"messages lacks {', '.join(missing)}")
            run = _Run(source, snap, prior, ctx)
            yield from run.rows()
            run.usage()
            yield run.batch(partial=bool(run.state.open))
