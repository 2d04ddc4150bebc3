"""Zed's agent panel: ``threads/threads.db`` under Zed's data folder.

One SQLite row per thread, its ``data`` the whole thread as JSON or zstd-compressed
JSON, rewritten on every update (:mod:`.threads`). Zed's data folder is
``$XDG_DATA_HOME/zed`` or ``~/.local/share/zed`` on Linux (``~/.var/app/dev.zed.Zed/data/zed``
for the Flatpak), ``~/Library/Application Support/Zed`` on macOS and
``%LOCALAPPDATA%\\Zed`` on Windows. No real sample could be used (the one public file is
under a non-commercial licence): shapes come from it as described and from public
third-party parsers (docs/sources/zed.md).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

CLIENT = "zed"
KIND = "zed.threads"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=KIND,
        root_type=RootType.HOME,
        relative_path=".local/share/zed/threads",
        also_relative_paths=(
            "Library/Application Support/Zed/threads",
            "AppData/Local/Zed/threads",
            ".var/app/dev.zed.Zed/data/zed/threads",
        ),
        env_paths=(("XDG_DATA_HOME", "zed/threads"), ("LOCALAPPDATA", "Zed/threads")),
        file_patterns=("threads.db",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="zed/threads",
        adapter="telltale.sources.zed:ZedThreadsAdapter",
        description="Zed agent threads (SQLite, one JSON or zstd JSON row per thread)",
    ),
)

_LAZY = {"ZedThreadsAdapter": ".threads"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["CLIENT", "KIND", "SPECS", "ZedThreadsAdapter"]
