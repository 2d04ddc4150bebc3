"""Zed ``threads.db``: one row per thread, rewritten whole on every update.

Read through the snapshot reader (no locks, nothing created beside the database). A
small index of every row (``id``, ``updated_at``, ``data_type``, ``length(data)``) says
which threads changed since the cursor; only those rows are read, each bounded by
:data:`MAX_ROW_BYTES` before delivery and, when compressed (``data_type = 'zstd'`` or
the zstd magic), by :data:`MAX_THREAD_BYTES` after decompression. A row over a bound or
that does not decode is quarantined by thread id (once per version of the row); the
other threads still go through. A ``threads`` table without the columns Zed writes is
a layout this build does not know: the database is reported ``unsupported``
(``unknown_format``), never guessed at.

The cursor is per thread: its ``updated_at`` and size (to skip it unchanged), short
digests of what was emitted (user messages by id, agent text by position after its
user message, tool calls and results by tool-use id), and the thread's cumulative token
totals. Each fact is emitted once, when first seen, and never again however the row is
rewritten; a tool call whose input is still streaming (``is_input_complete: false``)
waits. Zed keeps no per-response usage: the increase of ``cumulative_token_usage`` since
the last scan is one usage observation (``usage_scope: session_delta``), identified by
the totals it brings the thread to, so a thread's usage events sum to its total.
Messages that vanish from a thread (an edit, a regeneration) raise one
``source_reordered`` health event, never a re-emission.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.digest import blake2b
from telltale.errors import UnsupportedSource
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
from telltale.readers.records import failure_reason
from telltale.readers.sqlite import MAX_CELL_BYTES, Admission, Row, SqliteSnapshot
from telltale.sources._jsonl_driver import Recorder, ToolFacets, json_text
from telltale.sources.base import AcquireContext, Batch, HistoryMode, SourceHealth, cursor_decoder
from telltale.sources.spec import Source
from telltale.sources.zed import CLIENT, KIND, wire

AGENT = "Zed"
#: One row read at most (compressed size); larger rows are quarantined undelivered.
MAX_ROW_BYTES = 8 << 20
#: One thread's JSON after decompression.
MAX_THREAD_BYTES = 64 << 20
#: A batch is cut after this many row bytes or threads.
WINDOW_BYTES = 8 << 20
WINDOW_THREADS = 200
DIGEST_BYTES = 6
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
REQUIRED_COLUMNS = frozenset({"id", "updated_at", "data_type", "data"})
AUTHORED_KEYS = ("command", "content", "old_text", "new_text", "display_description", "query", "input")

assert MAX_ROW_BYTES <= MAX_CELL_BYTES

_facets = ToolFacets(
    shell=frozenset({"terminal"}),
    files=frozenset({"read_file", "edit_file", "create_directory", "delete_path", "copy_path", "move_path",
                     "list_directory", "find_path", "grep", "open"}),
    urls=frozenset({"fetch"}),
    path_keys=("path", "source_path", "destination_path"),
    writes=frozenset({"edit_file", "create_directory", "delete_path", "copy_path", "move_path"}),
    reads=frozenset({"read_file", "list_directory", "find_path", "grep"}),
)


class _Thread(msgspec.Struct, array_like=True, omit_defaults=True):
    u: str = ""  # updated_at when last read
    size: int = 0  # length(data) when last read
    done: str = ""  # packed digests of emitted facts
    totals: list[int] = []  # cumulative usage last reported
    started: bool = False  # its session observation was emitted
    bad: str = ""  # updated_at of a version quarantined (reported once)


class ZedCursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    threads: dict[str, _Thread] = {}


_encoder = msgspec.json.Encoder()


def _digest(value: str) -> str:
    raw = blake2b(value.encode("utf-8", "surrogateescape"), digest_size=DIGEST_BYTES).digest()
    return base64.urlsafe_b64encode(raw).decode("ascii")


_WIDTH = (DIGEST_BYTES * 4 + 2) // 3


def _unpack(packed: str) -> list[str]:
    return [packed[i:i + _WIDTH] for i in range(0, len(packed), _WIDTH)]


def decompress(data: bytes, data_type: str) -> bytes:
    """The thread JSON of a row: zstd frames (by type or magic) are inflated, bounded.

    Without the zstd decoder (``zstandard`` is a dependency, but a stripped install may
    lack it) the database is reported ``unsupported`` (``no_decoder``), not failed.
    """
    if data_type.lower() == "zstd" or data.startswith(ZSTD_MAGIC):
        try:
            import zstandard
        except ImportError:
            raise UnsupportedSource("no_decoder", "zstd rows and no zstandard module") from None
        try:
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
                out = reader.read(MAX_THREAD_BYTES + 1)
        except zstandard.ZstdError as exc:
            raise ValueError("not a zstd frame") from exc
        if len(out) > MAX_THREAD_BYTES:
            raise BoundExceeded("data", MAX_THREAD_BYTES, len(out))
        return out
    if data_type.lower() not in ("json", ""):
        raise ValueError(f"data_type {data_type[:32]!r}")
    return data


def _text(parts: object) -> str | None:
    """Text of a content list of tagged parts (``{"Text": "..."}``; mentions keep their text)."""
    if isinstance(parts, str):
        return parts or None
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, dict):
            value = part.get("Text")
            if isinstance(value, str) and value:
                texts.append(value)
            mention = part.get("Mention")
            if isinstance(mention, dict) and isinstance(mention.get("content"), str):
                texts.append(mention["content"])
    return "\n".join(texts) or None


def _result_text(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if isinstance(content, dict):
        text = content.get("Text")
        if isinstance(text, str):
            return text
    if isinstance(content, str):
        return content
    output = result.get("output")
    return json_text(output) if output is not None else json_text(content)


class _Run:
    """One acquisition of one database."""

    def __init__(self, source: Source, snap: SqliteSnapshot, prior: ZedCursor | None, ctx: AcquireContext) -> None:
        self.source = source
        self.snap = snap
        self.keep_cursor = ctx.history is HistoryMode.INCREMENTAL and not ctx.dry_run
        self.state = prior if prior is not None else ZedCursor()
        self._reset()

    def _reset(self) -> None:
        self.observations: list[Observation] = []
        self.quarantined: list[Quarantine] = []
        self.health: list[SourceHealth] = []
        self.records = 0
        self.other = 0
        self.bytes = 0
        self.units = 0

    def batch(self) -> Batch:
        cursor = _encoder.encode(self.state) if self.keep_cursor else None
        batch = Batch(observations=self.observations, quarantined=self.quarantined, cursor=cursor,
                      records_read=self.records, other_records=self.other, bytes_read=self.bytes, health=self.health)
        self._reset()
        return batch

    def run(self) -> Iterator[Batch]:
        if "threads" not in self.snap.tables():
            raise UnsupportedSource("unknown_format", "no threads table")
        columns = set(self.snap.columns("threads"))
        if not columns >= REQUIRED_COLUMNS:
            raise UnsupportedSource("unknown_format", "threads table without Zed's columns")
        extra = [c for c in ("parent_id", "folder_paths", "created_at") if c in columns]
        select = ", ".join(f"CAST({c} AS TEXT) AS {c}" for c in extra)
        index = self.snap.query_all(
            "SELECT CAST(id AS TEXT) AS id, CAST(updated_at AS TEXT) AS updated_at,"
            " CAST(data_type AS TEXT) AS data_type, length(data) AS size"
            + (", " + select if select else "") + " FROM threads ORDER BY updated_at, id"
        )
        self.snap.admission = Admission()
        present: set[str] = set()
        for row in index:
            tid = row["id"]
            if not isinstance(tid, str) or not tid:
                continue
            present.add(tid)
            updated = row["updated_at"] if isinstance(row["updated_at"], str) else ""
            size = row["size"] if isinstance(row["size"], int) else 0
            entry = self.state.threads.get(tid)
            if entry is not None and entry.u == updated and entry.size == size:
                continue  # unchanged since the cursor
            entry = entry if entry is not None else _Thread()
            self.state.threads[tid] = entry
            self.thread(tid, row, updated, size, entry)
            if self.bytes >= WINDOW_BYTES or self.units >= WINDOW_THREADS:
                self.snap.verify_unchanged()
                self.snap.admission = Admission()
                yield self.batch()
        for tid in [t for t in self.state.threads if t not in present]:
            del self.state.threads[tid]  # deleted threads never come back under their id
        self.snap.verify_unchanged()
        yield self.batch()

    def reject(self, tid: str, updated: str, size: int, reason: str, entry: _Thread,
               err: BoundExceeded | None = None) -> None:
        entry.u, entry.size = updated, size
        if entry.bad == updated:
            return
        entry.bad = updated
        self.quarantined.append(Quarantine(
            source_kind=KIND, path=self.source.path, reason=reason, session_id=tid if len(tid) <= 256 else None,
            row=f"threads:{tid}"[:256], field=err.field if err else None, bound=err.bound if err else None))

    def thread(self, tid: str, row: Row, updated: str, size: int, entry: _Thread) -> None:
        self.units += 1
        self.records += 1
        if size > MAX_ROW_BYTES:
            self.reject(tid, updated, size, "over_budget", entry, BoundExceeded("data", MAX_ROW_BYTES, size))
            return
        rows = self.snap.query_all("SELECT data FROM threads WHERE CAST(id AS TEXT) = ?", (tid,))
        if not rows:
            return  # deleted between the index and now
        raw = rows[0]["data"]
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        if not isinstance(data, bytes):
            self.reject(tid, updated, size, "schema_mismatch", entry)
            return
        self.bytes += len(data)
        data_type = row["data_type"] if isinstance(row["data_type"], str) else ""
        try:
            text = decompress(data, data_type)
        except BoundExceeded as err:
            self.reject(tid, updated, size, "over_budget", entry, err)
            return
        except ValueError:
            self.reject(tid, updated, size, "undecodable_row", entry)
            return
        try:
            thread = wire.thread.decode(text)
        except RecursionError:
            self.reject(tid, updated, size, "nesting_too_deep", entry)
            return
        except msgspec.DecodeError as exc:
            self.reject(tid, updated, size, failure_reason(text, exc), entry)
            return
        rec = Recorder(KIND)
        done = set(_unpack(entry.done))
        mapper = _Mapper(self.source, tid, row, thread)
        keys = list(dict.fromkeys(mapper.project(rec, done, started=entry.started)))
        try:
            totals = mapper.usage(rec, entry.totals)
        except BoundExceeded as exc:  # a model name over its bound: the usage is set aside
            mapper.bounded.append(("usage", exc))
            totals = entry.totals
        for key, bound in mapper.bounded:
            self.quarantined.append(Quarantine(
                source_kind=KIND, path=self.source.path, reason="unbounded_value",
                session_id=tid if len(tid) <= 256 else None, record_id=key[:256], row=f"threads:{tid}"[:256],
                field=bound.field, bound=bound.bound))
        observations = rec.take()
        if not observations:
            self.other += 1
        self.observations.extend(observations)
        now = set(keys)
        vanished = [d for d in _unpack(entry.done) if d not in now]
        if vanished:
            self.health.append(SourceHealth(
                reason="source_reordered", identity=blake2b(text, digest_size=16).hexdigest(),
                fields={"thread": _digest(tid), "vanished": len(vanished), "entries_now": len(keys)}))
        entry.done = "".join(d for d in keys if d in done or d in mapper.emitted)
        entry.totals = totals
        entry.started = True
        entry.u, entry.size, entry.bad = updated, size, ""


class _Mapper:
    """One thread's facts, each under a stable key (digested into the cursor)."""

    def __init__(self, source: Source, tid: str, row: Row, thread: wire.Thread) -> None:
        self.source = source
        self.tid = tid
        self.thread = thread
        self.emitted: set[str] = set()
        self.bounded: list[tuple[str, BoundExceeded]] = []
        model = wire.typed(thread.model, wire.Model) or wire.Model()
        self.model, self.provider = model.model, model.provider
        self.title = thread.title if isinstance(thread.title, str) else None
        folders = row.get("folder_paths")
        cwd = folders.splitlines()[0].strip() if isinstance(folders, str) and folders.strip() else None
        snapshot = wire.typed(thread.initial_project_snapshot, wire.Snapshot)
        if cwd is None and snapshot is not None and snapshot.worktree_snapshots:
            cwd = snapshot.worktree_snapshots[0].worktree_path
        self.cwd = cwd
        parent = row.get("parent_id")
        self.parent = parent if isinstance(parent, str) and parent else None
        created = row.get("created_at")
        self.created = iso_time(created) if isinstance(created, str) else None
        self.identity = f"{CLIENT}:{tid}"

    def common(self, index: int, key: str) -> dict[str, Any]:
        return {
            "client": CLIENT, "agent": AGENT, "session_id": self.tid, "cwd": self.cwd, "sequence": index,
            "provenance": Provenance(source_kind=KIND, path=self.source.path, row=f"threads:{self.tid}"[:256],
                                     record_id=key[:256]),
        }

    def emit(self, key: str, done: set[str], add: Any) -> str:
        """Run ``add`` unless ``key`` was emitted before; a value over its bound costs
        that fact only (quarantined by key, then accounted like an emitted one)."""
        d = _digest(key)
        if d not in done and d not in self.emitted:
            try:
                add()
            except BoundExceeded as err:
                self.bounded.append((key, err))
            self.emitted.add(d)
        return d

    def project(self, rec: Recorder, done: set[str], *, started: bool) -> list[str]:
        keys: list[str] = []
        if not started:
            title = self.title
            self.emit("session", set(), lambda: rec.add(
                source_identity=self.identity, coordinate="session", family=Family.SESSION, model=self.model,
                provider=self.provider, parent_session_id=self.parent, occurred_at=self.created,
                attributes={"title": title[:256]} if title else {}, **self.common(0, "session")))
            self.emitted.discard(_digest("session"))
        after = "start"
        agents_since = 0
        for index, message in enumerate(self.thread.messages):
            if not isinstance(message, dict):
                continue  # not a message this build knows: nothing to say about it
            user = message.get("User")
            agent = message.get("Agent")
            if isinstance(user, dict):
                uid = user.get("id")
                after = f"u:{uid}" if isinstance(uid, str) and uid else f"i:{index}"
                agents_since = 0
                text = _text(user.get("content"))
                if text:
                    key = f"{after}:text"
                    keys.append(self.emit(key, done, lambda k=key, t=text, i=index: rec.add(
                        source_identity=self.identity, coordinate=k, family=Family.MESSAGE, role="user", text=t,
                        **self.common(i, k))))
            elif isinstance(agent, dict):
                base = f"{after}:a{agents_since}"
                agents_since += 1
                keys.extend(self.agent(rec, done, index, base, agent))
        return keys

    def agent(self, rec: Recorder, done: set[str], index: int, base: str, agent: dict[str, Any]) -> list[str]:
        keys: list[str] = []
        content = agent.get("content")
        parts = content if isinstance(content, list) else []
        calls = [p["ToolUse"] for p in parts if isinstance(p, dict) and isinstance(p.get("ToolUse"), dict)]
        streaming = any(c.get("is_input_complete") is False for c in calls)
        text = _text(parts)
        if text and not streaming:
            key = f"{base}:text"
            keys.append(self.emit(key, done, lambda: rec.add(
                source_identity=self.identity, coordinate=key, family=Family.MESSAGE, role="assistant", text=text,
                model=self.model, provider=self.provider, **self.common(index, key))))
        names: dict[str, str] = {}
        for n, call in enumerate(calls):
            cid = call.get("id") if isinstance(call.get("id"), str) else f"{base}:call:{n}"
            name = call.get("name") if isinstance(call.get("name"), str) else None
            if name:
                names[cid] = name
            if call.get("is_input_complete") is False:
                continue
            args = call.get("input")
            if args is None:
                args = call.get("raw_input")
            key = f"call:{cid}:requested"
            keys.append(self.emit(key, done, lambda k=key, c=cid, t=name, a=args: rec.add(
                source_identity=self.identity, coordinate=k, family=Family.TOOL, stage=Stage.REQUESTED,
                tool_name=t, call_id=c, model=self.model, provider=self.provider,
                arguments=encode_arguments(a if isinstance(a, dict | list | str) else json_text(a), AUTHORED_KEYS),
                **_facets(t, a), **self.common(index, k))))
        results = agent.get("tool_results")
        for rid, result in (results.items() if isinstance(results, dict) else ()):
            if not isinstance(result, dict):
                continue
            use_id = result.get("tool_use_id")
            cid = use_id if isinstance(use_id, str) else str(rid)
            tool = result.get("tool_name")
            name = tool if isinstance(tool, str) else names.get(cid)
            is_error = result.get("is_error") if isinstance(result.get("is_error"), bool) else None
            key = f"call:{cid}:result"
            keys.append(self.emit(key, done, lambda k=key, c=cid, t=name, e=is_error, r=result: rec.add(
                source_identity=self.identity, coordinate=k, family=Family.TOOL, stage=Stage.RESULT, tool_name=t,
                call_id=c, result=_result_text(r), is_error=e, **self.common(index, k))))
        return keys

    def usage(self, rec: Recorder, prior: list[int]) -> list[int]:
        usage = wire.typed(self.thread.cumulative_token_usage, wire.TokenUsage)
        if usage is None:
            return prior
        values = (usage.input_tokens, usage.output_tokens, usage.cache_creation_input_tokens,
                  usage.cache_read_input_tokens)
        totals = [v if isinstance(v, int) and v > 0 else 0 for v in values]
        base = prior if len(prior) == len(totals) and all(
            now >= before for now, before in zip(totals, prior, strict=True)) else [0] * len(totals)
        fresh, out, cache_write, cache_read = (now - before for now, before in zip(totals, base, strict=True))
        if fresh or out or cache_write or cache_read:
            key = "usage:" + ":".join(map(str, totals))
            rec.add(source_identity=self.identity, coordinate=key, family=Family.USAGE,
                    usage=TokenUsage(input_tokens=fresh + cache_write + cache_read, output_tokens=out,
                                     cache_creation_input_tokens=cache_write or None,
                                     cache_read_input_tokens=cache_read or None),
                    model=self.model, provider=self.provider, attributes={"usage_scope": "session_delta"},
                    **self.common(len(self.thread.messages), key))
        return totals


decode_cursor = cursor_decoder(ZedCursor)


class ZedThreadsAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
        with SqliteSnapshot(source.path) as snap:
            yield from _Run(source, snap, prior, ctx).run()
