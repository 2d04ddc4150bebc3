"""Factory Droid: ``~/.factory/sessions/<cwd slug>/<session id>.jsonl`` and its settings.

The CLI appends one JSON record per line (``session_start``, ``message``, ``todo_state``,
``compaction_state``); messages are Anthropic-style content blocks, tool calls and
results linked by ``tool_use.id`` / ``tool_result.tool_use_id`` (:mod:`.sessions`).
Token counts are only in ``<session id>.settings.json`` next to it, a per-session total
rewritten as the session runs (:mod:`.settings`). ``FACTORY_HOME`` is not documented;
the ``.factory`` folder sits in the home directory on every platform. No real sample was
available: shapes come from public third-party parsers (docs/sources/droid.md).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

CLIENT = "droid"
SESSIONS_KIND = "droid.sessions"
SETTINGS_KIND = "droid.settings"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=SESSIONS_KIND,
        root_type=RootType.HOME,
        relative_path=".factory/sessions",
        file_patterns=("*.jsonl",),
        recursive=True,
        fixture_relative_path="droid/sessions",
        adapter="telltale.sources.droid:DroidSessionAdapter",
        description="Factory Droid session transcripts (~/.factory/sessions/<slug>/<id>.jsonl)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=SETTINGS_KIND,
        root_type=RootType.HOME,
        relative_path=".factory/sessions",
        file_patterns=("*.settings.json",),
        recursive=True,
        fixture_relative_path="droid/sessions",
        adapter="telltale.sources.droid:DroidSettingsAdapter",
        description="Factory Droid per-session model and token totals (<id>.settings.json)",
    ),
)

_LAZY = {"DroidSessionAdapter": ".sessions", "DroidSettingsAdapter": ".settings"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["CLIENT", "SESSIONS_KIND", "SETTINGS_KIND", "SPECS", "DroidSessionAdapter", "DroidSettingsAdapter"]
