"""Cursor IDE databases: ``User/globalStorage/state.vscdb`` and ``User/workspaceStorage/<id>/state.vscdb``.

Both are VS Code key-value stores (SQLite, WAL) that Cursor writes all the time; the
global one can be gigabytes. The adapter reads them through the snapshot reader
(:mod:`telltale.readers.sqlite`: no locks, no side files, one read transaction) and
selects only what it maps:

* ``cursorDiskKV`` rows by key prefix: first a small index of every ``composerData:<id>``
  row (key, size, its own ``lastUpdatedAt``), then, for a composer that changed since the
  cursor, its row and the ``bubbleId:<id>:<bubble>`` rows not emitted yet, by exact key;
* ``ItemTable`` rows by exact key only (:data:`~.ide_wire.ITEM_KEYS`): the older chat panel
  and the workspace's composer list. ``ItemTable`` also holds Cursor's credentials
  (``cursorAuth/*``); no query can reach them.

Every row is bounded before it is read: a row over :data:`MAX_ROW_BYTES` is never
delivered (SQL returns its size only) and is quarantined by key; a composer whose new
bubbles exceed :data:`MAX_COMPOSER_BYTES` is quarantined whole. Neither fails the source.

Rows are rewritten in place, so the cursor is per row key: each composer's own
``lastUpdatedAt`` and size (to skip it when unchanged) and short digests of the bubbles,
results and usage already emitted (to emit each once). A bubble is emitted when settled:
a later bubble exists, or the composer is not generating and its tool call is final.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Sequence
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
    make_observation,
)
from telltale.readers.files import read_small
from telltale.readers.sqlite import MAX_CELL_BYTES, Admission, SqliteSnapshot
from telltale.sources.base import AcquireContext, Batch, HistoryMode, PendingBatch, cursor_decoder
from telltale.sources.cursor import ide_wire as w
from telltale.sources.cursor.tools import AUTHORED_KEYS, facets
from telltale.sources.spec import Source

CLIENT = "cursor"
GLOBAL_KIND = "cursor.ide_global"
WORKSPACE_KIND = "cursor.ide_workspace"

#: The ``workspace.json`` beside a workspace database (one folder URI) read at most.
WORKSPACE_FILE_BOUND = 65_536
#: One row (a composer, a bubble, an ``ItemTable`` value) read at most; larger ones are
#: quarantined by key without being delivered. Below the reader's cell limit, so the
#: reader never fails the source for one row.
MAX_ROW_BYTES = 8 << 20
#: New bubble bytes of one composer in one scan; a composer over it is quarantined.
MAX_COMPOSER_BYTES = 64 << 20
#: New bubbles of one composer in one scan (below the reader's row limit per window).
MAX_COMPOSER_BUBBLES = 20_000
#: A batch is cut after this many input bytes or composers (each batch's cursor resumes).
WINDOW_BYTES = 8 << 20
WINDOW_COMPOSERS = 200
#: Keys per ``IN (...)`` query; composer index rows per page.
IN_CHUNK = 500
INDEX_PAGE = 5_000
#: Bytes of a bubble digest in the cursor (48 bits: 8 base64 characters).
DIGEST_BYTES = 6

assert MAX_ROW_BYTES <= MAX_CELL_BYTES


# -- cursor -------------------------------------------------------------------------------


class _Entry(msgspec.Struct, array_like=True, omit_defaults=True):
    """One composer (or legacy tab, or workspace mapping) in the cursor."""

    lu: int = 0  # lastUpdatedAt (ms) when last read; legacy: 0
    size: int = 0  # row size when last read
    done: str = ""  # digests of bubbles emitted
    results: str = ""  # digests of tool results emitted
    usage: str = ""  # digests of usage emitted
    pending: str = ""  # digests of emitted bubbles still waiting for a result or usage
    open: bool = False  # something was left unsettled: read again even if unchanged
    quarantined: int = -1  # lu at which the row was quarantined (reported once per change)
    started: bool = False  # its session observation was emitted


class IdeCursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    composers: dict[str, _Entry] = {}
    tabs: dict[str, _Entry] = {}
    legacy_hash: str = ""
    mapping_hash: str = ""
    mapped: str = ""  # digests of composers already linked to this workspace


_encoder = msgspec.json.Encoder()


decode_cursor = cursor_decoder(IdeCursor)


def digest(value: str) -> str:
    raw = blake2b(value.encode("utf-8", "surrogateescape"), digest_size=DIGEST_BYTES).digest()
    return base64.urlsafe_b64encode(raw).decode("ascii")


class _Digests:
    """A set of digests kept as one concatenated string in the cursor."""

    __slots__ = ("added", "items")

    def __init__(self, packed: str) -> None:
        width = (DIGEST_BYTES * 4 + 2) // 3
        self.items = {packed[i:i + width] for i in range(0, len(packed), width)}
        self.added: list[str] = []

    def __contains__(self, key: object) -> bool:
        return key in self.items

    def add(self, key: str) -> None:
        if key not in self.items:
            self.items.add(key)
            self.added.append(key)

    def pack(self, packed: str) -> str:
        return packed + "".join(self.added)


# -- output -------------------------------------------------------------------------------


class _Out(PendingBatch):
    """A batch in the making, and how many composers it holds (the batch cut)."""

    __slots__ = ("units",)

    def __init__(self) -> None:
        super().__init__()
        self.units = 0


def _ms(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def _json(text: str | None) -> Any:
    if not text:
        return None
    try:
        return w.any_decoder.decode(text)
    except msgspec.DecodeError:
        return None


def _text_of(value: Any) -> str | None:
    """The text a tool result carries (``output``/``contents``/…), else compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("output", "contents", "content", "result", "text", "stdout", "message", "error"):
            item = value.get(key)
            if isinstance(item, str):
                return item
    return msgspec.json.encode(value).decode("utf-8")


# -- the adapter --------------------------------------------------------------------------


class _Run:
    """One acquisition of one database."""

    def __init__(self, source: Source, snap: SqliteSnapshot, prior: IdeCursor | None, ctx: AcquireContext) -> None:
        self.source = source
        self.snap = snap
        self.ctx = ctx
        self.keep_cursor = ctx.history is HistoryMode.INCREMENTAL and not ctx.dry_run
        self.state = prior if prior is not None else IdeCursor()
        self.out = _Out()
        self.tables = snap.tables()

    # -- batching --------------------------------------------------------------------
    def cut(self, force: bool = False) -> Iterator[Batch]:
        out = self.out
        if force or out.bytes >= WINDOW_BYTES or out.units >= WINDOW_COMPOSERS:
            self.snap.verify_unchanged()
            self.out = _Out()
            self.snap.admission = Admission()  # each window is admitted on its own
            yield out.batch(self.encoded())

    def encoded(self) -> bytes | None:
        return _encoder.encode(self.state) if self.keep_cursor else None

    def quarantine(self, reason: str, row: str, *, session: str | None = None, record: str | None = None,
                   err: BoundExceeded | None = None, sequence: int | None = None) -> None:
        self.out.quarantined.append(Quarantine(
            source_kind=self.source.kind, path=self.source.path, reason=reason, session_id=_short(session),
            record_id=_short(record), sequence=sequence, row=_short(row),
            field=err.field if err is not None else None, bound=err.bound if err is not None else None,
        ))

    # -- ItemTable by exact key ------------------------------------------------------
    def item(self, key: str) -> tuple[str | None, int] | None:
        """``(value, size)`` of one ``ItemTable`` row; value ``None`` when over the bound."""
        if "ItemTable" not in self.tables:
            return None
        rows = self.snap.query_all(
            "SELECT length(value) AS size, CASE WHEN length(value) <= ? THEN value END AS value"
            " FROM ItemTable WHERE key = ?", (MAX_ROW_BYTES, key))
        if not rows:
            return None
        size = _ms(rows[0]["size"])
        value = rows[0]["value"]
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                self.quarantine("invalid_utf8", f"ItemTable:{key}")
                return None
        self.out.bytes += size
        return (value if isinstance(value, str) else None), size

    # -- composers (cursorDiskKV) ----------------------------------------------------
    def composers(self) -> Iterator[Batch]:
        if "cursorDiskKV" not in self.tables:
            return
        present: set[str] = set()
        order: list[tuple[int, str, int]] = []
        after = w.COMPOSER_PREFIX
        while True:  # the index in key pages, each admitted on its own
            previous = after
            page = self.snap.query_all(
                "SELECT key, length(value) AS size,"
                " CASE WHEN json_valid(CAST(value AS TEXT)) THEN json_extract(CAST(value AS TEXT), '$.lastUpdatedAt')"
                " END AS lu FROM cursorDiskKV WHERE key > ? AND key < ? ORDER BY key LIMIT ?",
                (after, w.COMPOSER_PREFIX[:-1] + ";", INDEX_PAGE),
            )
            self.snap.admission = Admission()
            for row in page:
                key = row["key"]
                if not isinstance(key, str) or not key.startswith(w.COMPOSER_PREFIX):
                    continue
                after = key
                cid = key[len(w.COMPOSER_PREFIX):]
                present.add(cid)
                order.append((_ms(row["lu"]), cid, _ms(row["size"])))
            if len(page) < INDEX_PAGE or after == previous:
                break
        order.sort()
        for lu, cid, size in order:
            entry = self.state.composers.get(cid)
            if entry is not None and entry.lu == lu and entry.size == size and not entry.open:
                continue  # unchanged since the cursor
            self.composer(cid, lu, size, entry)
            yield from self.cut()
        # Composers deleted from the store leave the cursor (they never come back).
        for cid in [c for c in self.state.composers if c not in present]:
            del self.state.composers[cid]

    def composer(self, cid: str, lu: int, size: int, entry: _Entry | None) -> None:
        out = self.out
        out.units += 1
        out.records += 1
        key = w.COMPOSER_PREFIX + cid
        entry = entry if entry is not None else _Entry()
        self.state.composers[cid] = entry
        if size > MAX_ROW_BYTES:
            self.reject(entry, lu, size, "over_budget", key, cid, BoundExceeded("composer", MAX_ROW_BYTES, size))
            return
        rows = self.snap.query_all("SELECT value FROM cursorDiskKV WHERE key = ?", (key,))
        if not rows:
            return  # deleted between the index and now
        raw = rows[0]["value"]
        out.bytes += size
        try:
            data = raw.encode("utf-8") if isinstance(raw, str) else raw
            if not isinstance(data, bytes):
                raise msgspec.ValidationError("not text")
            composer = w.composer_decoder.decode(data)
        except (msgspec.DecodeError, UnicodeEncodeError) as exc:
            reason = "schema_mismatch" if isinstance(exc, msgspec.ValidationError) else "malformed_json"
            self.reject(entry, lu, size, reason, key, cid, None)
            return
        bubbles, missing = self.bubbles(cid, composer, entry, lu, size)
        if bubbles is None:
            return
        mapper = _ComposerMapper(self, cid, composer)
        if not entry.started:  # first read (or first readable) version of the composer
            mapper.session(out)
            entry.started = True
        done = _Digests(entry.done)
        results = _Digests(entry.results)
        usage = _Digests(entry.usage)
        generating = (composer.status or "").lower() in w.GENERATING
        open_ = missing
        pending: list[str] = []
        legacy_tools = w.capability_tools(composer)
        for position, (bid, bubble) in enumerate(bubbles):
            d = digest(bid)
            if bubble is None:  # quarantined row: reported once, never read again
                done.add(d)
                continue
            if bubble.type is None and d in done:
                continue  # emitted before and settled: only its place counts
            if bubble.toolFormerData is None and bid in legacy_tools:
                bubble = msgspec.structs.replace(bubble, toolFormerData=legacy_tools[bid])
            tool = bubble.toolFormerData
            tool_final = tool is None or (tool.status or "").lower() not in w.TOOL_PENDING
            if d not in done:
                later = position < len(bubbles) - 1 or missing
                if not (later or (not generating and tool_final)):
                    open_ = True  # not settled yet: the next scan looks again
                    continue
                mapper.bubble(out, position, bid, bubble, with_result=tool_final)
                done.add(d)
                if tool is not None and tool_final:
                    results.add(d)
            elif tool is not None and tool_final and d not in results:
                mapper.result(out, position, bid, bubble)  # the call was emitted before its result
                results.add(d)
            if d not in usage and mapper.usage(out, position, bid, bubble):
                usage.add(d)
            if (tool is not None and not tool_final) or (
                    generating and bubble.type == w.ASSISTANT and d not in usage):
                pending.append(d)  # a result or usage may still arrive for it
                open_ = True
        entry.done, entry.results = done.pack(entry.done), results.pack(entry.results)
        entry.usage, entry.pending = usage.pack(entry.usage), "".join(pending)
        entry.lu, entry.size, entry.open = lu, size, open_

    def reject(self, entry: _Entry, lu: int, size: int, reason: str, key: str, cid: str,
               err: BoundExceeded | None) -> None:
        """Quarantine a whole composer, once per change of its row."""
        if entry.quarantined != lu or entry.size != size:
            self.quarantine(reason, key, session=cid, err=err)
        entry.quarantined, entry.lu, entry.size, entry.open = lu, lu, size, False

    def bubbles(self, cid: str, composer: w.Composer, entry: _Entry, lu: int, size: int,
                ) -> tuple[list[tuple[str, w.Bubble | None]] | None, bool]:
        """The composer's bubbles in order (``None`` for a quarantined row; an empty
        placeholder for one emitted before and not pending) and whether a header's row is
        not written yet. ``None`` when the composer itself was quarantined."""
        if composer.fullConversationHeadersOnly is None:
            # Cursor 1.x: the conversation is embedded in the composer row.
            embedded: list[tuple[str, w.Bubble | None]] = [
                (b.bubbleId or f"index:{i}", b) for i, b in enumerate(composer.conversation or [])]
            return embedded, False
        ids = [h.bubbleId for h in composer.fullConversationHeadersOnly if isinstance(h.bubbleId, str)]
        done = _Digests(entry.done)
        pending = _Digests(entry.pending)
        wanted = [bid for bid in ids if (d := digest(bid)) not in done or d in pending]
        rows: dict[str, tuple[int, Any]] = {}
        if wanted:
            if len(wanted) > MAX_COMPOSER_BUBBLES:
                self.reject(entry, lu, size, "over_budget", w.COMPOSER_PREFIX + cid, cid,
                            BoundExceeded("bubbles", MAX_COMPOSER_BUBBLES, len(wanted)))
                return None, False
            sizes: dict[str, int] = {}
            for chunk in _chunks(wanted):
                keys = [f"{w.BUBBLE_PREFIX}{cid}:{bid}" for bid in chunk]
                marks = ",".join("?" * len(keys))
                for row in self.snap.query(
                        f"SELECT key, length(value) AS size FROM cursorDiskKV WHERE key IN ({marks})", keys):
                    if isinstance(row["key"], str):
                        sizes[row["key"].rsplit(":", 1)[-1]] = _ms(row["size"])
            total = sum(s for s in sizes.values() if s <= MAX_ROW_BYTES)
            if total > MAX_COMPOSER_BYTES:
                self.reject(entry, lu, size, "over_budget", w.COMPOSER_PREFIX + cid, cid,
                            BoundExceeded("bubbles", MAX_COMPOSER_BYTES, total))
                return None, False
            self.snap.admission = Admission()  # the composer's bubbles are one window
            for chunk in _chunks(wanted):
                keys = [f"{w.BUBBLE_PREFIX}{cid}:{bid}" for bid in chunk]
                marks = ",".join("?" * len(keys))
                for row in self.snap.query(
                        "SELECT key, length(value) AS size, CASE WHEN length(value) <= ? THEN value END AS value"
                        f" FROM cursorDiskKV WHERE key IN ({marks})", [MAX_ROW_BYTES, *keys]):
                    if isinstance(row["key"], str):
                        rows[row["key"].rsplit(":", 1)[-1]] = (_ms(row["size"]), row["value"])
        out: list[tuple[str, w.Bubble | None]] = []
        missing = False
        for position, bid in enumerate(ids):
            d = digest(bid)
            if d in done and d not in pending:
                out.append((bid, w.Bubble(bubbleId=bid)))  # emitted before: only its place counts
                continue
            found = rows.get(bid)
            if found is None:
                missing = True  # the header is written before its row: wait for it
                break
            row_size, value = found
            self.out.records += 1
            self.out.bytes += row_size
            key = f"{w.BUBBLE_PREFIX}{cid}:{bid}"
            if value is None:
                self.quarantine("over_budget", key, session=cid, record=bid, sequence=position + 1,
                                err=BoundExceeded("bubble", MAX_ROW_BYTES, row_size))
                out.append((bid, None))
                continue
            try:
                data = value.encode("utf-8") if isinstance(value, str) else value
                bubble = w.bubble_decoder.decode(data)
            except (msgspec.DecodeError, UnicodeEncodeError) as exc:
                reason = "schema_mismatch" if isinstance(exc, msgspec.ValidationError) else "malformed_json"
                self.quarantine(reason, key, session=cid, record=bid, sequence=position + 1)
                out.append((bid, None))
                continue
            out.append((bid, bubble))
        return out, missing

    # -- the older chat panel (ItemTable) ------------------------------------------------
    def legacy(self) -> None:
        found = self.item(w.LEGACY_CHAT_KEY)
        if found is None:
            return
        value, size = found
        row = f"ItemTable:{w.LEGACY_CHAT_KEY}"
        self.out.records += 1
        if value is None:
            self.quarantine("over_budget", row, err=BoundExceeded("value", MAX_ROW_BYTES, size))
            return
        token = digest(value)
        if token == self.state.legacy_hash:
            return
        try:
            chat = w.legacy_decoder.decode(value)
        except msgspec.DecodeError as exc:
            reason = "schema_mismatch" if isinstance(exc, msgspec.ValidationError) else "malformed_json"
            if self.state.legacy_hash != "!" + token:
                self.quarantine(reason, row)
            self.state.legacy_hash = "!" + token
            return
        for tab in chat.tabs or []:
            if not tab.tabId:
                continue
            entry = self.state.tabs.setdefault(tab.tabId, _Entry())
            done = _Digests(entry.done)
            mapper = _LegacyMapper(self, tab, row)
            if not entry.started:
                mapper.session(self.out)
                entry.started = True
            for position, bubble in enumerate(tab.bubbles or []):
                bid = bubble.id or f"index:{position}"
                d = digest(bid)
                if d in done:
                    continue
                mapper.bubble(self.out, position, bid, bubble)
                done.add(d)
            entry.done = done.pack(entry.done)
        self.state.legacy_hash = token

    # -- workspace DB: which composers belong to this folder ------------------------------
    def mapping(self) -> None:
        found = self.item(w.WORKSPACE_COMPOSERS_KEY)
        if found is None:
            return
        value, size = found
        row = f"ItemTable:{w.WORKSPACE_COMPOSERS_KEY}"
        self.out.records += 1
        if value is None:
            self.quarantine("over_budget", row, err=BoundExceeded("value", MAX_ROW_BYTES, size))
            return
        token = digest(value)
        if token == self.state.mapping_hash:
            return
        try:
            listing = w.workspace_composers_decoder.decode(value)
        except msgspec.DecodeError as exc:
            reason = "schema_mismatch" if isinstance(exc, msgspec.ValidationError) else "malformed_json"
            self.quarantine(reason, row)
            self.state.mapping_hash = token
            return
        ids = [c.composerId for c in listing.allComposers or [] if isinstance(c.composerId, str)]
        ids += [c for c in listing.selectedComposerIds or [] if isinstance(c, str)]
        folder, workspace_id = workspace_folder(self.source.path)
        mapped = _Digests(self.state.mapped)
        for cid in dict.fromkeys(ids):
            if digest(cid) in mapped:
                continue
            mapped.add(digest(cid))
            attributes = {"workspace_id": workspace_id}
            try:
                self.out.observations.append(make_observation(
                    adapter=self.source.kind, source_identity=f"{CLIENT}:composer:{cid}",
                    coordinate=f"workspace:{workspace_id}", family=Family.SESSION, client=CLIENT,
                    session_id=cid, sequence=0, cwd=folder, attributes=attributes,
                    provenance=Provenance(source_kind=self.source.kind, path=self.source.path, row=row, record_id=cid),
                ))
            except BoundExceeded as err:
                self.quarantine("unbounded_value", row, session=cid, err=err)
        self.state.mapped = mapped.pack(self.state.mapped)
        self.state.mapping_hash = token


def workspace_folder(db_path: str) -> tuple[str | None, str]:
    """The folder (or ``.code-workspace`` file) of a workspace database, from the
    ``workspace.json`` beside it, and the workspace id (its directory name)."""
    directory = os.path.dirname(db_path)
    workspace_id = os.path.basename(directory)
    path = os.path.join(directory, "workspace.json")
    data = read_small(path, WORKSPACE_FILE_BOUND)
    if data is None:
        return None, workspace_id
    try:
        info = w.workspace_file_decoder.decode(data)
    except msgspec.DecodeError:
        return None, workspace_id
    return uri_path(info.folder or info.workspace), workspace_id


def uri_path(uri: str | None) -> str | None:
    """A local path from a ``file://`` URI (``file:///c%3A/x`` → ``c:/x``); other URIs as given."""
    if not uri:
        return None
    import urllib.parse

    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme != "file":
        return uri
    path = urllib.parse.unquote(parsed.path)
    if len(path) >= 3 and path[0] == "/" and path[2] == ":":
        path = path[1:]
    if parsed.netloc:
        return f"//{parsed.netloc}{path}"
    return path


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), IN_CHUNK):
        yield values[start:start + IN_CHUNK]


def _short(value: str | None) -> str | None:
    if value is None or len(value) > 256:
        return None
    return value


# -- mapping ------------------------------------------------------------------------------


class _ComposerMapper:
    """Observations of one composer's bubbles."""

    def __init__(self, run: _Run, cid: str, composer: w.Composer) -> None:
        self.run = run
        self.cid = cid
        self.composer = composer
        self.kind = run.source.kind
        self.identity = f"{CLIENT}:composer:{cid}"
        uri = composer.workspaceIdentifier.uri if composer.workspaceIdentifier is not None else None
        self.cwd = uri.fsPath or uri.path if uri is not None else None
        self.model = composer.modelConfig.modelName if composer.modelConfig is not None else None
        mode = composer.unifiedMode if composer.unifiedMode is not None else composer.forceMode
        self.attributes = {"mode": str(mode)} if mode is not None else {}

    def _add(self, out: _Out, items: list[Observation], row: str, bid: str | None, position: int,
             coordinate: str, **fields: Any) -> None:
        fields.setdefault("model", self.model)
        items.append(make_observation(
            adapter=self.kind, source_identity=self.identity, coordinate=coordinate, client=CLIENT,
            session_id=self.cid, sequence=position, cwd=self.cwd,
            provenance=Provenance(source_kind=self.kind, path=self.run.source.path, row=row, record_id=bid),
            **fields,
        ))

    def _keep(self, out: _Out, row: str, bid: str | None, position: int, build: Any) -> bool:
        items: list[Observation] = []
        try:
            build(items)
        except BoundExceeded as err:
            self.run.quarantine("unbounded_value", row, session=self.cid, record=bid, sequence=position, err=err)
            return False
        out.observations.extend(items)
        return True

    def session(self, out: _Out) -> None:
        composer = self.composer
        attributes = dict(self.attributes)
        if composer.name:
            attributes["name"] = composer.name
        if composer.isAgentic is not None:
            attributes["agentic"] = str(composer.isAgentic).lower()
        if composer.workspaceIdentifier is not None and composer.workspaceIdentifier.id:
            attributes["workspace_id"] = composer.workspaceIdentifier.id
        row = w.COMPOSER_PREFIX + self.cid
        self._keep(out, row, self.cid, 0, lambda items: self._add(
            out, items, row, self.cid, 0, "composer", family=Family.SESSION,
            occurred_at=iso_time(composer.createdAt), attributes=attributes))

    def _time(self, bubble: w.Bubble) -> str | None:
        created = iso_time(bubble.createdAt)
        if created is not None:
            return created
        timing = bubble.timingInfo
        return iso_time(timing.clientStartTime) if timing is not None else None

    def _row(self, bid: str) -> str:
        if self.composer.fullConversationHeadersOnly is None:
            return f"{w.COMPOSER_PREFIX}{self.cid}#conversation"
        return f"{w.BUBBLE_PREFIX}{self.cid}:{bid}"

    def bubble(self, out: _Out, position: int, bid: str, bubble: w.Bubble, *, with_result: bool) -> None:
        row = self._row(bid)
        seq = position + 1
        model = bubble.modelInfo.modelName if bubble.modelInfo is not None and bubble.modelInfo.modelName else None
        when = self._time(bubble)

        def build(items: list[Observation]) -> None:
            extra: dict[str, Any] = {"occurred_at": when, "attributes": self.attributes}
            if model:
                extra["model"] = model
            if bubble.type == w.USER:
                if bubble.text:
                    self._add(out, items, row, bid, seq, f"bubble:{bid}:text", family=Family.MESSAGE,
                              role="user", text=bubble.text, **extra)
                return
            if bubble.type != w.ASSISTANT:
                raise _Unknown
            if bubble.text and bubble.text.strip():
                self._add(out, items, row, bid, seq, f"bubble:{bid}:text", family=Family.MESSAGE,
                          role="assistant", text=bubble.text, **extra)
            tool = bubble.toolFormerData
            if tool is None:
                return
            raw = _json(tool.rawArgs)
            params = _json(tool.params)
            args = raw if isinstance(raw, dict) else params if isinstance(params, dict) else tool.rawArgs
            attributes = dict(self.attributes)
            if tool.userDecision:
                attributes["user_decision"] = tool.userDecision
            if tool.status:
                attributes["tool_status"] = tool.status
            self._add(out, items, row, bid, seq, f"bubble:{bid}:requested", family=Family.TOOL,
                      stage=Stage.REQUESTED, tool_name=tool.name, call_id=tool.toolCallId,
                      arguments=encode_arguments(args, AUTHORED_KEYS), occurred_at=when,
                      attributes=attributes, **facets(tool.name, raw, params), **({"model": model} if model else {}))
            if with_result:
                self._result(out, items, row, bid, seq, bubble)

        try:
            self._keep(out, row, bid, seq, build)
        except _Unknown:
            self.run.quarantine("unknown_record_type", row, session=self.cid, record=bid, sequence=seq)

    def result(self, out: _Out, position: int, bid: str, bubble: w.Bubble) -> None:
        row = self._row(bid)
        seq = position + 1
        self._keep(out, row, bid, seq, lambda items: self._result(out, items, row, bid, seq, bubble))

    def _result(self, out: _Out, items: list[Observation], row: str, bid: str, seq: int, bubble: w.Bubble) -> None:
        tool = bubble.toolFormerData
        assert tool is not None
        status = (tool.status or "").lower()
        error = _text_of(tool.error) if tool.error not in (None, "", {}) else None
        result = _text_of(_json(tool.result)) if tool.result else None
        if result is None and tool.result:
            result = tool.result
        if result is None and error is None and status in ("", "completed") and not tool.result:
            return  # nothing came back (a call without output)
        self._add(out, items, row, bid, seq, f"bubble:{bid}:result", family=Family.TOOL, stage=Stage.RESULT,
                  tool_name=tool.name, call_id=tool.toolCallId, result=result if result is not None else error,
                  is_error=status in w.TOOL_ERROR or error is not None,
                  interrupted=status in w.TOOL_STOPPED, occurred_at=self._end_time(bubble),
                  attributes={"tool_status": tool.status} if tool.status else {})

    def _end_time(self, bubble: w.Bubble) -> str | None:
        timing = bubble.timingInfo
        if timing is not None and timing.clientEndTime:
            return iso_time(timing.clientEndTime)
        return self._time(bubble)

    def usage(self, out: _Out, position: int, bid: str, bubble: w.Bubble) -> bool:
        count = bubble.tokenCount
        if count is None or not (count.inputTokens or count.outputTokens):
            return False
        row = self._row(bid)
        seq = position + 1
        model = bubble.modelInfo.modelName if bubble.modelInfo is not None and bubble.modelInfo.modelName else None
        usage = TokenUsage(input_tokens=count.inputTokens, output_tokens=count.outputTokens)
        return self._keep(out, row, bid, seq, lambda items: self._add(
            out, items, row, bid, seq, f"bubble:{bid}:usage", family=Family.USAGE, usage=usage,
            occurred_at=self._time(bubble), **({"model": model} if model else {})))


class _Unknown(Exception):
    """A bubble of a type we do not know."""


class _LegacyMapper:
    """The pre-composer chat panel: tabs of ``user`` / ``ai`` bubbles."""

    def __init__(self, run: _Run, tab: w.LegacyTab, row: str) -> None:
        self.run = run
        self.tab = tab
        self.row = row
        self.kind = run.source.kind
        self.session_id = tab.tabId or ""
        self.identity = f"{CLIENT}:chat:{self.session_id}"

    def session(self, out: _Out) -> None:
        attributes = {"name": self.tab.chatTitle} if self.tab.chatTitle else {}
        try:
            out.observations.append(make_observation(
                adapter=self.kind, source_identity=self.identity, coordinate="tab", family=Family.SESSION,
                client=CLIENT, session_id=self.session_id, sequence=0, attributes=attributes,
                provenance=Provenance(source_kind=self.kind, path=self.run.source.path, row=self.row,
                                      record_id=self.session_id),
            ))
        except BoundExceeded as err:
            self.run.quarantine("unbounded_value", self.row, session=self.session_id, err=err)

    def bubble(self, out: _Out, position: int, bid: str, bubble: w.LegacyBubble) -> None:
        role = {"user": "user", "ai": "assistant"}.get(bubble.type or "")
        if role is None:
            self.run.quarantine("unknown_record_type", self.row, session=self.session_id, record=bid,
                                sequence=position + 1)
            return
        text = bubble.text or bubble.rawText
        if not text:
            out.other += 1
            return
        try:
            out.observations.append(make_observation(
                adapter=self.kind, source_identity=self.identity, coordinate=f"bubble:{bid}:text",
                family=Family.MESSAGE, client=CLIENT, session_id=self.session_id, sequence=position + 1,
                role=role, text=text, model=bubble.modelType if role == "assistant" else None,
                provenance=Provenance(source_kind=self.kind, path=self.run.source.path, row=self.row, record_id=bid),
            ))
        except BoundExceeded as err:
            self.run.quarantine("unbounded_value", self.row, session=self.session_id, record=bid,
                                sequence=position + 1, err=err)


class CursorIdeAdapter:
    """Cursor IDE ``state.vscdb`` (global or workspace); see the module docstring."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior = decode_cursor(cursor) if ctx.history is HistoryMode.INCREMENTAL else None
        with SqliteSnapshot(source.path) as snap:
            run = _Run(source, snap, prior, ctx)
            if run.tables and not run.tables & {"ItemTable", "cursorDiskKV"}:
                raise SourceError("schema", "neither ItemTable nor cursorDiskKV")
            yield from run.composers()
            run.legacy()
            if source.kind == WORKSPACE_KIND:
                run.mapping()
            snap.verify_unchanged()
            yield run.out.batch(run.encoded())


class CursorGlobalAdapter(CursorIdeAdapter):
    def __init__(self) -> None:
        super().__init__(GLOBAL_KIND)


class CursorWorkspaceAdapter(CursorIdeAdapter):
    def __init__(self) -> None:
        super().__init__(WORKSPACE_KIND)
