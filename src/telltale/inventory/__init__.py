"""Installed-agent inventory (metadata only) and the agents' configuration posture.

See docs/inventory.md. Inventory never reads transcripts or session stores and is never
session evidence.
"""

from typing import Any

from telltale.inventory.model import (
    DEFAULT_INVENTORY_INTERVAL,
    INVENTORY_SCHEMA_VERSION,
    AgentInventory,
    InventorySnapshot,
    McpServer,
    Posture,
    Retention,
    SettingsFile,
    Signal,
    Telemetry,
    inventory_due,
    path_hash,
)

_SNAPSHOT = ("changed", "classify", "take_inventory")


def __getattr__(name: str) -> Any:
    """The snapshot functions, imported on first use: taking an inventory loads every agent's
    posture reader (YAML, TOML), which a scan whose inventory is not due never needs."""
    if name in _SNAPSHOT:
        from telltale.inventory import snapshot

        return getattr(snapshot, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_INVENTORY_INTERVAL",
    "INVENTORY_SCHEMA_VERSION",
    "AgentInventory",
    "InventorySnapshot",
    "McpServer",
    "Posture",
    "Retention",
    "SettingsFile",
    "Signal",
    "Telemetry",
    "changed",
    "classify",
    "inventory_due",
    "path_hash",
    "take_inventory",
]
