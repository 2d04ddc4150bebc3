"""Alert volume: one alert per (session, rule) and an additive risk ledger per session.

DECISIONS "Event identity": an alert's id is hash(session, rule, first anchor); later
occurrences of the same rule (or sequence) in the same session fold into it while it is
still waiting to be written (one scan window: ``AlertBatch``), and otherwise only into the
session's ledger. The ledger lives in the :class:`~telltale.detect.model.SessionWindow`,
which the pipeline commits with the cursors, so a killed scan neither loses nor counts
twice an occurrence. A ``session_risk_summary`` rollup is written whenever the ledger's
risk (its entries and their points) changes; its id is hash(session, ledger digest), so
the last rollup of a session is the same whatever kills happened.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from telltale.detect.model import SEVERITIES, Anchor, Detection, LedgerEntry, SessionWindow, Severity
from telltale.digest import blake2b

#: Anchors (and their evidence) an aggregated alert keeps at most: the first occurrences.
MAX_ANCHORS = 10
#: Ledger entries a session keeps at most (one per rule or sequence that fired).
MAX_LEDGER = 512

#: Lower bound of each session risk band (points summed over the ledger); configurable
#: (``risk_bands`` in a policy file). The same bands as a single alert's by default.
DEFAULT_RISK_BANDS: dict[str, int] = {"low": 20, "medium": 50, "high": 70, "critical": 90}


_RANK = {name: i for i, name in enumerate(SEVERITIES)}


def band_of(points: int, bands: dict[str, int]) -> Severity:
    """The session severity of ``points`` under ``bands`` (highest band whose floor is reached)."""
    best: Severity = "informational"
    for name in SEVERITIES[1:]:
        floor = bands.get(name)
        if floor is not None and points >= floor:
            best = name
    return best


def record(window: SessionWindow, det: Detection) -> None:
    """Put ``det`` in its session's ledger; a later occurrence of an id already there becomes
    a *repeat* carrying the first alert's id (folded into it, or counted only).

    A suppressed (allowlisted) alert is folded the same way but adds no points: the
    exception says it is accepted, and a zero-point entry is left out of the rollup.
    """
    points = 0 if det.suppressed_by is not None else det.score
    kind: Literal["rule", "sequence"] = "sequence" if det.is_sequence else "rule"
    for entry in window.ledger:
        if entry.id == det.rule_id and entry.kind == kind:
            entry.count += 1
            entry.points = max(entry.points, points)
            entry.last_seen = det.last_seen or entry.last_seen
            det.repeat = True
            det.detection_id = entry.detection_id
            return
    if len(window.ledger) >= MAX_LEDGER:
        return
    window.ledger.append(
        LedgerEntry(
            id=det.rule_id,
            kind=kind,
            points=points,
            count=1,
            category=det.category,
            detection_id=det.detection_id,
            first_seen=det.first_seen,
            last_seen=det.last_seen,
        )
    )


def digest(entries: Iterable[LedgerEntry]) -> str:
    """What the session's risk is made of: each rule or sequence and its points (counts
    and times are reported, but a repeat alone does not make a new rollup)."""
    h = blake2b(digest_size=16)
    for kind, ident, points in sorted((e.kind, e.id, e.points) for e in entries if e.points > 0):
        h.update(f"{kind}\x1f{ident}\x1f{points}\x1e".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def rollup_id(session_key: str, ledger_digest: str) -> str:
    h = blake2b(digest_size=16)
    h.update(session_key.encode("utf-8", "surrogatepass"))
    h.update(b"\x1f")
    h.update(ledger_digest.encode())
    return h.hexdigest()


class AlertBatch:
    """The alerts of one scan window, folded by id until the window is written.

    A repeat whose first alert is still here is counted into it (count, last seen, up to
    ``MAX_ANCHORS`` anchors, the highest score); a repeat of an alert already written is
    dropped (the ledger has it).
    """

    def __init__(self) -> None:
        self._alerts: dict[str, Detection] = {}

    def __len__(self) -> int:
        return len(self._alerts)

    def add(self, det: Detection) -> None:
        first = self._alerts.get(det.detection_id)
        if first is None:
            if not det.repeat:
                self._alerts[det.detection_id] = det
            return
        _fold(first, det)

    def drain(self) -> list[Detection]:
        out = list(self._alerts.values())
        self._alerts = {}
        return out


def _fold(first: Detection, later: Detection) -> None:
    first.count += 1
    first.last_seen = later.last_seen or first.last_seen
    first.score = max(first.score, later.score)
    if _RANK[later.severity] > _RANK[first.severity]:
        first.severity = later.severity  # a later one raised by a modifier (a pinned one stays)
    for rid in later.rule_ids:
        if rid not in first.rule_ids:
            first.rule_ids.append(rid)
    for mod in later.modifiers:
        if mod not in first.modifiers:
            first.modifiers.append(mod)
    if len(first.where) < MAX_ANCHORS:
        known = {a.observation_id for a in first.where}
        fresh: list[Anchor] = [a for a in later.where if a.observation_id not in known]
        room = MAX_ANCHORS - len(first.where)
        first.where.extend(fresh[:room])
        for a in fresh[:room]:
            if a.observation_id not in first.anchors:
                first.anchors.append(a.observation_id)
        added = {a.observation_id for a in fresh[:room]}
        first.evidence.extend(e for e in later.evidence if e.observation_id in added)

