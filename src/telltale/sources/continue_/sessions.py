"""Continue sessions: ``sessions/<sessionId>.json``, one whole JSON document per session.

The file is rewritten whole as the conversation grows (or is edited: an earlier message
edited truncates the history, which :mod:`telltale.sources._document` reports as
``source_reordered``). Chat, agent and plan modes share the shape: user and assistant
messages, ``toolCalls`` on assistant messages, results as ``role:"tool"`` messages (or,
when those are absent, in the item's ``toolCallStates[].output``). The model is the
item's ``promptLogs`` (the only per-turn model name), else the session's
``chatModelTitle``. The ``sessions.json`` index gives the session's creation time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec

from telltale.model import Family, Provenance, Stage, encode_arguments, iso_time
from telltale.readers.files import read_small
from telltale.sources._document import acquire_document
from telltale.sources._jsonl_driver import Recorder, json_text
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.continue_ import tools, wire
from telltale.sources.spec import Source

CLIENT = "continue"
KIND = "continue.sessions"
AGENT = "Continue"
#: The ``sessions.json`` index is read whole only up to this size.
INDEX_BOUND = 8 << 20
#: Tool call states that no longer change.
TERMINAL = frozenset({"done", "errored", "canceled"})


def workspace_path(value: str | None) -> str | None:
    """``file:///home/u/p`` → ``/home/u/p`` (2025 builds); a plain path stays (2024)."""
    if not value:
        return None
    if value.startswith("file://"):
        parts = urlsplit(value)
        path = unquote(parts.path)
        if len(path) > 2 and path[0] == "/" and path[2] == ":":  # file:///c:/x on Windows
            path = path[1:]
        return path or None
    return value


class _IndexCache:
    """``sessions.json`` decoded once per (path, size, mtime): one scan reads many sessions."""

    def __init__(self) -> None:
        self.key: tuple[str, int, int] | None = None
        self.created: dict[str, str] = {}

    def created_at(self, directory: str, session_id: str) -> str | None:
        path = os.path.join(directory, "sessions.json")
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        key = (path, st.st_size, st.st_mtime_ns)
        if key != self.key:
            self.key, self.created = key, {}
            if st.st_size <= INDEX_BOUND:
                self.created = _read_index(path)
        return self.created.get(session_id)


def _read_index(path: str) -> dict[str, str]:
    data = read_small(path, INDEX_BOUND)
    if data is None:
        return {}
    try:
        entries = wire.session_index.decode(data)
    except msgspec.DecodeError:
        return {}
    out: dict[str, str] = {}
    for entry in entries:
        created = entry.dateCreated
        if isinstance(created, str) and created.isdigit():
            created = int(created)
        stamp = iso_time(created) if isinstance(created, int) else None
        if stamp:
            out[entry.sessionId] = stamp
    return out


class SessionHandler:
    def __init__(self, source: Source, index: _IndexCache) -> None:
        self.source = source
        self.index = index
        name = os.path.basename(source.path)
        self.sid = name[: -len(".json")] if name.endswith(".json") else name
        self.head: wire.SessionHead | None = None
        self.items: Sequence[wire.HistoryItem | None] = ()
        self.cwd: str | None = None
        #: Call ids answered by a ``role:"tool"`` message anywhere in the session.
        self.answered: set[str] = set()
        self.names: dict[str, str] = {}
        self.fresh = True
        self.session_emitted = False

    # DocumentHandler protocol
    def split(self, data: bytes) -> list[msgspec.Raw]:
        self.head = wire.session_head.decode(data)
        if self.head.sessionId and len(self.head.sessionId) <= 256:
            self.sid = self.head.sessionId
        self.cwd = workspace_path(self.head.workspaceDirectory)
        return self.head.history

    def decode(self, raw: msgspec.Raw) -> wire.HistoryItem:
        return wire.history_item.decode(raw)

    def native_id(self, item: wire.HistoryItem) -> str | None:
        return item.message.id

    def session_id(self) -> str | None:
        return self.sid

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        self.items = entries
        self.fresh = fresh
        for item in entries:
            if item is None:
                continue
            message = item.message
            if message.role == "tool" and message.toolCallId:
                self.answered.add(message.toolCallId)
            for call in _calls(item):
                if call.id and call.function and call.function.name:
                    self.names[call.id] = tools.tool_name(call.function.name) or ""

    def settled(self, index: int) -> bool:
        if index < len(self.items) - 1:
            return True
        item = self.items[index]
        if item is None or item.message.role != "assistant":
            return True
        if item.isGatheringContext:
            return False
        states = _states(item)
        if states:
            return all(state.status in TERMINAL for state in states)
        return bool(item.promptLogs)  # written once the completion ended

    def project(self, index: int, key: str, rec: Recorder) -> None:
        item = self.items[index]
        assert item is not None and self.head is not None
        message = item.message
        common = self._common(index, key)
        identity = f"{CLIENT}:{self.sid}"
        model, provider = self._model(item)
        if self.fresh and not self.session_emitted:
            self.session_emitted = True
            attributes = {"mode": self.head.mode[:256]} if self.head.mode else {}
            created = self.index.created_at(os.path.dirname(self.source.path), self.sid)
            rec.add(
                source_identity=identity, coordinate="session", family=Family.SESSION,
                model=self.head.chatModelTitle, attributes=attributes, **{**common, "occurred_at": created},
            )
        text = _text(message.content)
        if message.role in ("user", "assistant", "system") and text:
            rec.add(
                source_identity=identity, coordinate=f"item:{key}:text", family=Family.MESSAGE,
                role=message.role, text=text, injected=message.role == "system",
                model=model if message.role == "assistant" else None,
                provider=provider if message.role == "assistant" else None, **common,
            )
        if message.role == "tool" and message.toolCallId:
            self._result(message.toolCallId, text, None, common, rec)
        for n, call in enumerate(_calls(item)):
            self._request(key, n, call, model, provider, common, rec)
        for state in _states(item):
            call_id = state.toolCallId or (state.toolCall.id if state.toolCall else None)
            if not call_id or call_id in self.answered or state.status not in TERMINAL:
                continue
            output = "\n".join(o.content for o in state.output or () if o.content) or None
            self._result(call_id, output, state.status, common, rec)

    # -- helpers -------------------------------------------------------------------------
    def _common(self, index: int, key: str) -> dict[str, Any]:
        return {
            "client": CLIENT,
            "session_id": self.sid,
            "sequence": index,
            "agent": AGENT,
            "cwd": self.cwd,
            "provenance": Provenance(
                source_kind=KIND, path=self.source.path, row=f"entry:{index}",
                record_id=key if len(key) <= 256 else None,
            ),
        }

    def _model(self, item: wire.HistoryItem) -> tuple[str | None, str | None]:
        for log in reversed(item.promptLogs):
            model = (log.completionOptions.model if log.completionOptions else None) or log.modelTitle
            if model:
                return model, log.modelProvider
        return (self.head.chatModelTitle if self.head else None), None

    def _request(
        self, key: str, n: int, call: wire.ToolCall, model: str | None, provider: str | None,
        common: dict[str, Any], rec: Recorder,
    ) -> None:
        function = call.function or wire.Function()
        name = tools.tool_name(function.name)
        args = function.arguments
        if isinstance(args, str) and len(args) <= 1 << 20:
            # msgspec, not json: a hostile nesting depth is a DecodeError, never a RecursionError.
            with contextlib.suppress(msgspec.DecodeError):
                args = msgspec.json.decode(args)  # else kept as the text the model wrote
        call_id = call.id or f"{self.sid}:{key}:call:{n}"
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}", coordinate=f"call:{call_id}:requested", family=Family.TOOL,
            stage=Stage.REQUESTED, tool_name=name, call_id=call_id,
            arguments=encode_arguments(args if isinstance(args, dict | list | str) else json_text(args),
                                       tools.AUTHORED_KEYS),
            model=model, provider=provider, **tools.facets(name, args), **common,
        )

    def _result(
        self, call_id: str, text: str | None, status: str | None, common: dict[str, Any], rec: Recorder
    ) -> None:
        attributes = {"status": status} if status else {}
        rec.add(
            source_identity=f"{CLIENT}:{self.sid}", coordinate=f"call:{call_id}:result", family=Family.TOOL,
            stage=Stage.RESULT, tool_name=self.names.get(call_id) or None, call_id=call_id, result=text,
            is_error=True if status == "errored" else None, interrupted=status == "canceled",
            attributes=attributes, **common,
        )


def _states(item: wire.HistoryItem) -> list[wire.ToolCallState]:
    if item.toolCallStates:
        return item.toolCallStates
    return [item.toolCallState] if item.toolCallState is not None else []


def _calls(item: wire.HistoryItem) -> list[wire.ToolCall]:
    """The item's tool calls: ``message.toolCalls``, else those its states carry."""
    if item.message.toolCalls:
        return item.message.toolCalls
    return [state.toolCall for state in _states(item) if state.toolCall is not None]


def _text(content: str | list[Any] | None) -> str | None:
    if isinstance(content, str):
        return content or None
    texts = [
        part["text"] for part in content or ()
        if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts) or None


class ContinueSessionAdapter:
    """``~/.continue/sessions/<id>.json`` (the ``sessions.json`` index is not a source)."""

    kind = KIND

    def __init__(self) -> None:
        self._index = _IndexCache()

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, SessionHandler(source, self._index))
