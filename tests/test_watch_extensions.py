"""Watch path filtering for whole-file rewrite stores (Cline family, Continue)."""

from __future__ import annotations

from pathlib import Path

from extension_fixtures import continue_chat_session, native_era_api, ui_messages, write_continue, write_task
from telltale.discovery import DiscoveryOptions, discover
from telltale.watch.paths import ADDED, DELETED, MODIFIED, Action, PathFilter


def test_rewrites_target_the_task_file_and_new_tasks_rediscover(tmp_path: Path) -> None:
    home = tmp_path / "home"
    tasks = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    task = write_task(tasks, "1760534080239", api=native_era_api(), ui=ui_messages(), metadata={})
    write_continue(home / ".continue", [continue_chat_session()])
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux",
                                       clients=("cline", "continue")))
    flt = PathFilter(result.store_roots, {s.path: s.kind for s in result.sources}, result.pending_roots)
    api = str(task / "api_conversation_history.json")
    # fs.writeFile rewrites in place: a modification of a known source is a targeted scan.
    assert flt.classify(MODIFIED, api).action is Action.TARGETED
    assert flt.classify(MODIFIED, str(task / "ui_messages.json")).action is Action.TARGETED
    # Sidecars are read with their task's files, never scanned on their own.
    assert flt.classify(MODIFIED, str(task / "task_metadata.json")).action is Action.IGNORE
    # A new task (directory, then its files) and a deleted one: discover again.
    assert flt.classify(ADDED, str(tasks / "1760534099999")).action is Action.REDISCOVER
    assert flt.classify(ADDED, str(tasks / "1760534099999" / "ui_messages.json")).action is Action.REDISCOVER
    assert flt.classify(DELETED, api).action is Action.REDISCOVER
    # Continue: a new session file is discovered; the index is not a source.
    sessions = home / ".continue" / "sessions"
    assert flt.classify(ADDED, str(sessions / "new.json")).action is Action.REDISCOVER
    assert flt.classify(MODIFIED, str(sessions / "sessions.json")).action is Action.IGNORE
    # An editor whose extension store does not exist yet is waited for.
    cursor_store = home / ".config" / "Cursor" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    assert str(cursor_store) in result.pending_roots
    assert flt.classify(ADDED, str(home / ".config" / "Cursor")).action is Action.REDISCOVER
