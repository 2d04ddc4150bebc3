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
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import msgspec

from telltale import faults
from telltale.digest import blake2b
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
    if root in (None, ".") and getattr(args, "profile", None) == "system":
        return per_account_hook(max(float(interval), 0.0))
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


def per_account_hook(interval: float) -> Hook:
    """The system profile's inventory: one per local account's home (the homes discovery
    scans), each remembered under its own keys and its events carrying the account's
    ``user.name``. Like discovery, no user's environment is read; the host's PATH and
    system-wide locations are probed for every home (what is installed there is installed
    for each user)."""
    from telltale.discovery.accounts import scanned_homes

    def snapshot_of(home: str) -> Callable[[], InventorySnapshot]:
        def snapshot() -> InventorySnapshot:
            from telltale.inventory.snapshot import take_inventory

            return take_inventory(home, {}, sys.platform, path_env=os.environ.get("PATH", ""))
        return snapshot

    emitters = [InventoryEmitter(snapshot_of(h.home), interval, user=h.user) for h in scanned_homes(os.environ)]

    def events(state: Any, observed_at: str) -> tuple[list[dict[str, Any]], Commit | None]:
        docs: list[dict[str, Any]] = []
        commits: list[WindowCommit] = []
        for emitter in emitters:
            more, commit = emitter.events(state, observed_at)
            docs.extend(more)
            if isinstance(commit, WindowCommit):
                commits.append(commit)
        return docs, (_joined(commits) if commits else None)

    return events


def _joined(commits: list[WindowCommit]) -> WindowCommit:
    """One commit installing every account's meta entries and running each one's ``after``."""
    meta: dict[str, bytes | None] = {}
    for commit in commits:
        meta.update(commit.meta)

    def after(conn: Any) -> None:
        for commit in commits:
            if commit.after is not None:
                commit.after(conn)

    return WindowCommit(meta, after)


class InventoryEmitter:
    """Remembers the last digest and run time (in the state store when there is one).

    ``user``: the account whose home the snapshot inspects (system profile); its keys in the
    state and its event ids are the account's own, its events carry it as ``user.name``.
    """

    def __init__(self, snapshot: Callable[[], InventorySnapshot], interval: float,
                 clock: Callable[[], float] = time.time, *, user: str = "") -> None:
        self.snapshot = snapshot
        self.interval = interval
        self.clock = clock
        self.user = user
        suffix = f":{user}" if user else ""
        self._digest_key, self._run_key = META_DIGEST + suffix, META_LAST_RUN + suffix
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
            raw_digest, raw_run = state.meta(self._digest_key), state.meta(self._run_key)
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
            meta[self._run_key] = repr(now).encode()
            if emit:
                meta[self._digest_key] = digest.encode()
        events = []
        if emit:
            events = inventory_events(snap, observed_at=observed_at, previous_digest=last_digest, user=self.user)
        return events, WindowCommit(meta, remember)


def inventory_events(
    snapshot: InventorySnapshot, *, observed_at: str, previous_digest: str | None, user: str = ""
) -> list[dict[str, Any]]:
    """One ``inventory`` event per agent and one ``inventory_summary``; ids follow the digest
    (and the account, when one home of several was inspected)."""
    from telltale.events.envelope import base_event, host_fields

    digest = snapshot.digest()
    host = str(host_fields().get("host", {}).get("name", ""))
    scope = (host, user) if user else (host,)

    def event_id(*parts: str) -> str:
        return blake2b("\x1f".join(("inventory", *scope, digest, *parts)).encode(), digest_size=16).hexdigest()

    docs: list[dict[str, Any]] = []
    for agent in snapshot.agents:
        doc = base_event(
            event_id=event_id("agent", agent.agent),
            dataset="telltale.inventory",
            action="inventory",
            kind="state",
            timestamp=None,
            observed_at=observed_at,
            user=user,
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
        user=user,
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
