"""Remote delivery: the sink protocol and its per-event outcomes.

A remote sink turns a batch of already-redacted event documents (the exact UTF-8 JSON
bytes of one JSONL line each) into one or more requests and reports, for every event,
what the receiver said. Protocol outcomes are *values*, never exceptions, so the outbox
can decide per event: delete it, try it again later, dead-letter it, or stop the whole
sink until an operator fixes its credentials. A sink raises only for programming errors.

The local JSONL sink (``sinks/jsonl.py``) is not a remote sink: it is written and
fsynced in the scan's own path and raises on failure.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

__all__ = [
    "ACKED",
    "ItemResult",
    "Outcome",
    "RemoteSink",
    "SendResult",
    "bounded_reason",
]

#: Longest reason stored with a dead or retrying item (bytes of ASCII).
REASON_BOUND = 120

_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/=-]+")


def bounded_reason(*parts: object) -> str:
    """Join content-free tokens into a short, safe reason string.

    Reasons are built from status codes and error *types* only (never a server's free
    text, which may quote the rejected document), and are still sanitised and cut here
    so a surprising value cannot grow the outbox or leak into logs.
    """
    text = ":".join(str(p) for p in parts if p is not None and str(p) != "")
    text = _REASON_UNSAFE.sub("_", text)
    return text[:REASON_BOUND] or "unspecified"


class Outcome(enum.StrEnum):
    """What happened to one event."""

    ACKED = "acked"  # stored by the receiver (or already stored: duplicate)
    RETRY = "retry"  # transient: try again after back-off
    REJECTED = "rejected"  # permanent for this event: dead-letter it
    BLOCKED = "blocked"  # the sink itself refuses us (auth, endpoint): stop the sink


class ItemResult(msgspec.Struct, frozen=True):
    """The outcome of one event, with a bounded content-free reason."""

    outcome: Outcome
    reason: str = ""
    #: Seconds the receiver asked us to wait (``Retry-After``), when it said so.
    retry_after: float | None = None


ACKED = ItemResult(Outcome.ACKED)


class SendResult(msgspec.Struct, frozen=True):
    """One ``ItemResult`` per event sent, in the order the events were given."""

    items: tuple[ItemResult, ...]
    #: Content-free remarks that concern the batch but no single event, e.g. an OTLP
    #: partial success that rejected records without saying which.
    notes: tuple[str, ...] = ()

    @classmethod
    def uniform(cls, count: int, item: ItemResult, notes: tuple[str, ...] = ()) -> SendResult:
        return cls(items=(item,) * count, notes=notes)

    def __add__(self, other: SendResult) -> SendResult:
        return SendResult(items=self.items + other.items, notes=self.notes + other.notes)

    def count(self, outcome: Outcome) -> int:
        return sum(1 for item in self.items if item.outcome is outcome)

    @property
    def blocked(self) -> ItemResult | None:
        """The first blocking outcome, if the receiver refused the sink as a whole."""
        for item in self.items:
            if item.outcome is Outcome.BLOCKED:
                return item
        return None


@runtime_checkable
class RemoteSink(Protocol):
    """A delivery target fed by the outbox.

    ``name`` is the operator's name for the output (the key in outputs.yaml); it keys the
    outbox rows, so renaming an output starts a new queue.
    """

    name: str

    def send(self, events: Sequence[bytes]) -> SendResult:
        """Deliver ``events`` and classify each; never raise for what the receiver said."""
        ...
