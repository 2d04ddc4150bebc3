"""Cursor: agent transcripts, the IDE's ``state.vscdb`` databases and ``cursor-agent`` chats.

``SPECS`` declares the stores; each has its own adapter module (:mod:`.transcripts`, …).
Cursor's field and tool names live only in this package (formats-more.md §1).
"""

from __future__ import annotations

from telltale.sources.cursor.layout import TRANSCRIPT_KIND
from telltale.sources.spec import RootType, SourceSpec

SPECS = (
    SourceSpec(
        client="cursor",
        kind=TRANSCRIPT_KIND,
        root_type=RootType.HOME,
        relative_path=".cursor/projects",
        file_patterns=("*.jsonl", "*.txt"),
        recursive=True,
        fixture_relative_path="cursor/projects",
        adapter="telltale.sources.cursor.transcripts:CursorTranscriptAdapter",
        description="Cursor agent transcripts (IDE agent and cursor-agent)",
    ),
)

__all__ = ["SPECS"]
