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
    title: str | None = None
    version: str | None = None
    messages: list[dict[str, Any]] = []
    cumulative_token_usage: TokenUsage | None = None
    model: Model | None = None
    initial_project_snapshot: Snapshot | None = None
    profile: str | None = None


thread = msgspec.json.Decoder(Thread)
