"""OpenCode: ``opencode.db`` (and channel databases) in the OpenCode data directory.

The adapter reads the legacy ``message``/``part`` tables or the v2 ``session_message``
table read-only (see :mod:`telltale.sources.opencode.adapter`); vendor field names live in
:mod:`telltale.sources.opencode.native`.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

SPECS = (
    SourceSpec(
        client="opencode",
        kind="opencode.sqlite",
        root_type=RootType.DATA_HOME,
        relative_path="opencode",
        file_patterns=("opencode.db",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="opencode",
        adapter="telltale.sources.opencode:OpenCodeAdapter",
        description="OpenCode SQLite store (legacy message/part and v2 session_message)",
    ),
)


_LAZY = {"OpenCodeAdapter": ".adapter"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["SPECS", "OpenCodeAdapter"]
