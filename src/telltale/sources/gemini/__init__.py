"""Gemini CLI: ``~/.gemini/tmp/<project>/`` (``$GEMINI_CLI_HOME/.gemini`` when set).

Three kinds, all below the per-project temp directories (``<project>`` is a slug from
``~/.gemini/projects.json`` or, in older builds, the project path's SHA-256):

* ``gemini.chats``: ``chats/session-*.jsonl`` and subagent ``chats/<parent id>/<id>.jsonl``
  (:mod:`.chats`; re-appended records settled once, see :mod:`.settle`);
* ``gemini.legacy_chats``: ``chats/session-*.json`` written whole before the JSONL log;
* ``gemini.logs``: ``logs.json``, the prompts as typed (:mod:`.documents`).

``checkpoint-*.json`` (``/chat save``), ``tool-outputs/``, ``oauth_creds.json`` and the
other credential files are never sources. See docs/sources/gemini.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.gemini.layout import CHATS_KIND, LEGACY_KIND, LOGS_KIND
from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

CLIENT = "gemini"
_TMP = ".gemini/tmp"
#: The variable that moves the whole ``.gemini`` folder (it names the *home* that holds it,
#: gemini-cli's paths.ts).
HOME_ENV = "GEMINI_CLI_HOME"

SPECS = (
    SourceSpec(
        client=CLIENT,
        kind=CHATS_KIND,
        root_type=RootType.HOME,
        relative_path=_TMP,
        file_patterns=("*.jsonl",),
        recursive=True,
        fixture_relative_path="gemini/tmp",
        env_paths=((HOME_ENV, _TMP),),
        adapter="telltale.sources.gemini:GeminiChatsAdapter",
        description="Gemini CLI session logs (chats/session-*.jsonl, subagent chats)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=LEGACY_KIND,
        root_type=RootType.HOME,
        relative_path=_TMP,
        file_patterns=("session-*.json",),
        parent_dir="chats",
        recursive=True,
        fixture_relative_path="gemini/tmp",
        env_paths=((HOME_ENV, _TMP),),
        adapter="telltale.sources.gemini:GeminiLegacyChatsAdapter",
        description="Gemini CLI whole-file sessions (chats/session-*.json, before the JSONL log)",
    ),
    SourceSpec(
        client=CLIENT,
        kind=LOGS_KIND,
        root_type=RootType.HOME,
        relative_path=_TMP,
        file_patterns=("logs.json",),
        recursive=True,
        fixture_relative_path="gemini/tmp",
        env_paths=((HOME_ENV, _TMP),),
        adapter="telltale.sources.gemini:GeminiLogsAdapter",
        description="Gemini CLI prompt logs (tmp/<project>/logs.json)",
    ),
)


_LAZY = {"GeminiChatsAdapter": ".chats", "GeminiLegacyChatsAdapter": ".documents", "GeminiLogsAdapter": ".documents"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)

__all__ = ["CLIENT", "HOME_ENV", "SPECS", "GeminiChatsAdapter", "GeminiLegacyChatsAdapter",
           "GeminiLogsAdapter"]
