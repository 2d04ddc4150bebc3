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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import msgspec

from telltale.inventory.model import InventorySnapshot
from telltale.inventory.snapshot import DEFAULT_INVENTORY_INTERVAL, inventory_due, take_inventory

#: Environment variable that sets the cadence in seconds (0: every scan; "off": never).
INTERVAL_ENV = "TELLTALE_INVENTORY_INTERVAL_SECONDS"
META_DIGEST = "inventory.digest"
META_LAST_RUN = "inventory.last_run"


class _State(Protocol):
    def meta(self, key: str) -> bytes | None: ...
    def set_meta(self, conn: Any, key: str, value: bytes) -> None: ...
    def transaction(self) -> Any: ...


def interval_from(args: argparse.Namespace, env: Mapping[str, str]) -> float | None:
    """Cadence: ``args.inventory_interval`` if the scan parser has it, else the env var."""
    value: object = getattr(args, "inventory_interval", None)
    if value is None:
        value = env.get(INTERVAL_ENV)
    if value is None or value == "":
        return DEFAULT_INVENTORY_INTERVAL
    if isinstance(value, str) and value.strip().lower() in {"off", "never", "none"}:
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_INVENTORY_INTERVAL
    return max(seconds, 0.0)


def inventory_hook(args: argparse.Namespace) -> Callable[[Any, str], list[dict[str, Any]]] | None:
    """The ``extra_events`` callable for a scan, or None when inventory is switched off."""
    interval = interval_from(args, os.environ)
    if interval is None or getattr(args, "no_inventory", False):
        return None
    root = getattr(args, "root", ".")
    if root in (None, "."):
        def snapshot() -> InventorySnapshot:
            return take_inventory(str(Path.home()), os.environ, sys.platform)
    else:
        home = str(Path(root).resolve())

        def snapshot() -> InventorySnapshot:
            # An explicit root is inspected as a home: no environment, PATH or system dirs.
            return take_inventory(home, {}, sys.platform, path_env="", consult_system=False)
    return InventoryEmitter(snapshot, interval).events


class InventoryEmitter:
    """Remembers the last digest and run time (in the state store when there is one)."""

    def __init__(self, snapshot: Callable[[], InventorySnapshot], interval: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.snapshot = snapshot
        self.interval = interval
        self.clock = clock
        self._digest: str | None = None
        self._last_run: float | None = None

    def events(self, state: _State | None, observed_at: str) -> list[dict[str, Any]]:
        try:
            return self._events(state, observed_at)
        except Exception as exc:  # inventory must never fail a scan
            print(f"telltale: inventory skipped: {type(exc).__name__}", file=sys.stderr)
            return []

    def _events(self, state: _State | None, observed_at: str) -> list[dict[str, Any]]:
        last_digest, last_run = self._digest, self._last_run
        if state is not None:
            raw_digest, raw_run = state.meta(META_DIGEST), state.meta(META_LAST_RUN)
            last_digest = raw_digest.decode() if raw_digest else None
            last_run = _float(raw_run)
        now = self.clock()
        if not inventory_due(last_run, now, self.interval):
            return []
        snap = self.snapshot()
        digest = snap.digest()
        self._last_run = now
        emit = digest != last_digest
        if emit:
            self._digest = digest
        if state is not None:
            with state.transaction() as conn:
                state.set_meta(conn, META_LAST_RUN, repr(now).encode())
                if emit:
                    state.set_meta(conn, META_DIGEST, digest.encode())
        return [inventory_event(snap, observed_at=observed_at, previous_digest=last_digest)] if emit else []


def inventory_event(snapshot: InventorySnapshot, *, observed_at: str, previous_digest: str | None) -> dict[str, Any]:
    """One ``install_inventory`` state event; the id is derived from the (previous, new) digests."""
    from telltale.events.envelope import base_event, host_fields

    digest = snapshot.digest()
    host = str(host_fields().get("host", {}).get("name", ""))
    event_id = hashlib.blake2b(
        "\x1f".join(("install_inventory", host, previous_digest or "", digest)).encode(), digest_size=16
    ).hexdigest()
    doc = base_event(
        event_id=event_id,
        dataset="telltale.inventory",
        action="install_inventory",
        kind="state",
        timestamp=None,
        observed_at=observed_at,
    )
    doc["event"].update({"category": ["host", "package"], "type": ["info"]})
    installed = [a.agent for a in snapshot.agents if a.installed]
    partial = [a.agent for a in snapshot.agents if a.confidence == "partial"]
    doc["telltale"]["inventory"] = {
        "digest": digest,
        "previous_digest": previous_digest,
        "schema_version": snapshot.schema_version,
        "platform": snapshot.platform,
        "installed": installed,
        "partial": partial,
        "agents": msgspec.to_builtins(snapshot.agents),
    }
    doc["message"] = f"inventory: {len(installed)} installed ({', '.join(installed) or 'none'})" + (
        f", {len(partial)} partial ({', '.join(partial)})" if partial else ""
    )
    return doc


def _float(raw: bytes | None) -> float | None:
    if not raw:
        return None
    try:
        return float(raw.decode())
    except (UnicodeDecodeError, ValueError):
        return None
