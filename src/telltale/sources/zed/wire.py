"""Zed's serialized thread (``data`` version 0.3.0), as msgspec Structs.

Messages are externally tagged enums (``{"User": {...}}``, ``{"Agent": {...}}``) and so
are content parts (``{"Text": "..."}``, ``{"ToolUse": {...}}``): they are decoded as
small dicts and read by key (shapes: docs/sources/zed.md).
"""

from __future__ import annotations

from typing import Any

import msgspec


class TokenUsage(msgspec.Struct):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class Model(msgspec.Struct):
    provider: str | None = None
    model: str | None = None


class Worktree(msgspec.Struct):
    worktree_path: str | None = None


class Snapshot(msgspec.Struct):
    worktree_snapshots: list[Worktree] = []


class Thread(msgspec.Struct):
    """The thread; every field but ``messages`` is decoded loosely (one odd value costs
    that value, never the thread): see :func:`typed`."""

    title: Any = None
    version: Any = None
    messages: list[Any] = []
    cumulative_token_usage: Any = None
    model: Any = None
    initial_project_snapshot: Any = None


thread = msgspec.json.Decoder(Thread)


def typed(value: Any, kind: type[msgspec.Struct]) -> Any:
    """``value`` as ``kind`` when it has that shape, else ``None``."""
    if value is None:
        return None
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError:
        return None
