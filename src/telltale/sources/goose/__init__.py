"""Goose (block): the SQLite session store and the legacy per-session JSONL files.

Goose keeps its data in ``~/.local/share/goose`` on Linux *and* macOS (the XDG layout,
``$XDG_DATA_HOME/goose`` when set) and in ``%APPDATA%\\Block\\goose\\data`` on Windows;
``$GOOSE_PATH_ROOT`` re-roots it to ``$GOOSE_PATH_ROOT/data``. Sessions live in
``sessions/sessions.db`` (:mod:`.sessions_db`), older builds wrote ``sessions/<id>.jsonl``
(:mod:`.legacy`). Content blocks are in :mod:`.wire`, tool facets in :mod:`.tools`. A
``GOOSE_SESSION_STORAGE=mongodb`` install keeps sessions off this host: nothing to read.
See docs/sources/goose.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

SESSIONS = ".local/share/goose/sessions"
WINDOWS_SESSIONS = "AppData/Roaming/Block/goose/data/sessions"
#: Variables that move the store (searched in addition to the home-relative directories).
ENV_PATHS = (
    ("XDG_DATA_HOME", "goose/sessions"),
    ("APPDATA", "Block/goose/data/sessions"),
    ("GOOSE_PATH_ROOT", "data/sessions"),
)


SPECS = (
    SourceSpec(
        client="goose",
        kind="goose.sqlite",
        root_type=RootType.HOME,
        relative_path=SESSIONS,
        also_relative_paths=(WINDOWS_SESSIONS,),
        file_patterns=("sessions.db",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="goose/sessions",
        adapter="telltale.sources.goose:GooseSessionsAdapter",
        env_paths=ENV_PATHS,
        description="Goose SQLite session store (sessions/sessions.db)",
    ),
    SourceSpec(
        client="goose",
        kind="goose.legacy",
        root_type=RootType.HOME,
        relative_path=SESSIONS,
        also_relative_paths=(WINDOWS_SESSIONS,),
        file_patterns=("*.jsonl",),
        recursive=False,
        fixture_relative_path="goose/sessions",
        adapter="telltale.sources.goose:GooseLegacyAdapter",
        env_paths=ENV_PATHS,
        description="Goose legacy per-session JSONL (read only where no sessions.db replaced them)",
    ),
)


_LAZY = {"GooseLegacyAdapter": ".legacy", "GooseSessionsAdapter": ".sessions_db"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["ENV_PATHS", "SPECS", "GooseLegacyAdapter", "GooseSessionsAdapter"]
