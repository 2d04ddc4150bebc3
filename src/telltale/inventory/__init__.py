"""Installed-agent inventory (metadata only) and the agents' configuration posture.

See docs/inventory.md. Inventory never reads transcripts or session stores and is never
session evidence.
"""

from telltale.inventory.model import (
    INVENTORY_SCHEMA_VERSION,
    AgentInventory,
    InventorySnapshot,
    McpServer,
    Posture,
    Retention,
    SettingsFile,
    Signal,
    Telemetry,
    path_hash,
)
from telltale.inventory.snapshot import (
    DEFAULT_INVENTORY_INTERVAL,
    changed,
    classify,
    inventory_due,
    take_inventory,
)

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
