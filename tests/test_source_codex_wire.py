"""Codex wire shapes: the one-pass line decoding agrees with the two-step one.

``wire.RecordLine`` decodes a G2 line with its payload in one pass; the adapter trusts it
only for ``response_item`` lines whose payload is an item and ``event_msg`` lines whose
payload is an event, and compares exact classes instead of calling ``isinstance``. These
tests pin those assumptions on every payload class the unions know.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from telltale.sources.codex import adapter, wire

_ITEM_TAGS = sorted(wire.KNOWN_ITEM_TAGS)
_EVENT_TAGS = sorted(wire.KNOWN_EVENT_TAGS)


def _line(kind: str, payload: dict[str, Any]) -> bytes:
    return msgspec.json.encode({"timestamp": "2026-03-01T10:00:00.123Z", "type": kind, "payload": payload})


def _minimal(tag: str) -> dict[str, Any]:
    """A payload with the fields a tag requires (``name`` for calls, ``role`` for messages)."""
    payload: dict[str, Any] = {"type": tag}
    if tag in ("function_call", "custom_tool_call"):
        payload["name"] = "shell"
    if tag == "message":
        payload["role"] = "user"
    if tag == "item_completed":
        payload["item"] = {"type": "Plan"}
    return payload


@pytest.mark.parametrize("tag", _ITEM_TAGS)
def test_response_item_one_pass_equals_two_steps(tag: str) -> None:
    data = _line("response_item", _minimal(tag))
    one = wire.record_decoder.decode(data)
    two = wire.item_decoder.decode(wire.envelope_decoder.decode(data).payload)
    assert type(one.payload) is type(two)
    assert msgspec.structs.asdict(one.payload) == msgspec.structs.asdict(two)
    assert type(one.payload) in wire.ITEM_CLASSES
    assert (type(one.payload) in wire.BOOKKEEPING_CLASSES) is isinstance(two, wire.BookkeepingItem)


@pytest.mark.parametrize("tag", _EVENT_TAGS)
def test_event_one_pass_equals_two_steps(tag: str) -> None:
    data = _line("event_msg", _minimal(tag))
    one = wire.record_decoder.decode(data)
    two = wire.event_decoder.decode(wire.envelope_decoder.decode(data).payload)
    assert type(one.payload) in wire.EVENT_CLASSES
    assert (type(one.payload) in wire.BOOKKEEPING_CLASSES) is isinstance(two, wire.BookkeepingEvent)
    if tag == "agent_message":
        # A tag of both kinds: one pass gives the item class, which the adapter counts the same way.
        assert isinstance(one.payload, wire.BookkeepingItem)
    else:
        assert type(one.payload) is type(two)
        assert msgspec.structs.asdict(one.payload) == msgspec.structs.asdict(two)


def test_payload_kinds_do_not_cross() -> None:
    # An event payload under response_item (and the reverse) is not taken by the fast path.
    event_under_item = wire.record_decoder.decode(_line("response_item", {"type": "token_count"}))
    assert type(event_under_item.payload) not in wire.ITEM_CLASSES
    item_under_event = wire.record_decoder.decode(_line("event_msg", {"type": "function_call", "name": "x"}))
    assert type(item_under_event.payload) not in wire.EVENT_CLASSES
    with pytest.raises(msgspec.ValidationError):
        wire.record_decoder.decode(_line("response_item", {"type": "no_such_item"}))


def test_token_totals_follow_the_wire_field_order() -> None:
    usage = wire.TokenUsage(
        input_tokens=1,
        cached_input_tokens=2,
        cache_write_input_tokens=3,
        output_tokens=4,
        reasoning_output_tokens=5,
        total_tokens=6,
    )
    assert adapter._totals(usage) == (1, 2, 3, 4, 5, 6)
