"""Health events: scan summaries, per-source scanner errors and operational alerts."""

from __future__ import annotations

from typing import Any

from telltale.digest import blake2b
from telltale.events.envelope import base_event, path_hash

_SEVERITY = {"informational": 10, "low": 21, "warning": 47, "medium": 47, "high": 73, "critical": 99}


def _event_id(*parts: str) -> str:
    return blake2b("\x1f".join(parts).encode(), digest_size=16).hexdigest()


def scanner_error(
    *, scan_id: str, kind: str, client: str, path: str, reason: str, detail: str, observed_at: str
) -> dict[str, Any]:
    """One failed source. ``detail`` is content-free by construction (SourceError)."""
    doc = base_event(
        event_id=_event_id(scan_id, "scanner_error", kind, path),
        dataset="telltale.health",
        action="scanner_error",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["error"], "outcome": "failure", "severity": 21})
    doc["log"] = {"level": "error"}
    doc["error"] = {"code": reason, "message": detail[:512]}
    doc["telltale"].update(
        {"scan_id": scan_id, "client": client, "source": {"kind": kind, "path_hash": path_hash(path)}}
    )
    doc["message"] = f"source {kind} failed: {reason}"
    return doc


def operational_alert(
    *, scan_id: str, alert_type: str, severity: str, summary: str, observed_at: str, fields: dict[str, Any]
) -> dict[str, Any]:
    doc = base_event(
        event_id=_event_id(scan_id, "operational_alert", alert_type),
        dataset="telltale.health",
        action="operational_alert",
        kind="alert",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["info"], "severity": _SEVERITY.get(severity, 47)})
    doc["log"] = {"level": "warning" if severity in ("warning", "medium", "low") else severity}
    doc["telltale"].update({"scan_id": scan_id, "alert_type": alert_type, "alert": fields})
    doc["message"] = summary
    return doc


def scan_summary(*, scan_id: str, summary: dict[str, Any], observed_at: str) -> dict[str, Any]:
    doc = base_event(
        event_id=_event_id(scan_id, "scan_summary"),
        dataset="telltale.health",
        action="scan_summary",
        kind="state",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["info"], "duration": summary.get("duration_ns", 0)})
    doc["log"] = {"level": "info"}
    doc["telltale"].update({"scan_id": scan_id, "scan": summary})
    doc["message"] = (
        f"scan: {summary.get('sources_scanned', 0)} sources, {summary.get('emitted_count', 0)} events, "
        f"{summary.get('error_count', summary.get('scanner_error_count', 0))} errors"
    )
    return doc


def source_unsupported(
    *, kind: str, client: str, path: str, reason: str, size: int | None, mtime: str | None, observed_at: str
) -> dict[str, Any]:
    """A store this build finds but cannot read: the blind spot, reported once per source.

    A record event: its id is a function of the source and the reason only, so it is
    emitted once whatever the number of scans (the state remembers it was reported).
    """
    doc = base_event(
        event_id=_event_id("source_unsupported", kind, path, reason),
        dataset="telltale.health",
        action="source_unsupported",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["info"], "outcome": "unknown", "severity": 21})
    doc["log"] = {"level": "warning"}
    source: dict[str, Any] = {"kind": kind, "path_hash": path_hash(path), "status": "unsupported", "reason": reason}
    if size is not None:
        source["size"] = size
    if mtime is not None:
        source["mtime"] = mtime
    doc["telltale"].update({"client": client, "source": source})
    doc["message"] = f"source {kind} cannot be read: {reason}"
    return doc


def source_health(
    *, kind: str, client: str, path: str, reason: str, identity: str, fields: dict[str, int | str],
    observed_at: str,
) -> dict[str, Any]:
    """A record health event an adapter raised about its source (``source_reordered``...).

    The id is a pure function of the source (kind, path, reason, the fingerprint of the
    state it is about), never of the scan: it is committed with the source's cursor, so it
    is emitted once however often the scan is interrupted.
    """
    doc = base_event(
        event_id=_event_id(kind, path, reason, identity),
        dataset="telltale.health",
        action=reason,
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["change"], "severity": 21})
    doc["log"] = {"level": "warning"}
    doc["telltale"].update(
        {"client": client, "source": {"kind": kind, "path_hash": path_hash(path)}, "health": dict(fields)}
    )
    doc["message"] = f"source {kind}: {reason}"
    return doc


def state_reset(
    *, state_path: str, log_path: str, log_identity: tuple[int, int, int], observed_at: str
) -> dict[str, Any]:
    """A new or emptied state beside a log that already holds events: what follows is a
    re-read from the beginning. A record event: its id depends only on the state, the log
    and the log's size when the reset was found (a killed first window is cut back to that
    size, so a re-run finds the same id)."""
    device, inode, size = log_identity
    doc = base_event(
        event_id=_event_id("state_reset", state_path, log_path, str(device), str(inode), str(size)),
        dataset="telltale.health",
        action="state_reset",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host"], "type": ["change"], "severity": _SEVERITY["warning"]})
    doc["log"] = {"level": "warning"}
    doc["telltale"].update(
        {
            "state_reset": {
                "state_path_hash": path_hash(state_path),
                "log_path_hash": path_hash(log_path),
                "log_size": size,
            }
        }
    )
    doc["message"] = (
        "state is new or empty but the log already holds events: every source is read again from the beginning "
        "(event ids are stable, so downstream dedupe is safe)"
    )
    return doc
