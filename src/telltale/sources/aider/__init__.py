"""Aider: the Markdown chat history it appends in each project's git root.

There is no global store: aider writes ``.aider.chat.history.md`` (and
``.aider.input.history``, optionally ``.aider.llm.history``) in the root of the repository
it runs in, so the files are found below the project roots (``--project-config``,
``TELLTALE_PROJECT_CONFIG``, ``~/github`` and ``~/projects``; the root and two levels of
workspaces below it). ``aider.chat`` reads the chat history (:mod:`.chat`); the vendor's
line shapes live in :mod:`.markdown`. A history committed to the repository (possibly
someone else's, cloned) is marked ``project_store: tracked`` (:mod:`telltale.sources._project_local`).
See docs/sources/aider.md.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec

CHAT_FILE = ".aider.chat.history.md"

SPECS = (
    SourceSpec(
        client="aider",
        kind="aider.chat",
        root_type=RootType.PROJECT_LOCAL,
        relative_path="",
        file_patterns=(CHAT_FILE,),
        recursive=False,
        fixture_relative_path="aider/projects",
        adapter="telltale.sources.aider:AiderChatAdapter",
        description="Aider chat history (.aider.chat.history.md in a project's git root)",
    ),
)


_LAZY = {"AiderChatAdapter": ".chat"}


def __getattr__(name: str) -> Any:
    return export(__name__, name, _LAZY)


__all__ = ["SPECS", "AiderChatAdapter"]
