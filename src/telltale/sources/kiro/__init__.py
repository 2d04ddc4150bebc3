"""Kiro (AWS): the IDE's agent stores and the ``kiro-cli`` sessions.

* ``kiro.cli``: ``~/.kiro/sessions/cli/<id>.jsonl`` (+ ``<id>.json`` metadata), appended
  one record per line (:mod:`.cli`).
* ``kiro.cli_sqlite``: the older ``kiro-cli/data.sqlite3`` in the data folder (the format
  inherited from Amazon Q Developer CLI): one ``conversations_v2`` row per conversation,
  rewritten whole (:mod:`.cli_sqlite`).
* ``kiro.ide_sessions``, ``kiro.ide_chats``, ``kiro.ide_executions``: JSON documents below
  Kiro's ``User/globalStorage/kiro.kiroagent`` (found through the shared editor-root
  helper: Linux ``~/.config/Kiro``, macOS ``~/Library/Application Support/Kiro``,
  Windows ``%APPDATA%\\Kiro``, and the remote-server layout), rewritten whole
  (:mod:`.ide`).

No real sample was available: shapes come from public third-party parsers
(docs/sources/kiro.md).
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

CLIENT = "kiro"
CLI_KIND = "kiro.cli"
SQLITE_KIND = "kiro.cli_sqlite"
SESSIONS_KIND = "kiro.ide_sessions"
CHATS_KIND = "kiro.ide_chats"
EXECUTIONS_KIND = "kiro.ide_executions"
#: The extension's storage folder below an editor's ``User`` directory.
_STORAGE = "globalStorage/kiro.kiroagent"
#: The folder the IDE keeps execution logs in below a workspace folder (a fixed hash).
EXECUTION_DIR = "414d1636299d2b9e4ce7e17fb11f63e9"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=CLI_KIND,
        root_type=RootType.HOME,
        relative_path=".kiro/sessions/cli",
        file_patterns=("*.jsonl",),
        recursive=False,
        fixture_relative_path="kiro/sessions/cli",
        adapter="telltale.sources.kiro:KiroCliAdapter",
        description="Kiro CLI session logs (~/.kiro/sessions/cli/<id>.jsonl)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=SQLITE_KIND,
        root_type=RootType.DATA_HOME,
        relative_path="kiro-cli",
        file_patterns=("data.sqlite3",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="kiro/kiro-cli",
        adapter="telltale.sources.kiro:KiroSqliteAdapter",
        description="Kiro CLI conversations, older builds (data.sqlite3, conversations_v2)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=SESSIONS_KIND,
        root_type=RootType.EDITOR_USER,
        relative_path=f"{_STORAGE}/workspace-sessions",
        file_patterns=("*.json",),
        exclude_patterns=("sessions.json",),
        recursive=True,
        editors=("kiro",),
        fixture_relative_path="kiro/kiro.kiroagent/workspace-sessions",
        adapter="telltale.sources.kiro:KiroIdeSessionAdapter",
        description="Kiro IDE agent sessions (workspace-sessions/<workspace>/<id>.json)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=CHATS_KIND,
        root_type=RootType.EDITOR_USER,
        relative_path=_STORAGE,
        file_patterns=("*.chat",),
        recursive=True,
        editors=("kiro",),
        fixture_relative_path="kiro/kiro.kiroagent",
        adapter="telltale.sources.kiro:KiroIdeChatAdapter",
        description="Kiro IDE chat files, older builds (<workspace hash>/<id>.chat)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=EXECUTIONS_KIND,
        root_type=RootType.EDITOR_USER,
        relative_path=_STORAGE,
        file_patterns=("*",),
        exclude_patterns=(".*",),
        parent_dir=EXECUTION_DIR,
        recursive=True,
        editors=("kiro",),
        fixture_relative_path="kiro/kiro.kiroagent",
        adapter="telltale.sources.kiro:KiroIdeExecutionAdapter",
        description="Kiro IDE execution logs (the agent's actions: file edits, reads, messages)",
    ),
)

_LAZY = {
    "KiroCliAdapter": ".cli",
    "KiroSqliteAdapter": ".cli_sqlite",
    "KiroIdeChatAdapter": ".ide",
    "KiroIdeExecutionAdapter": ".ide",
    "KiroIdeSessionAdapter": ".ide",
}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = [
    "CLIENT", "SPECS", "KiroCliAdapter", "KiroIdeChatAdapter", "KiroIdeExecutionAdapter", "KiroIdeSessionAdapter",
    "KiroSqliteAdapter",
]
