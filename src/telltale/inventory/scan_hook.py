"""Inventory inside ``telltale scan``: on a cadence (INV-3), emitted only on change.

``telltale.cli.scan`` imports :func:`inventory_hook` when present and hands the callable
it returns to the pipeline as ``extra_events(state, observed_at)``. The callable takes an
inventory when the cadence says so, compares its digest with the last one recorded in the
scanner's state and returns one ``install_inventory`` state event when it changed.

Failure of the inventory never fails a scan: it is reported on stderr (content-free) and
the scan goes on without the event.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import msgspec

from telltale import faults
from telltale.inventory.model import DEFAULT_INVENTORY_INTERVAL, InventorySnapshot, inventory_due
from telltale.state import WindowCommit

META_DIGEST = "inventory.digest"
META_LAST_RUN = "inventory.last_run"

#: What the pipeline calls once per emitting scan: events to write, and a function that
#: records the new digest inside the same transaction that commits those events.
Commit = Callable[[Any], None]
Hook = Callable[[Any, str], tuple[list[dict[str, Any]], Commit | None]]


class _State(Protocol):
    def meta(self, key: str) -> bytes | None: ...
    def set_meta(self, conn: Any, key: str, value: bytes) -> None: ...


def inventory_hook(args: argparse.Namespace) -> Hook | None:
    """The inventory step of a scan, or None when switched off or when ``--client`` filters."""
    interval = getattr(args, "install_inventory_interval_seconds", DEFAULT_INVENTORY_INTERVAL)
    if getattr(args, "install_inventory_disabled", False) or getattr(args, "client", None):
        return None
    root = getattr(args, "root", ".")
    if root in (None, "."):
        def snapshot() -> InventorySnapshot:
            from telltale.inventory.snapshot import take_inventory

            return take_inventory(str(Path.home()), os.environ, sys.platform)
    else:
        home = str(Path(root).resolve())

        def snapshot() -> InventorySnapshot:
            from telltale.inventory.snapshot import take_inventory

            # An explicit root is inspected as a home: no environment, PATH or system dirs.
            return take_inventory(home, {}, sys.platform, path_env="", consult_system=False)
    return InventoryEmitter(snapshot, max(float(interval), 0.0)).events


class InventoryEmitter:
    """Remembers the last digest and run time (in the state store when there is one)."""

    def __init__(self, snapshot: Callable[[], InventorySnapshot], interval: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.snapshot = snapshot
        self.interval = interval
        self.clock = clock
        self._digest: str | None = None
        self._last_run: float | None = None

    def events(self, state: _State | None, observed_at: str) -> tuple[list[dict[str, Any]], Commit | None]:
        try:
            return self._events(state, observed_at)
        except Exception as exc:  # inventory must never fail a scan
            print(f"telltale: inventory skipped: {type(exc).__name__}", file=sys.stderr)
            return [], None

    def _events(self, state: _State | None, observed_at: str) -> tuple[list[dict[str, Any]], Commit | None]:
        last_digest, last_run = self._digest, self._last_run
        if state is not None:
            raw_digest, raw_run = state.meta(META_DIGEST), state.meta(META_LAST_RUN)
            last_digest = raw_digest.decode() if raw_digest else None
            last_run = _float(raw_run)
        now = self.clock()
        if not inventory_due(last_run, now, self.interval):
            return [], None
        snap = self.snapshot()
        faults.hit("inventory")
        digest = snap.digest()
        emit = digest != last_digest

        def remember(_conn: Any) -> None:
            self._last_run = now
            if emit:
                self._digest = digest

        # The digest is installed with the window that writes the events — by its commit,
        # or by the recovery of that window after a kill — never after them: a digest
        # recorded later would let a killed scan's successor emit the same inventory again.
        meta: dict[str, bytes | None] = {}
        if state is not None:
            meta[META_LAST_RUN] = repr(now).encode()
            if emit:
                meta[META_DIGEST] = digest.encode()
        events = inventory_events(snap, observed_at=observed_at, previous_digest=last_digest) if emit else []
        return events, WindowCommit(meta, remember)


def inventory_events(
    snapshot: InventorySnapshot, *, observed_at: str, previous_digest: str | None
) -> list[dict[str, Any]]:
    """One ``inventory`` event per agent and one ``inventory_summary``; ids follow the digest."""
    from telltale.events.envelope import base_event, host_fields

    digest = snapshot.digest()
    host = str(host_fields().get("host", {}).get("name", ""))

    def event_id(*parts: str) -> str:
        return hashlib.blake2b("\x1f".join(("inventory", host, digest, *parts)).encode(), digest_size=16).hexdigest()

    docs: list[dict[str, Any]] = []
    for agent in snapshot.agents:
        doc = base_event(
            event_id=event_id("agent", agent.agent),
            dataset="telltale.inventory",
            action="inventory",
            kind="state",
            timestamp=None,
            observed_at=observed_at,
        )
        doc["event"].update({"category": ["host", "package"], "type": ["info"]})
        doc["telltale"]["inventory"] = {"digest": digest, **msgspec.to_builtins(agent)}
        doc["message"] = f"agent {agent.agent}: {agent.confidence}" + (" (installed)" if agent.installed else "")
        docs.append(doc)
    installed = [a.agent for a in snapshot.agents if a.installed]
    partial = [a.agent for a in snapshot.agents if a.confidence == "partial"]
    summary = base_event(
        event_id=event_id("summary"),
        dataset="telltale.inventory",
        action="inventory_summary",
        kind="state",
        timestamp=None,
        observed_at=observed_at,
    )
    summary["event"].update({"category": ["host", "package"], "type": ["info"]})
    summary["telltale"]["inventory"] = {
        "digest": digest,
        "previous_digest": previous_digest,
        "schema_version": snapshot.schema_version,
        "platform": snapshot.platform,
        "installed": installed,
        "partial": partial,
        "agent_count": len(snapshot.agents),
    }
    summary["message"] = f"inventory: {len(installed)} installed ({', '.join(installed) or 'none'})" + (
        f", {len(partial)} partial ({', '.join(partial)})" if partial else ""
    )
    docs.append(summary)
    return docs


def _float(raw: bytes | None) -> float | None:
    if not raw:
        return None
    try:
        return float(raw.decode())
    except (UnicodeDecodeError, ValueError):
        return None
