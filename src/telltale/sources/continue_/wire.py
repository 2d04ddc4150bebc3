"""Native shapes of Continue's session files and dev-data logs (``~/.continue``)."""

from __future__ import annotations

from typing import Any

import msgspec


class Function(msgspec.Struct):
    name: str | None = None
    arguments: Any = None  # a JSON text in Continue's ChatMessage type


class ToolCall(msgspec.Struct):
    id: str | None = None
    type: str | None = None
    function: Function | None = None


class Message(msgspec.Struct):
    role: str = ""
    content: str | list[Any] | None = None
    id: str | None = None
    toolCalls: list[ToolCall] = []
    toolCallId: str | None = None


class ContextItem(msgspec.Struct):
    content: str | None = None
    name: str | None = None


class ToolCallState(msgspec.Struct):
    toolCallId: str | None = None
    toolCall: ToolCall | None = None
    status: str | None = None
    parsedArgs: Any = None
    output: list[ContextItem] | None = None


class CompletionOptions(msgspec.Struct):
    model: str | None = None


class PromptLog(msgspec.Struct):
    modelTitle: str | None = None
    modelProvider: str | None = None
    completionOptions: CompletionOptions | None = None


class HistoryItem(msgspec.Struct):
    """One ``history[]`` entry (``ChatHistoryItem``)."""

    message: Message
    promptLogs: list[PromptLog] = []
    toolCallStates: list[ToolCallState] = []
    toolCallState: ToolCallState | None = None  # older builds: one state per item
    isGatheringContext: bool | None = None


class SessionHead(msgspec.Struct):
    """The session object with its history left raw (split into entries by the driver)."""

    history: list[msgspec.Raw]
    sessionId: str | None = None
    workspaceDirectory: str | None = None
    mode: str | None = None
    chatModelTitle: str | None = None


class IndexEntry(msgspec.Struct):
    """``sessions/sessions.json``: ``dateCreated`` is epoch milliseconds as a string."""

    sessionId: str
    dateCreated: str | int | None = None
    workspaceDirectory: str | None = None


class TokensGenerated(msgspec.Struct):
    """``dev_data/0.2.0/tokensGenerated.jsonl`` and the older ``dev_data/tokens_generated.jsonl``."""

    model: str | None = None
    provider: str | None = None
    promptTokens: int | None = None
    generatedTokens: int | None = None
    timestamp: str | None = None
    userAgent: str | None = None


session_head = msgspec.json.Decoder(SessionHead)
history_item = msgspec.json.Decoder(HistoryItem)
session_index = msgspec.json.Decoder(list[IndexEntry])
tokens_generated = msgspec.json.Decoder(TokensGenerated)
