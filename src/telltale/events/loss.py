"""Events that make loss visible: quarantined records, truncated, rewritten and removed
sources, interrupted scans.

All of them are content-free: a source is named by kind and path hash, a record by line
and byte offset (or row key), reason, field and bound. Every one but ``scan_interrupted``
is a *record event*: its id is a pure function of the source state it reports, so it is
emitted exactly once like activity (DECISIONS "Event identity"); ``scan_interrupted``
describes one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from telltale.digest import blake2b
from telltale.events.envelope import base_event, path_hash
from telltale.model import Quarantine

#: Quarantined records reported one by one per source and run; the rest are aggregated.
QUARANTINE_EVENTS_PER_SOURCE = 100


def _event_id(*parts: object) -> str:
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def _health(event_id: str, action: str, observed_at: str, *, level: str, kind: str = "event") -> dict[str, Any]:
    doc = base_event(event_id=event_id, dataset="telltale.health", action=action, kind=kind, timestamp=None,
                     observed_at=observed_at)
    doc["event"].update({"category": ["host"], "type": ["info"]})
    doc["log"] = {"level": level}
    return doc


def _source(kind: str, client: str, path: str) -> dict[str, Any]:
    return {"client": client, "source": {"kind": kind, "path_hash": path_hash(path)}}


def record_quarantined(q: Quarantine, *, client: str, observed_at: str) -> dict[str, Any]:
    """One quarantined record, by coordinate and reason."""
    doc = _health(
        _event_id("record_quarantined", q.source_kind, q.path, q.line, q.offset, q.row, q.reason, q.field,
                  q.record_id),
        "record_quarantined", observed_at, level="warning",
    )
    record: dict[str, Any] = {"reason": q.reason}
    for name in ("line", "offset", "row", "field", "bound", "sequence", "session_id", "record_id"):
        value = getattr(q, name)
        if value is not None:
            record[name] = value
    doc["telltale"].update({**_source(q.source_kind, client, q.path), "quarantine": record})
    where = f"line {q.line}" if q.line is not None else (f"row {q.row}" if q.row is not None else "a record")
    doc["message"] = f"{q.source_kind}: {where} quarantined ({q.reason})"
    return doc


def quarantine_aggregate(
    first: Quarantine, last: Quarantine, counts: Mapping[str, int], *, client: str, observed_at: str
) -> dict[str, Any]:
    """The quarantined records of one source and run beyond the first ones, counted by reason.

    ``first`` and ``last`` are the first and last records it covers (their coordinates
    bound the range, and with the counts make the id).
    """
    ordered = dict(sorted(counts.items()))
    total = sum(ordered.values())
    doc = _health(
        _event_id("record_quarantined_aggregate", first.source_kind, first.path, first.line, first.offset,
                  first.row, last.line, last.offset, last.row, sorted(ordered.items())),
        "record_quarantined", observed_at, level="warning",
    )
    span: dict[str, Any] = {"aggregate": True, "count": total, "reasons": ordered}
    for prefix, q in (("first", first), ("last", last)):
        for name in ("line", "offset", "row"):
            value = getattr(q, name)
            if value is not None:
                span[f"{prefix}_{name}"] = value
    doc["telltale"].update({**_source(first.source_kind, client, first.path), "quarantine": span})
    doc["message"] = f"{first.source_kind}: {total} more records quarantined"
    return doc


def source_reset(
    *, kind: str, client: str, path: str, reason: str, previous_offset: int, previous_size: int, size: int,
    previous_head: str, head: str, previous_inode: int, inode: int, observed_at: str,
) -> dict[str, Any]:
    """An append-only source that shrank (``source_truncated``) or whose bytes before the
    committed offset changed (``source_rewritten``); it is read again from the start."""
    action = "source_truncated" if reason == "truncated" else "source_rewritten"
    doc = _health(
        _event_id(action, kind, path, reason, previous_offset, previous_head, previous_inode, size, head, inode),
        action, observed_at, level="warning",
    )
    doc["telltale"].update({
        **_source(kind, client, path),
        "reset": {
            "reason": reason,
            "previous_offset": previous_offset,
            "previous_size": previous_size,
            "size": size,
            "reread_from": 0,
        },
    })
    what = "shrank" if action == "source_truncated" else {"identity_changed": "was replaced",
                                                         "head_changed": "has a new head",
                                                         "tail_changed": "changed before the offset"}.get(reason, "")
    doc["message"] = f"{kind}: source {what} ({previous_size} -> {size} bytes); read again from the start"
    return doc


def source_removed(
    *, kind: str, client: str, path: str, cursor: bytes, last_offset: int | None, last_line: int | None,
    last_scanned_at: str | None, observed_at: str,
) -> dict[str, Any]:
    """A source read before that is gone now (a file, a session directory's files, a store)."""
    doc = _health(_event_id("source_removed", kind, path, cursor.hex()), "source_removed", observed_at,
                  level="warning")
    removed: dict[str, Any] = {}
    if last_offset is not None:
        removed["last_offset"] = last_offset
    if last_line is not None:
        removed["last_line"] = last_line
    if last_scanned_at is not None:
        removed["last_scanned_at"] = last_scanned_at
    doc["telltale"].update({**_source(kind, client, path), "removed": removed})
    doc["message"] = f"{kind}: source removed since the last scan"
    return doc


def scan_interrupted(
    *, scan_id: str, signal_name: str, sources_done: int, sources_total: int, observed_at: str,
) -> dict[str, Any]:
    """A scan stopped by SIGINT/SIGTERM; what it wrote is committed (a per-run event)."""
    doc = _health(_event_id(scan_id, "scan_interrupted"), "scan_interrupted", observed_at, level="warning")
    doc["telltale"].update({
        "scan_id": scan_id,
        "interrupted": {"signal": signal_name, "sources_done": sources_done, "sources_total": sources_total},
    })
    doc["message"] = f"scan interrupted by {signal_name} after {sources_done}/{sources_total} sources"
    return doc
