"""Native shapes of a Cline-family task (Cline, Roo Code, Kilo Code legacy).

Every field is optional where the three forks or two tool-calling eras differ; a block is
one permissive Struct (``type`` decides which fields mean something) so that a new block
type is counted, not a reason to quarantine the whole message.
"""

from __future__ import annotations

from typing import Any

import msgspec

#: The tool-use block's input when absent.
_NO_INPUT: dict[str, Any] = {}


class ModelInfo(msgspec.Struct):
    modelId: str | None = None
    providerId: str | None = None
    mode: str | None = None


class Block(msgspec.Struct):
    """One content block of an Anthropic ``MessageParam`` (text, tool_use, tool_result, image...)."""

    type: str = ""
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    call_id: str | None = None
    tool_use_id: str | None = None
    content: str | list[Any] | None = None
    is_error: bool | None = None


class ApiMessage(msgspec.Struct):
    """One ``api_conversation_history.json`` entry: what the model saw."""

    role: str
    content: str | list[Block] = ""
    ts: int | None = None
    modelInfo: ModelInfo | None = None


class UiMessage(msgspec.Struct):
    """One ``ui_messages.json`` entry (``ClineMessage``): what the user saw."""

    ts: int
    type: str = ""
    say: str | None = None
    ask: str | None = None
    text: str | None = None
    partial: bool | None = None
    conversationHistoryIndex: int | None = None
    modelInfo: ModelInfo | None = None


class ApiRequest(msgspec.Struct):
    """``say:"api_req_started"`` text: one model request, with its usage once it ended."""

    request: str | None = None
    tokensIn: int | None = None
    tokensOut: int | None = None
    cacheWrites: int | None = None
    cacheReads: int | None = None
    cost: float | None = None
    cancelReason: str | None = None
    streamingFailedMessage: str | None = None


class ModelUsage(msgspec.Struct):
    """``task_metadata.json`` ``model_usage[]`` (Cline): which model a task ran on, when."""

    ts: int | None = None
    model_id: str | None = None
    model_provider_id: str | None = None
    mode: str | None = None


class TaskMetadata(msgspec.Struct):
    model_usage: list[ModelUsage] = []


class HistoryItem(msgspec.Struct):
    """Roo Code's ``history_item.json`` (the fields Telltale uses)."""

    id: str | None = None
    workspace: str | None = None
    mode: str | None = None
    parentTaskId: str | None = None
    rootTaskId: str | None = None


api_split = msgspec.json.Decoder(list[msgspec.Raw])
api_message = msgspec.json.Decoder(ApiMessage)
ui_message = msgspec.json.Decoder(UiMessage)
api_request = msgspec.json.Decoder(ApiRequest)
task_metadata = msgspec.json.Decoder(TaskMetadata)
history_item = msgspec.json.Decoder(HistoryItem)
