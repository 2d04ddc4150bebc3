"""Watch decisions for Cursor's stores, from path names alone."""

from __future__ import annotations

from telltale.discovery.api import StoreRoot
from telltale.watch.paths import ADDED, MODIFIED, Action, Decision, PathFilter

PROJECTS = "/h/.cursor/projects"
GLOBAL = "/h/.config/Cursor/User/globalStorage"
WORKSPACES = "/h/.config/Cursor/User/workspaceStorage"
CHAT = f"{PROJECTS}/Users-me-app/agent-transcripts/c1/c1.jsonl"

FILTER = PathFilter(
    [StoreRoot(path=PROJECTS, recursive=True, kinds=("cursor.agent_transcripts",)),
     StoreRoot(path=GLOBAL, recursive=False, kinds=("cursor.ide_global",)),
     StoreRoot(path=WORKSPACES, recursive=True, kinds=("cursor.ide_workspace",))],
    {CHAT: "cursor.agent_transcripts", f"{GLOBAL}/state.vscdb": "cursor.ide_global",
     f"{WORKSPACES}/ab12/state.vscdb": "cursor.ide_workspace"},
)


def test_transcript_append_is_targeted_and_a_new_one_rediscovers() -> None:
    assert FILTER.classify(MODIFIED, CHAT) == Decision(Action.TARGETED, CHAT)
    new = f"{PROJECTS}/Users-me-app/agent-transcripts/c2/c2.jsonl"
    assert FILTER.classify(ADDED, new).action is Action.REDISCOVER


def test_ide_wal_writes_target_their_database_and_shm_is_ignored() -> None:
    assert FILTER.classify(MODIFIED, f"{GLOBAL}/state.vscdb-wal") == Decision(Action.TARGETED, f"{GLOBAL}/state.vscdb")
    assert FILTER.classify(MODIFIED, f"{GLOBAL}/state.vscdb-shm").action is Action.IGNORE
    assert FILTER.classify(MODIFIED, f"{WORKSPACES}/ab12/state.vscdb-wal") == Decision(
        Action.TARGETED, f"{WORKSPACES}/ab12/state.vscdb")
    assert FILTER.classify(ADDED, f"{WORKSPACES}/cd34/state.vscdb").action is Action.REDISCOVER
    assert FILTER.classify(MODIFIED, f"{GLOBAL}/storage.json").action is Action.IGNORE
