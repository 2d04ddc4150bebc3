"""Per-output selection: which events an output takes (``include``, ``exclude``, ``min_severity``).

A selector is ``dataset`` (``detection``) or ``dataset:action`` (``health:scan_summary``,
``activity:tool_call``); datasets are the short names of ``event.dataset``
(``telltale.activity`` -> ``activity``). An output takes an event when

* ``include`` is empty or one of its selectors matches, and
* no ``exclude`` selector matches, and
* ``min_severity`` is unset, or the event carries no ``event.severity`` (activity, summaries),
  or its severity is at least that band's number.

Selection is applied when a window is queued in the outbox, so an output never stores what
it does not take. The local JSONL log is not an output: it always receives every event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

__all__ = ["DATASETS", "SEVERITY_FLOOR", "Selector", "check_selectors", "event_head", "selector_of"]

#: Short dataset names a selector may use (``event.dataset`` without ``telltale.``).
DATASETS = ("activity", "detection", "health", "inventory", "summary")

#: ECS ``event.severity`` numbers of the bands (as the detection and health events write them).
SEVERITY_FLOOR = {"informational": 1, "low": 21, "medium": 47, "high": 73, "critical": 99}

_SELECTOR = re.compile(r"^([a-z_]+)(?::([a-z0-9_.-]+))?$")


def check_selectors(values: Sequence[str]) -> str | None:
    """The first malformed selector with why, or ``None``."""
    for value in values:
        match = _SELECTOR.match(value)
        if match is None:
            return f"`{value}` is not dataset or dataset:action"
        if match.group(1) not in DATASETS:
            return f"`{value}`: unknown dataset (one of {', '.join(DATASETS)})"
    return None


class _EventHead(msgspec.Struct, frozen=True, gc=False):
    dataset: str = ""
    action: str = ""
    severity: int | None = None


class _Head(msgspec.Struct, frozen=True, gc=False):
    event: _EventHead = _EventHead()


_head = msgspec.json.Decoder(_Head)


def event_head(line: bytes) -> _EventHead | None:
    """``event.dataset``, ``event.action`` and ``event.severity`` of an encoded event (``None``: unreadable)."""
    try:
        return _head.decode(line).event
    except msgspec.DecodeError:
        return None


def _parse(values: Sequence[str]) -> frozenset[tuple[str, str | None]]:
    out: set[tuple[str, str | None]] = set()
    for value in values:
        dataset, _, action = value.partition(":")
        out.add((f"telltale.{dataset}", action or None))
    return frozenset(out)


@dataclass(frozen=True)
class Selector:
    """What one output takes; ``everything`` when nothing narrows it."""

    include: frozenset[tuple[str, str | None]] = frozenset()
    exclude: frozenset[tuple[str, str | None]] = frozenset()
    min_severity: int | None = None

    @property
    def everything(self) -> bool:
        return not self.include and not self.exclude and self.min_severity is None

    @staticmethod
    def _hit(rules: frozenset[tuple[str, str | None]], dataset: str, action: str) -> bool:
        return (dataset, None) in rules or (dataset, action) in rules

    def takes_fields(self, dataset: str, action: str, severity: int | None) -> bool:
        if self.include and not self._hit(self.include, dataset, action):
            return False
        if self.exclude and self._hit(self.exclude, dataset, action):
            return False
        return self.min_severity is None or severity is None or severity >= self.min_severity

    def takes_head(self, head: _EventHead | None) -> bool:
        """Whether the output takes an event with this head (one that could not be read: yes)."""
        if head is None or self.everything:
            return True  # never drop silently what cannot be classified
        return self.takes_fields(head.dataset, head.action, head.severity)

    def takes(self, line: bytes) -> bool:
        """Whether the output takes the event encoded in ``line``."""
        return self.everything or self.takes_head(event_head(line))

    def describe(self) -> dict[str, object]:
        """The effective selection for ``config validate``."""
        def show(rules: frozenset[tuple[str, str | None]]) -> list[str]:
            return sorted(d.removeprefix("telltale.") + (f":{a}" if a else "") for d, a in rules)

        if self.everything:
            return {"takes": "every event"}
        out: dict[str, object] = {}
        if self.include:
            out["include"] = show(self.include)
        if self.exclude:
            out["exclude"] = show(self.exclude)
        if self.min_severity is not None:
            band = next(k for k, v in SEVERITY_FLOOR.items() if v == self.min_severity)
            out["min_severity"] = f"{band} (event.severity >= {self.min_severity}; events without one pass)"
        return out


def selector_of(include: Sequence[str] = (), exclude: Sequence[str] = (), min_severity: str | None = None) -> Selector:
    return Selector(
        include=_parse(include),
        exclude=_parse(exclude),
        min_severity=SEVERITY_FLOOR[min_severity] if min_severity else None,
    )
