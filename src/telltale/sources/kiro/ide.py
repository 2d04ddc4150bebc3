"""Kiro IDE: JSON documents below ``User/globalStorage/kiro.kiroagent``, rewritten whole.

Three documents, each read on the shared whole-document driver (one entry per list
element, emitted once when settled, vanished entries reported as ``source_reordered``):

* ``workspace-sessions/<base64 workspace>/<session id>.json``: ``{sessionId, title,
  workspaceDirectory, history[{message{role, content, id}, executionId}]}``, the
  conversation as the panel shows it (user and assistant text);
* ``<workspace hash>/<id>.chat`` (older builds): ``{executionId, chat[{role: human | bot |
  tool, content}], metadata{modelId, startTime, endTime}}``; the extension's own system
  prompt and rules, sent as ``human`` turns, are kept as injected context;
* ``<workspace hash>/414d1636299d2b9e4ce7e17fb11f63e9/<file>``: an execution log
  ``{executionId, actions[{actionId, actionType, input, output}]}``, the only record of
  what the agent did: ``say`` is assistant text, ``replace``/``create`` write
  ``input.file``, ``readCode`` reads it, any other action is a tool call named by its
  type; its ``output`` is the result.

Session ids: the session's ``sessionId``; for chats and executions, their
``executionId`` (history entries carry the same id, which links them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec

from telltale.model import Family, Provenance, Stage, encode_arguments, iso_time
from telltale.sources._document import acquire_document
from telltale.sources._jsonl_driver import Recorder, json_text
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.kiro import CHATS_KIND, CLIENT, EXECUTIONS_KIND, SESSIONS_KIND
from telltale.sources.spec import Source

AGENT = "Kiro"
#: Openings of the extension's own prompts sent as ``human`` turns (context, not the user).
INJECTED_PREFIXES = ("# System Prompt", "# Identity", "<identity>", "## Included Rules",
                     "You are operating in a workspace")
WRITE_ACTIONS = frozenset({"replace", "create", "write", "append", "delete"})
READ_ACTIONS = frozenset({"readCode", "readFile", "read", "listDirectory"})


def _stem(path: str) -> str:
    name = os.path.basename(path)
    return name.rsplit(".", 1)[0] if "." in name else name


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"
                 and isinstance(b.get("text"), str)]
        return "\n".join(texts) or None
    return None


class _Message(msgspec.Struct):
    role: str = ""
    content: Any = None
    id: str | None = None


class _HistoryEntry(msgspec.Struct):
    message: _Message = msgspec.field(default_factory=_Message)
    executionId: str | None = None


class _SessionHead(msgspec.Struct):
    sessionId: str | None = None
    title: str | None = None
    workspaceDirectory: str | None = None
    history: list[msgspec.Raw] = []


class _ChatTurn(msgspec.Struct):
    role: str = ""
    content: Any = None


class _ChatMeta(msgspec.Struct):
    modelId: str | None = None
    workflow: str | None = None
    startTime: int | float | None = None
    endTime: int | float | None = None


class _ChatHead(msgspec.Struct):
    executionId: str | None = None
    actionId: str | None = None
    chat: list[msgspec.Raw] = []
    metadata: _ChatMeta | None = None


class _Action(msgspec.Struct):
    actionId: str | None = None
    actionType: str = ""
    input: dict[str, Any] | None = None
    output: dict[str, Any] | str | None = None


class _ExecutionHead(msgspec.Struct):
    executionId: str | None = None
    actions: list[msgspec.Raw] = []


_session_head = msgspec.json.Decoder(_SessionHead)
_history_entry = msgspec.json.Decoder(_HistoryEntry)
_chat_head = msgspec.json.Decoder(_ChatHead)
_chat_turn = msgspec.json.Decoder(_ChatTurn)
_execution_head = msgspec.json.Decoder(_ExecutionHead)
_action = msgspec.json.Decoder(_Action)


class _Base:
    """What the three document handlers share: session id, entries, provenance."""

    kind = ""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.sid = _stem(source.path)
        self.entries: Sequence[Any | None] = ()
        self.fresh = True
        self.session_emitted = False
        self.cwd: str | None = None

    def session_id(self) -> str | None:
        return self.sid

    def begin(self, entries: Sequence[Any | None], fresh: bool) -> None:
        self.entries = entries
        self.fresh = fresh

    def common(self, index: int, key: str) -> dict[str, Any]:
        return {
            "client": CLIENT, "agent": AGENT, "session_id": self.sid, "cwd": self.cwd, "sequence": index,
            "provenance": Provenance(source_kind=self.kind, path=self.source.path, row=f"entry:{index}",
                                     record_id=key if len(key) <= 256 else None),
        }

    def session(self, rec: Recorder, **fields: Any) -> None:
        if self.fresh and not self.session_emitted:
            self.session_emitted = True
            common = {**self.common(0, "session"), **fields}
            rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate="session", family=Family.SESSION, **common)


class _SessionHandler(_Base):
    kind = SESSIONS_KIND
    title: str | None = None

    def split(self, data: bytes) -> list[msgspec.Raw]:
        head = _session_head.decode(data)
        if head.sessionId and len(head.sessionId) <= 256:
            self.sid = head.sessionId
        self.cwd = head.workspaceDirectory
        self.title = head.title
        return head.history

    def decode(self, raw: msgspec.Raw) -> _HistoryEntry:
        return _history_entry.decode(raw)

    def native_id(self, entry: _HistoryEntry) -> str | None:
        return entry.message.id

    def settled(self, index: int) -> bool:
        entry = self.entries[index]
        last = index == len(self.entries) - 1
        return not (last and entry is not None and entry.message.role == "assistant"
                    and not _text(entry.message.content) and not entry.executionId)

    def project(self, index: int, key: str, rec: Recorder) -> None:
        entry = self.entries[index]
        assert entry is not None
        self.session(rec, attributes={"title": self.title[:256]} if self.title else {})
        message = entry.message
        text = _text(message.content)
        if text and message.role in ("user", "assistant"):
            attributes = {"execution_id": entry.executionId[:256]} if entry.executionId else {}
            rec.add(source_identity=f"{CLIENT}:{self.sid}", coordinate=f"entry:{key}:text", family=Family.MESSAGE,
                    role=message.role, text=text, attributes=attributes, **self.common(index, key))


class _ChatHandler(_Base):
    kind = CHATS_KIND
    meta: _ChatMeta = _ChatMeta()

    def split(self, data: bytes) -> list[msgspec.Raw]:
        head = _chat_head.decode(data)
        if head.executionId and len(head.executionId) <= 256:
            self.sid = head.executionId
        self.meta = head.metadata or _ChatMeta()
        return head.chat

    def decode(self, raw: msgspec.Raw) -> _ChatTurn:
        return _chat_turn.decode(raw)

    def native_id(self, entry: _ChatTurn) -> str | None:
        return None

    def settled(self, index: int) -> bool:
        return index < len(self.entries) - 1 or self.meta.endTime is not None

    def project(self, index: int, key: str, rec: Recorder) -> None:
        turn = self.entries[index]
        assert turn is not None
        self.session(rec, model=self.meta.modelId, occurred_at=iso_time(self.meta.startTime),
                     attributes={"workflow": self.meta.workflow[:256]} if self.meta.workflow else {})
        text = _text(turn.content)
        if not text:
            return
        identity = f"{CLIENT}:{self.sid}"
        if turn.role == "human":
            injected = text.lstrip().startswith(INJECTED_PREFIXES)
            rec.add(source_identity=identity, coordinate=f"entry:{key}:text", family=Family.MESSAGE,
                    role="system" if injected else "user", injected=injected, text=text, **self.common(index, key))
        elif turn.role == "bot":
            rec.add(source_identity=identity, coordinate=f"entry:{key}:text", family=Family.MESSAGE,
                    role="assistant", text=text, model=self.meta.modelId, **self.common(index, key))
        elif turn.role == "tool":
            rec.add(source_identity=identity, coordinate=f"entry:{key}:result", family=Family.TOOL,
                    stage=Stage.RESULT, result=text, **self.common(index, key))


class _ExecutionHandler(_Base):
    kind = EXECUTIONS_KIND

    def split(self, data: bytes) -> list[msgspec.Raw]:
        head = _execution_head.decode(data)
        if head.executionId and len(head.executionId) <= 256:
            self.sid = head.executionId
        return head.actions

    def decode(self, raw: msgspec.Raw) -> _Action:
        return _action.decode(raw)

    def native_id(self, entry: _Action) -> str | None:
        return entry.actionId

    def settled(self, index: int) -> bool:
        entry = self.entries[index]
        return index < len(self.entries) - 1 or (entry is not None and entry.output is not None)

    def project(self, index: int, key: str, rec: Recorder) -> None:
        action = self.entries[index]
        assert action is not None
        self.session(rec)
        identity = f"{CLIENT}:{self.sid}"
        output = action.output
        message = output.get("message") if isinstance(output, dict) else output
        if action.actionType == "say":
            if isinstance(message, str) and message:
                rec.add(source_identity=identity, coordinate=f"action:{key}:text", family=Family.MESSAGE,
                        role="assistant", text=message, **self.common(index, key))
            return
        args = action.input or {}
        path = args.get("file") if isinstance(args.get("file"), str) else None
        facets: dict[str, str] = {}
        if path:
            access = "write" if action.actionType in WRITE_ACTIONS else (
                "read" if action.actionType in READ_ACTIONS else None)
            facets = {"file_path": path, **({"file_access": access} if access else {})}
        command = args.get("command")
        if isinstance(command, str) and command:
            facets["command"] = command
        call_id = action.actionId or f"{self.sid}:{key}"
        rec.add(source_identity=identity, coordinate=f"call:{call_id}:requested", family=Family.TOOL,
                stage=Stage.REQUESTED, tool_name=action.actionType or None, call_id=call_id,
                arguments=encode_arguments(args, ("modifiedContent", "originalContent", "command", "content")),
                **facets, **self.common(index, key))
        if output is not None:
            rec.add(source_identity=identity, coordinate=f"call:{call_id}:result", family=Family.TOOL,
                    stage=Stage.RESULT, tool_name=action.actionType or None, call_id=call_id,
                    result=message if isinstance(message, str) else json_text(output), **self.common(index, key))


class KiroIdeSessionAdapter:
    kind = SESSIONS_KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, _SessionHandler(source))


class KiroIdeChatAdapter:
    kind = CHATS_KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, _ChatHandler(source))


class KiroIdeExecutionAdapter:
    kind = EXECUTIONS_KIND

    def acquire(self, source: Source, cursor: bytes | None, ctx: AcquireContext) -> Iterator[Batch]:
        return acquire_document(source, cursor, ctx, _ExecutionHandler(source))
