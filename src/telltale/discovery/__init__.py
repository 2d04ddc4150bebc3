"""Session-store discovery: where can Telltale acquire activity from?

Separate from installed-agent inventory: nothing here runs a tool or reads a store's
contents. See ``docs/discovery.md`` for the rules and how ambiguities were resolved.
"""

from telltale.discovery.api import (
    DEFAULT_BUDGET,
    DiscoveryIssue,
    DiscoveryOptions,
    DiscoveryResult,
    StoreRoot,
)
from telltale.discovery.core import check_root, discover

__all__ = [
    "DEFAULT_BUDGET",
    "DiscoveryIssue",
    "DiscoveryOptions",
    "DiscoveryResult",
    "StoreRoot",
    "check_root",
    "discover",
]
