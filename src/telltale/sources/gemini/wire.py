"""Gemini CLI's on-disk records, as msgspec Structs (field names of gemini-cli only here).

A session file (``chats/session-*.jsonl``) holds four kinds of line
(``chatRecordingService.ts``): the metadata header (``sessionId``, ``projectHash``...),
a ``MessageRecord`` (has ``id``), ``{"$set": {...}}`` (metadata merge; with ``messages``
a checkpoint that replaces the conversation) and ``{"$rewindTo": <id>}``. Legacy
``session-*.json`` files are one ``ConversationRecord`` with the same messages.
"""

from __future__ import annotations

from typing import Any

import msgspec

#: An omitted raw field (empty, falsy).
ABSENT = msgspec.Raw()


class FunctionCall(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    args: Any = None


class FunctionResponse(msgspec.Struct):
    id: str | None = None
    name: str | None = None
    response: Any = None


class Part(msgspec.Struct):
    """A Gemini ``Part``: text, or one of the structured parts (kept only as facts)."""

    text: str | None = None
    thought: bool | None = None
    functionCall: FunctionCall | None = None
    functionResponse: FunctionResponse | None = None


#: ``PartListUnion``: a string, one part, or a list of parts or strings.
PartList = str | list[Part | str] | Part | None


class Tokens(msgspec.Struct):
    """``TokensSummary``: one model response's ``usageMetadata``."""

    input: int | None = None
    output: int | None = None
    cached: int | None = None
    thoughts: int | None = None
    tool: int | None = None
    total: int | None = None


class ToolCall(msgspec.Struct):
    """``ToolCallRecord``: the call and its result are one object."""

    id: str
    name: str | None = None
    args: Any = None
    result: PartList = None
    status: str | None = None
    timestamp: str | None = None
    agentId: str | None = None
    displayName: str | None = None
    resultDisplay: Any = None


class Message(msgspec.Struct):
    """``MessageRecord``: ``type`` is ``user``, ``gemini``, ``info``, ``error`` or ``warning``."""

    id: str
    type: str
    timestamp: str | None = None
    content: PartList = None
    toolCalls: list[ToolCall] | None = None
    tokens: Tokens | None = None
    model: str | None = None


class Line(msgspec.Struct, omit_defaults=True):
    """Any line of a session file: which fields are present tells the kind."""

    id: Any = None
    type: Any = None
    sessionId: Any = None
    projectHash: Any = None
    startTime: Any = None
    kind: Any = None
    directories: Any = None
    set: msgspec.Raw = msgspec.field(default=ABSENT, name="$set")
    rewindTo: Any = msgspec.field(default=None, name="$rewindTo")


class SetRecord(msgspec.Struct):
    """The fields of a ``$set`` Telltale uses (others are UI metadata)."""

    sessionId: str | None = None
    messages: list[msgspec.Raw] | None = None
    directories: list[str] | None = None
    kind: str | None = None


class LegacySession(msgspec.Struct):
    """A whole-file ``session-*.json`` (before the JSONL log)."""

    sessionId: str | None = None
    projectHash: str | None = None
    startTime: str | None = None
    kind: str | None = None
    messages: list[msgspec.Raw] = []


class LogEntry(msgspec.Struct):
    """One entry of ``logs.json``: a user prompt as typed (``type`` is ``user``)."""

    sessionId: str
    messageId: int
    type: str | None = None
    message: str | None = None
    timestamp: str | None = None


line_decoder = msgspec.json.Decoder(Line)
message_decoder = msgspec.json.Decoder(Message)
set_decoder = msgspec.json.Decoder(SetRecord)
legacy_decoder = msgspec.json.Decoder(LegacySession)
logs_decoder = msgspec.json.Decoder(list[msgspec.Raw])
log_entry_decoder = msgspec.json.Decoder(LogEntry)

#: Scheduler states after which a tool call no longer changes.
TERMINAL_STATUSES = frozenset({"success", "error", "cancelled"})
