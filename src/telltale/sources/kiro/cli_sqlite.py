"""Kiro CLI's older store: ``kiro-cli/data.sqlite3``, table ``conversations_v2``.

One row per (working directory, conversation): ``key`` (the directory),
``conversation_id``, ``value`` (the whole conversation as JSON, the format Kiro CLI
inherited from Amazon Q Developer CLI), ``created_at``/``updated_at`` (epoch ms). A
conversation resumed in another directory gets another row holding the whole history
again: only its newest row is read. A row is rewritten whole as the conversation grows,
so the cursor is per conversation: its row's ``updated_at`` and size (skip unchanged
rows), and short digests of the facts emitted (shared by all its rows).
``history`` holds turns ``{user, assistant, request_metadata}`` (older builds: a
``[user, assistant]`` pair): the user's ``content`` is ``{"Prompt": {prompt}}`` or
``{"ToolUseResults": {tool_use_results[{tool_use_id, content[{Text}|{Json}], status}]}}``,
the assistant's ``{"Response": {content}}`` or ``{"ToolUse": {content, tool_uses[{id,
name, args}]}}``. Each fact is emitted once; a row over :data:`MAX_ROW_BYTES`, or one
that does not decode, is quarantined by conversation (once per version). A database
without that table is reported ``unsupported`` (``unknown_format``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import msgspec

from telltale.digest import blake2b
from telltale.errors import UnsupportedSource
from telltale.model import BoundExceeded, Family, Observation, Provenance, Quarantine, Stage, encode_arguments, iso_time
from telltale.readers.records import failure_reason
from telltale.readers.sqlite import Admission, SqliteSnapshot
from telltale.sources._jsonl_driver import Recorder, json_text
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.kiro import CLIENT, SQLITE_KIND, tools
from telltale.sources.spec import Source

KIND = SQLITE_KIND
AGENT = "Kiro CLI"
MAX_ROW_BYTES = 8 << 20
WINDOW_BYTES = 8 << 20
DIGEST_BYTES = 6
_WIDTH = (DIGEST_BYTES * 4 + 2) // 3
REQUIRED_COLUMNS = frozenset({"key", "conversation_id", "value", "updated_at"})


class _Row(msgspec.Struct, array_like=True, omit_defaults=True):
    u: int = 0
    size: int = 0
    done: str = ""
    bad: int = -1


class SqliteCursor(msgspec.Struct, omit_defaults=True):
    v: int = 1
    rows: dict[str, _Row] = {}


class _Conversation(msgspec.Struct):
    conversation_id: str | None = None
    history: list[Any] = []


_conversation = msgspec.json.Decoder(_Conversation)
_cursor = msgspec.json.Decoder(SqliteCursor)
_encoder = msgspec.json.Encoder()


def _digest(value: str) -> str:
    raw = blake2b(value.encode("utf-8", "surrogateescape"), digest_size=DIGEST_BYTES).digest()
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _one(tagged: Any) -> tuple[str, dict[str, Any]]:
    """``{"Tag": {...}}`` → ``("Tag", {...})`` (externally tagged enums)."""
    if isinstance(tagged, dict) and len(tagged) == 1:
        tag, body = next(iter(tagged.items()))
        if isinstance(body, dict):
            return tag, body
    return "", {}


def _result_text(content: Any) -> str | None:
    """``[{"Text": "..."} | {"Json": {...}}]`` → text (JSON parts as compact JSON)."""
    if not isinstance(content, list):
        return json_text(content)
    texts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("Text"), str):
            texts.append(part["Text"])
        elif "Json" in part:
            texts.append(json_text(part["Json"]) or "")
    return "\n".join(t for t in texts if t) or None


class _Mapper:
    def __init__(self, source: Source, sid: str, cwd: str | None, done: set[str]) -> None:
        self.source = source
        self.sid = sid
        self.cwd = cwd
        self.done = done
        self.keys: list[str] = []
        self.emitted: set[str] = set()
        self.bounded: list[tuple[str, BoundExceeded]] = []
        self.rec = Recorder(KIND)
        self.names: dict[str, str] = {}

    def fact(self, key: str, index: int, when: str | None, **fields: Any) -> None:
        d = _digest(key)
        self.keys.append(d)
        if d in self.done or d in self.emitted:
            return
        self.emitted.add(d)
        try:
            self.rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate=key, client=CLIENT, agent=AGENT,
                         session_id=self.sid, cwd=self.cwd, sequence=index, occurred_at=when,
                         provenance=Provenance(source_kind=KIND, path=self.source.path,
                                               row=f"conversations_v2:{self.sid}"[:256], record_id=key[:256]),
                         **fields)
        except BoundExceeded as err:
            self.bounded.append((key, err))

    def turn(self, index: int, turn: Any) -> None:
        meta: Any
        if isinstance(turn, list) and len(turn) == 2:
            user, assistant, meta = turn[0], turn[1], {}
        elif isinstance(turn, dict):
            user, assistant, meta = turn.get("user"), turn.get("assistant"), turn.get("request_metadata") or {}
        else:
            return
        user = user if isinstance(user, dict) else {}
        when = iso_time(user.get("timestamp"))
        tag, body = _one(user.get("content"))
        prompt = body.get("prompt")
        if tag in ("Prompt", "CancelledToolUses") and isinstance(prompt, str) and prompt:
            self.fact(f"h{index}:user", index, when, family=Family.MESSAGE, role="user", text=prompt)
        results = body.get("tool_use_results")
        for result in results if isinstance(results, list) else ():
            if not isinstance(result, dict) or not isinstance(result.get("tool_use_id"), str):
                continue
            cid = result["tool_use_id"]
            status = result.get("status")
            self.fact(f"call:{cid}:result", index, when, family=Family.TOOL, stage=Stage.RESULT,
                      tool_name=self.names.get(cid), call_id=cid, result=_result_text(result.get("content")),
                      is_error=status.lower() == "error" if isinstance(status, str) else None,
                      interrupted=tag == "CancelledToolUses")
        end = meta.get("stream_end_timestamp_ms") if isinstance(meta, dict) else None
        model = meta.get("model_id") if isinstance(meta, dict) and isinstance(meta.get("model_id"), str) else None
        atag, abody = _one(assistant)
        text = abody.get("content")
        if atag in ("Response", "ToolUse") and isinstance(text, str) and text:
            self.fact(f"h{index}:assistant", index, iso_time(end), family=Family.MESSAGE, role="assistant",
                      text=text, model=model)
        uses = abody.get("tool_uses")
        for n, use in enumerate(uses if isinstance(uses, list) else ()):
            if not isinstance(use, dict):
                continue
            cid = use["id"] if isinstance(use.get("id"), str) else f"h{index}:call:{n}"
            name = use.get("name") if isinstance(use.get("name"), str) else None
            if name:
                self.names[cid] = name
            args = use.get("args")
            self.fact(f"call:{cid}:requested", index, iso_time(end), family=Family.TOOL, stage=Stage.REQUESTED,
                      tool_name=name, call_id=cid, model=model,
                      arguments=encode_arguments(args if isinstance(args, dict | list | str) else json_text(args),
                                                 tools.AUTHORED_KEYS),
                      **tools.facets(name, args))


def _reject(quarantined: list[Quarantine], source: Source, entry: _Row, cid: str, updated: int, size: int,
            reason: str, err: BoundExceeded | None = None) -> None:
    """Quarantine one row version (once) and account for it, so it is not read again unchanged."""
    entry.u, entry.size = updated, size
    if entry.bad == updated:
        return
    entry.bad = updated
    quarantined.append(Quarantine(
        source_kind=KIND, path=source.path, reason=reason, session_id=cid[:256],
        row=f"conversations_v2:{cid}"[:256], field=err.field if err else None, bound=err.bound if err else None))


class KiroSqliteAdapter:
    kind = KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        prior: SqliteCursor | None = None
        if cursor and ctx.history is HistoryMode.INCREMENTAL:
            try:
                prior = _cursor.decode(cursor)
            except msgspec.DecodeError:
                prior = None
        state = prior if prior is not None else SqliteCursor()
        keep = ctx.history is HistoryMode.INCREMENTAL and not ctx.dry_run
        with SqliteSnapshot(source.path) as snap:
            if "conversations_v2" not in snap.tables():
                raise UnsupportedSource("unknown_format", "no conversations_v2 table")
            if not set(snap.columns("conversations_v2")) >= REQUIRED_COLUMNS:
                raise UnsupportedSource("unknown_format", "conversations_v2 without the expected columns")
            index = snap.query_all(
                "SELECT CAST(key AS TEXT) AS key, CAST(conversation_id AS TEXT) AS cid, updated_at,"
                " length(value) AS size FROM conversations_v2 ORDER BY updated_at, key")
            snap.admission = Admission()
            observations: list[Observation] = []
            quarantined: list[Quarantine] = []
            records = other = size_read = 0
            # One conversation may have a row per working directory it was resumed in; the
            # newest is the conversation (it holds the whole history), the others are older
            # copies whose facts it repeats.
            newest: dict[str, Any] = {}
            for row in index:
                if isinstance(row["cid"], str) and row["cid"]:
                    newest.pop(row["cid"], None)
                    newest[row["cid"]] = row
            present: set[str] = set()
            for row in newest.values():
                cwd, cid = row["key"], row["cid"]
                assert isinstance(cid, str)
                cwd = cwd if isinstance(cwd, str) else None
                rid = cid
                present.add(rid)
                updated = row["updated_at"] if isinstance(row["updated_at"], int) else 0
                size = row["size"] if isinstance(row["size"], int) else 0
                entry = state.rows.get(rid) or _Row()
                state.rows[rid] = entry
                if entry.u == updated and entry.size == size:
                    continue
                records += 1

                if size > MAX_ROW_BYTES:
                    _reject(quarantined, source, entry, cid, updated, size, "over_budget",
                            BoundExceeded("value", MAX_ROW_BYTES, size))
                    continue
                rows = snap.query_all(
                    "SELECT value FROM conversations_v2 WHERE CAST(conversation_id AS TEXT) = ?"
                    " AND CAST(key AS TEXT) IS ?", (cid, cwd))
                if not rows:
                    continue
                raw = rows[0]["value"]
                data = raw.encode("utf-8") if isinstance(raw, str) else raw
                if not isinstance(data, bytes):
                    _reject(quarantined, source, entry, cid, updated, size, "schema_mismatch")
                    continue
                size_read += len(data)
                try:
                    conversation = _conversation.decode(data)
                except RecursionError:
                    _reject(quarantined, source, entry, cid, updated, size, "nesting_too_deep")
                    continue
                except msgspec.DecodeError as exc:
                    _reject(quarantined, source, entry, cid, updated, size, failure_reason(data, exc))
                    continue
                mapper = _Mapper(source, cid, cwd if isinstance(cwd, str) else None, set(
                    entry.done[i:i + _WIDTH] for i in range(0, len(entry.done), _WIDTH)))
                for n, turn in enumerate(conversation.history):
                    mapper.turn(n, turn)
                for key, err in mapper.bounded:
                    quarantined.append(Quarantine(
                        source_kind=KIND, path=source.path, reason="unbounded_value", session_id=cid[:256],
                        record_id=key[:256], row=f"conversations_v2:{cid}"[:256], field=err.field, bound=err.bound))
                found = mapper.rec.take()
                if not found:
                    other += 1
                observations.extend(found)
                entry.done = "".join(dict.fromkeys(mapper.keys))
                entry.u, entry.size, entry.bad = updated, size, -1
                if size_read >= WINDOW_BYTES:
                    snap.verify_unchanged()
                    snap.admission = Admission()
                    yield Batch(observations=observations, quarantined=quarantined,
                                cursor=_encoder.encode(state) if keep else None, records_read=records,
                                other_records=other, bytes_read=size_read)
                    observations, quarantined, records, other, size_read = [], [], 0, 0, 0
            for rid in [r for r in state.rows if r not in present]:
                del state.rows[rid]
            snap.verify_unchanged()
            yield Batch(observations=observations, quarantined=quarantined,
                        cursor=_encoder.encode(state) if keep else None, records_read=records, other_records=other,
                        bytes_read=size_read)
