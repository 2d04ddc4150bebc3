"""``take_inventory``: probes, confidence rules and posture, into one deterministic snapshot.

Inventory answers "which agent tools appear installed?" and is never session evidence:
nothing here creates a source or reads a store (REG-4, INV-2).
"""

from __future__ import annotations

import ntpath
import os
from collections.abc import Mapping

from telltale.inventory.model import (
    INVENTORY_SCHEMA_VERSION,
    AgentInventory,
    Confidence,
    InventorySnapshot,
    Signal,
)
from telltale.inventory.posture import READERS, PostureContext
from telltale.inventory.probes import AGENTS, AgentProbe
from telltale.inventory.signals import Probe

PLATFORMS: tuple[str, ...] = ("linux", "darwin", "win32")


def normalize_platform(platform: str) -> str:
    """``sys.platform``-style names to the three the probe table knows."""
    if platform.startswith("win") or platform == "cygwin":
        return "win32"
    if platform == "darwin":
        return "darwin"
    return "linux"


def host_system_root(platform: str, env: Mapping[str, str]) -> str:
    """The real filesystem root for system-wide locations on this host."""
    if normalize_platform(platform) == "win32":
        drive = env.get("SystemDrive", "C:").strip() or "C:"
        return drive + "\\"
    return "/"


def classify(signals: list[Signal]) -> tuple[bool, Confidence]:
    """The confidence rule, the same for every agent (INV-13).

    Any definitive signal confirms (installed). Only ambiguous signals (the ``copilot``
    launcher, INV-10/INV-12) give ``partial`` and ``installed=false``. None: ``absent``.
    """
    if any(s.definitive for s in signals):
        return True, "confirmed"
    if signals:
        return False, "partial"
    return False, "absent"


def take_inventory(
    home: str,
    env: Mapping[str, str],
    platform: str,
    *,
    path_env: str | None = None,
    system_root: str | None = None,
    consult_system: bool = True,
    posture: bool = True,
    agents: tuple[AgentProbe, ...] = AGENTS,
) -> InventorySnapshot:
    """Metadata-only inventory of ``home`` for ``platform``; never opens a session store.

    ``path_env`` replaces the PATH taken from ``env`` (pass ``""`` to skip PATH probes).
    System-wide locations (``/usr/local/lib/node_modules``, managed settings) hang from
    ``system_root`` (default: this host's root) unless ``consult_system`` is false.
    ``posture`` reads the installed agents' own settings files (see the posture package).
    """
    plat = normalize_platform(platform)
    home = _absolute(home, plat)
    root: str | None = None
    if consult_system:
        root = system_root if system_root is not None else host_system_root(plat, env)
    found = Probe(home, env, plat, path_env=path_env, system_root=root, agents=agents).run()
    ctx = PostureContext(home=home, env=env, platform=plat, system_root=root)
    entries: list[AgentInventory] = []
    for agent in agents:
        signals = found[agent.agent]
        installed, confidence = classify(signals)
        reader = READERS.get(agent.posture) if agent.posture and installed and posture else None
        entries.append(
            AgentInventory(
                agent=agent.agent,
                installed=installed,
                confidence=confidence,
                signals=signals,
                posture=reader(ctx) if reader else None,
            )
        )
    return InventorySnapshot(schema_version=INVENTORY_SCHEMA_VERSION, platform=plat, agents=entries)


def changed(snapshot: InventorySnapshot, last_digest: str | None) -> bool:
    """Emit only on change: true when the snapshot differs from the last emitted one."""
    return snapshot.digest() != last_digest


def _absolute(path: str, platform: str) -> str:
    if os.path.isabs(path) or (platform == "win32" and ntpath.isabs(path)):
        return path
    return os.path.abspath(path)
