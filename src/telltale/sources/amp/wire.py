"""Amp's thread document, as msgspec Structs (shapes: docs/sources/amp.md)."""

from __future__ import annotations

from typing import Any

import msgspec


class Tree(msgspec.Struct):
    displayName: str | None = None
    uri: str | None = None


class Initial(msgspec.Struct):
    trees: list[Tree] = []


class Env(msgspec.Struct):
    initial: Initial | None = None


class ThreadHead(msgspec.Struct):
    """The thread without decoding its messages (they are split raw, one entry each).

    The other fields are decoded loosely: an odd value costs that value, never the
    thread (:func:`typed`).
    """

    id: Any = None
    v: Any = None
    title: Any = None
    created: Any = None
    messages: list[msgspec.Raw] = []
    env: Any = None


class Error(msgspec.Struct):
    message: str | None = None


class Run(msgspec.Struct):
    status: str | None = None
    result: Any = None
    error: Error | str | None = None


class Block(msgspec.Struct):
    """``text``, ``thinking``, ``tool_use`` or ``tool_result`` (others are kept unread)."""

    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    toolUseID: str | None = None
    tool_use_id: str | None = None
    run: Run | None = None
    content: Any = None
    is_error: bool | None = None


class Usage(msgspec.Struct):
    model: str | None = None
    inputTokens: int | None = None
    outputTokens: int | None = None
    cacheCreationInputTokens: int | None = None
    cacheReadInputTokens: int | None = None
    totalInputTokens: int | None = None
    timestamp: str | None = None


class State(msgspec.Struct):
    type: str | None = None
    stopReason: str | None = None


class Meta(msgspec.Struct):
    sentAt: int | float | None = None


class Message(msgspec.Struct):
    role: str = ""
    messageId: int | str | None = None
    content: list[Block] | str = []
    state: State | None = None
    usage: Usage | None = None
    meta: Meta | None = None


thread_head = msgspec.json.Decoder(ThreadHead)


def typed(value: Any, kind: type[msgspec.Struct]) -> Any:
    """``value`` as ``kind`` when it has that shape, else ``None``."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return None
message = msgspec.json.Decoder(Message)
