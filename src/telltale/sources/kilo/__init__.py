"""Kilo Code (2026 rebuild on an OpenCode core): ``kilo.db`` in Kilo's data directory.

Kilo's CLI and its VS Code extension since the rebuild (public beta 2026-03-10) write the
OpenCode SQLite schema to ``$XDG_DATA_HOME/kilo/kilo.db``, else ``~/.local/share/kilo/kilo.db``
(the XDG directory on every platform, as OpenCode's core does; the platform data
directories ``~/Library/Application Support/kilo`` and ``%LOCALAPPDATA%\\kilo`` are searched
too). The OpenCode adapter reads it with Kilo's brand: client ``kilo`` (shared with the
legacy Cline-style ``kilocode.kilo-code`` task folders, another kind of the same client),
source kind ``kilo.sqlite``, ids ``kilo:<session id>``. ``auth.json`` beside it is never a
source and never opened. See docs/sources/kilo.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

CLIENT = "kilo"
KIND = "kilo.sqlite"
DB_NAME = "kilo.db"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=KIND,
        root_type=RootType.HOME,
        relative_path=".local/share/kilo",
        also_relative_paths=("Library/Application Support/kilo", "AppData/Local/kilo"),
        file_patterns=(DB_NAME,),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="kilo/xdg-data",
        # Kilo's OpenCode core keeps its data in the XDG data directory on every platform.
        env_paths=(("XDG_DATA_HOME", "kilo"),),
        adapter="telltale.sources.kilo:KiloAdapter",
        description="Kilo Code SQLite store (OpenCode schema, kilo.db)",
    ),
)

_LAZY = {"BRAND": ".adapter", "KiloAdapter": ".adapter"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["BRAND", "CLIENT", "KIND", "SPECS", "KiloAdapter"]
