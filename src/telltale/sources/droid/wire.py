"""Factory Droid's native records, as msgspec Structs (shapes: docs/sources/droid.md)."""

from __future__ import annotations

from typing import Any

import msgspec


class SessionInfo(msgspec.Struct):
    id: str | None = None
    title: str | None = None
    cwd: str | None = None
    created_at: str | None = None


class Block(msgspec.Struct):
    """One content block: ``text``, ``thinking``, ``tool_use`` or ``tool_result``."""

    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: Any = None
    is_error: bool | None = None
    riskLevel: str | None = None


class Message(msgspec.Struct):
    role: str = ""
    model: str | None = None
    content: str | list[Block] | None = None


class Record(msgspec.Struct):
    """One line. ``session_start`` carries the session either inline or under ``session``."""

    type: str = ""
    id: str | None = None
    timestamp: str | int | float | None = None
    message: Message | None = None
    session: SessionInfo | None = None
    cwd: str | None = None
    workspace_root: str | None = None
    title: str | None = None
    created_at: str | None = None


class TokenUsage(msgspec.Struct):
    inputTokens: int | None = None
    outputTokens: int | None = None
    cacheCreationTokens: int | None = None
    cacheReadTokens: int | None = None
    thinkingTokens: int | None = None


class Settings(msgspec.Struct):
    model: str | None = None
    tokenUsage: TokenUsage | None = None
    providerLock: str | None = None


record = msgspec.json.Decoder(Record)
settings = msgspec.json.Decoder(Settings)
