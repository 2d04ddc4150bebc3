"""Cursor: agent transcripts, the IDE's ``state.vscdb`` databases and ``cursor-agent`` chats.

``SPECS`` declares the stores; each has its own adapter module (:mod:`.transcripts`, …).
Cursor's field and tool names live only in this package (formats-more.md §1).
"""

from __future__ import annotations

from telltale.sources.cursor.layout import CLI_CHATS_KIND, TRANSCRIPT_KIND
from telltale.sources.spec import RootType, SourceSpec, StoreLayout, UnsupportedReason

#: The IDE databases: ``<Cursor user dir>/globalStorage/state.vscdb`` and one per workspace.
GLOBAL_KIND = "cursor.ide_global"
WORKSPACE_KIND = "cursor.ide_workspace"

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
    SourceSpec(
        client="cursor",
        kind=GLOBAL_KIND,
        root_type=RootType.EDITOR_USER,
        editors=("cursor",),
        relative_path="globalStorage",
        file_patterns=("state.vscdb",),
        recursive=False,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="cursor/User/globalStorage",
        adapter="telltale.sources.cursor.ide:CursorGlobalAdapter",
        description="Cursor IDE global database (composers and bubbles in cursorDiskKV, older chat panel)",
    ),
    SourceSpec(
        client="cursor",
        kind=WORKSPACE_KIND,
        root_type=RootType.EDITOR_USER,
        editors=("cursor",),
        relative_path="workspaceStorage",
        file_patterns=("state.vscdb",),
        recursive=True,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="cursor/User/workspaceStorage",
        adapter="telltale.sources.cursor.ide:CursorWorkspaceAdapter",
        description="Cursor IDE workspace databases (composer-to-folder links, older chat panel)",
    ),
    SourceSpec(
        client="cursor",
        kind=CLI_CHATS_KIND,
        root_type=RootType.HOME,
        relative_path=".cursor/chats",
        file_patterns=("store.db",),
        recursive=True,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="cursor/chats",
        adapter="",
        unsupported=UnsupportedReason.UNKNOWN_FORMAT,
        description="cursor-agent CLI chats (content-addressed protobuf blobs; no public sample to verify a decoder)",
    ),
)

__all__ = ["SPECS"]
