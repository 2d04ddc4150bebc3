"""Goose's message content blocks (``crates/goose/src/conversation/message.rs``).

A message's ``content`` is a JSON array of blocks tagged by ``type`` (camelCase):
``text{text}``, ``image``, ``toolRequest{id, toolCall}``, ``frontendToolRequest{id,
toolCall}``, ``toolResponse{id, toolResult}``, ``toolConfirmationRequest``,
``actionRequired``, ``thinking``, ``redactedThinking``, ``systemNotification``,
``reasoning``. ``toolCall`` and ``toolResult`` are Goose's ``ToolResult``:
``{"status": "success", "value": …}`` or ``{"status": "error", "error": "…"}``; a call's
value is ``{name, arguments}``, a result's value a list of MCP content items (older) or
``{content: [...], isError}`` (newer). ``toolRequest.id`` = ``toolResponse.id``.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Block(msgspec.Struct):
    type: str
    text: str | None = None
    id: str | None = None
    toolCall: dict[str, Any] | None = None
    toolResult: dict[str, Any] | None = None


blocks_decoder = msgspec.json.Decoder(list[Block])
any_decoder = msgspec.json.Decoder()

#: Block types that call a tool (the frontend variant is run by the UI).
REQUESTS = frozenset({"toolRequest", "frontendToolRequest"})


def call_of(block: Block) -> tuple[str | None, Any, str | None]:
    """``(tool name, arguments, error)`` of a request block."""
    call = block.toolCall or {}
    if call.get("status") == "error":
        error = call.get("error")
        return None, None, error if isinstance(error, str) else "error"
    value = call.get("value")
    if not isinstance(value, dict):
        return None, None, None
    name = value.get("name")
    return (name if isinstance(name, str) else None), value.get("arguments"), None


def result_of(block: Block) -> tuple[str | None, bool]:
    """``(text, is_error)`` of a response block: the text items joined."""
    result = block.toolResult or {}
    if result.get("status") == "error":
        error = result.get("error")
        return (error if isinstance(error, str) else None), True
    value = result.get("value")
    is_error = False
    if isinstance(value, dict):
        is_error = value.get("isError") is True
        value = value.get("content")
    if not isinstance(value, list):
        return None, is_error
    texts = [item["text"] for item in value if isinstance(item, dict) and isinstance(item.get("text"), str)]
    return ("\n".join(texts) if texts else None), is_error
