"""The ``session_risk_summary`` rollup: one session's additive risk ledger as an event.

A rollup is a snapshot of state (DECISIONS "Event identity"): its id is hash(session,
ledger digest), written whenever the session's risk changes. Everything an agent chose
(the session id) passes the redactor; the ledger itself holds rule ids, points, counts
and times only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from telltale.detect.ledger import band_of
from telltale.detect.model import SEVERITIES, LedgerEntry, severity_for
from telltale.events.detection import RISK_SCORE_MAX, SEVERITY_NUMBER
from telltale.events.envelope import base_event
from telltale.events.redaction import redact

_RANK = {name: i for i, name in enumerate(SEVERITIES)}


def _rationale(entry: LedgerEntry, title: str) -> str:
    times = "once" if entry.count == 1 else f"{entry.count} times"
    what = "sequence" if entry.kind == "sequence" else "rule"
    return f"{title} ({what} {entry.id}) {times}: {entry.points} points"


def session_risk_event(
    *,
    event_id: str,
    client: str,
    session_id: str,
    ledger: Sequence[LedgerEntry],
    titles: Mapping[str, str],
    bands: Mapping[str, int],
    observed_at: str,
) -> dict[str, Any]:
    """The rollup document of one session (``event.kind: state``)."""
    # Allowlisted alerts (zero points) are accepted risk: not part of the session's.
    entries = sorted((e for e in ledger if e.points > 0), key=lambda e: (-e.points, e.kind, e.id))
    total = sum(e.points for e in entries)
    severity = band_of(total, dict(bands))
    max_severity = max((severity_for(e.points) for e in entries), key=_RANK.__getitem__, default="informational")
    categories = sorted({e.category for e in entries})
    last = max((e.last_seen for e in entries if e.last_seen), default=None)
    doc = base_event(
        event_id=event_id,
        dataset="telltale.session_risk",
        action="session_risk_summary",
        kind="state",
        timestamp=last,
        observed_at=observed_at,
    )
    risk_score = min(total, RISK_SCORE_MAX)
    doc["event"].update(
        category=["intrusion_detection"],
        type=["info"],
        severity=SEVERITY_NUMBER[severity],
        risk_score=float(risk_score),
        risk_score_norm=float(risk_score),
    )
    doc["message"] = (
        f"session risk {severity}: {total} points from {len(entries)} rule"
        f"{'' if len(entries) == 1 else 's'} ({', '.join(categories)})"
    )
    doc["gen_ai"] = {"conversation": {"id": redact(session_id)}}
    doc["telltale"].update(
        client=client,
        session_risk={
            "total_points": total,
            "risk_score": risk_score,
            "severity": severity,
            "max_severity": max_severity,
            "categories": categories,
            "alerts": len(entries),
            "occurrences": sum(e.count for e in entries),
            "bands": {name: bands[name] for name in SEVERITIES[1:] if name in bands},
            "ledger": [
                {
                    "id": e.id,
                    "kind": e.kind,
                    "points": e.points,
                    "count": e.count,
                    "category": e.category,
                    "severity": severity_for(e.points),
                    "detection_id": e.detection_id,
                    "first_seen": e.first_seen,
                    "last_seen": e.last_seen,
                    "rationale": _rationale(e, titles.get(e.id, e.id)),
                }
                for e in entries
            ],
        },
    )
    return doc
