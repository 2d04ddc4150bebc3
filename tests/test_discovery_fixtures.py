"""Fixture trees (FIX-1..8): detection, fixture paths, and no host resolution."""

from __future__ import annotations

import ntpath
from pathlib import Path

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.discovery.fixtures import FIXTURE_MARKER, fixture_markers
from telltale.sources.registry import REGISTRY


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


#: One synthetic file per kind in the flattened fixture layout.
FIXTURE_FILES = {
    "claude.projects": "claude/projects/project-a/session-a.jsonl",
    "codex.sessions": "codex/sessions/2026/04/session-a.jsonl",
    "codex.archived_sessions": "codex/archived_sessions/session-b.jsonl",
    "codex.headless_sessions": "codex/headless/headless-a.jsonl",
    "qwen.projects": "qwen/projects/p/chats/session-a.jsonl",
    "openclaw.agents": "openclaw/agents/main/sessions/session-a.jsonl.deleted",
    "openclaw.sqlite": "openclaw/agents/main/agent/openclaw-agent.sqlite",
    "opencode.sqlite": "opencode/opencode.db",
    "copilot.process_log": "copilot/process-multi-session.log",
    "copilot.session_state": "copilot/session-state/s1/events.jsonl",
    "cursor.agent_transcripts": "cursor/projects/p/agent-transcripts/c1/c1.jsonl",
    "gemini.chats": "gemini/tmp/p/chats/session-a.jsonl",
    "gemini.legacy_chats": "gemini/tmp/p/chats/session-b.json",
    "gemini.logs": "gemini/tmp/p/logs.json",
    "kilo.sqlite": "kilo/xdg-data/kilo.db",
    "antigravity.history": "antigravity/cli/history.jsonl",
    "antigravity.conversations": "antigravity/conversations/c1.db",
    "antigravity.encrypted": "antigravity/encrypted/implicit/c1.pb",
    "cursor.ide_global": "cursor/User/globalStorage/state.vscdb",
    "cursor.ide_workspace": "cursor/User/workspaceStorage/0123abcd/state.vscdb",
    "cursor.cli_chats": "cursor/chats/0123abcd/c1/store.db",
    "aider.chat": "aider/projects/.aider.chat.history.md",
    "crush.sqlite": "crush/project/.crush/crush.db",
    "goose.sqlite": "goose/sessions/sessions.db",
    "goose.legacy": "goose/sessions/20250101_1.jsonl",
    "zed.threads": "zed/threads/threads.db",
    "amp.threads": "amp/threads/T-0001.json",
    "droid.sessions": "droid/sessions/-home-p/s1.jsonl",
    "droid.settings": "droid/sessions/-home-p/s1.settings.json",
    "windsurf.cascade": "windsurf/cascade/c1.pb",
    "trae.agent_db": "trae/ai-agent/database.db",
    "kiro.cli": "kiro/sessions/cli/s1.jsonl",
    "kiro.cli_sqlite": "kiro/kiro-cli/data.sqlite3",
    "kiro.ide_sessions": "kiro/kiro.kiroagent/workspace-sessions/d3M/s1.json",
    "kiro.ide_chats": "kiro/kiro.kiroagent/0a1b/c1.chat",
    "kiro.ide_executions": "kiro/kiro.kiroagent/0a1b/414d1636299d2b9e4ce7e17fb11f63e9/e1",
}


def test_FIX_5_markers_are_the_flattened_paths_except_data_home() -> None:
    assert set(fixture_markers(REGISTRY)) == {
        "claude/projects",
        "codex/sessions",
        "codex/archived_sessions",
        "codex/headless",
        "qwen/projects",
        "openclaw/agents",
        "copilot",
        "cline/tasks",
        "roo/tasks",
        "kilo-legacy/tasks",
        "continue/sessions",
        "continue/dev_data",
        "copilot/session-state",
        "cursor/projects",
        "gemini/tmp",
        "kilo/xdg-data",
        "antigravity/cli",
        "antigravity/conversations",
        "antigravity/encrypted",
        "cursor/User/globalStorage",
        "cursor/User/workspaceStorage",
        "cursor/chats",
        "aider/projects",
        "crush/project/.crush",
        "goose/sessions",
        "zed/threads",
        "amp/threads",
        "droid/sessions",
        "windsurf/cascade",
        "trae/ai-agent",
        "kiro/sessions/cli",
        "kiro/kiro.kiroagent/workspace-sessions",
        "kiro/kiro.kiroagent",
    }


@pytest.mark.parametrize("marker", sorted(set(fixture_markers(REGISTRY))))
def test_FIX_5_each_flattened_path_identifies_a_fixture_tree(tmp_path: Path, marker: str) -> None:
    tmp_path.joinpath(*marker.split("/")).mkdir(parents=True)
    result = discover(DiscoveryOptions(root=str(tmp_path), env={}, platform="linux"))
    assert result.fixture_tree is True


def test_FIX_1_2_full_fixture_tree_uses_fixture_paths(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for rel in FIXTURE_FILES.values():
        touch(tree, rel)
    # Host-style paths inside a fixture tree are not searched.
    touch(tree, ".claude/projects/p/host.jsonl")
    touch(tree, "opencode/opencode-beta.db")  # FIX-8: no channels in fixture layout
    result = discover(DiscoveryOptions(root=str(tree), env={}, platform="linux"))
    assert result.fixture_tree is True
    assert {s.kind: s.path for s in result.sources} == {k: str(tree / v) for k, v in FIXTURE_FILES.items()}
    assert {s.found_by for s in result.sources} == {"fixture"}
    assert result.errors == []


def test_FIX_1_no_host_resolution_in_fixture_mode(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    touch(tree, "codex/sessions/a.jsonl")
    host = tmp_path / "host"
    for rel in (
        "home/.claude/projects/p/h.jsonl",
        "cx/sessions/h.jsonl",
        "cfg/projects/p/h.jsonl",
        "xdg/opencode/opencode.db",
        "db/custom.db",
        "home/github/r/logs/copilot/h.log",
    ):
        touch(host, rel)
    env = {
        "HOME": str(host / "home"),
        "CODEX_HOME": str(host / "cx"),
        "CLAUDE_CONFIG_DIR": str(host / "cfg"),
        "XDG_DATA_HOME": str(host / "xdg"),
        "OPENCODE_DB": str(host / "db/custom.db"),
        "COPILOT_HOME": str(host / "home/.copilot"),
    }
    result = discover(DiscoveryOptions(root=str(tree), env=env, platform="linux"))
    assert [s.path for s in result.sources] == [str(tree / "codex/sessions/a.jsonl")]


def test_FIX_3_lone_opencode_db_is_not_a_fixture_tree(tmp_path: Path) -> None:
    db = touch(tmp_path, "opencode/opencode.db")
    result = discover(DiscoveryOptions(root=str(tmp_path), env={}, platform="linux"))
    assert result.fixture_tree is False
    # A real data home has this layout: the explicit root is searched as a data home.
    assert [(s.path, s.found_by) for s in result.sources] == [(str(db), "explicit_root")]


def test_FIX_4_empty_marker_makes_opencode_only_root_a_fixture(tmp_path: Path) -> None:
    db = touch(tmp_path, "opencode/opencode.db")
    touch(tmp_path, FIXTURE_MARKER)
    result = discover(DiscoveryOptions(root=str(tmp_path), env={}, platform="linux"))
    assert result.fixture_tree is True
    assert [(s.path, s.found_by) for s in result.sources] == [(str(db), "fixture")]
    assert result.store_roots[0].path == str(tmp_path / "opencode")


def test_FIX_4_non_empty_marker_does_not_count(tmp_path: Path) -> None:
    touch(tmp_path, "opencode/opencode.db")
    (tmp_path / FIXTURE_MARKER).write_text("x", encoding="utf-8")
    result = discover(DiscoveryOptions(root=str(tmp_path), env={}, platform="linux"))
    assert result.fixture_tree is False
    assert [e.reason for e in result.errors] == ["fixture_marker_not_empty"]


def test_FIX_4_linked_marker_and_marker_directory_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "empty").touch()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / FIXTURE_MARKER).symlink_to(tmp_path / "empty")
    (tmp_path / "b" / FIXTURE_MARKER).mkdir(parents=True)
    for name in ("a", "b"):
        result = discover(DiscoveryOptions(root=str(tmp_path / name), env={}, platform="linux"))
        assert result.fixture_tree is False


def test_FIX_5_linked_fixture_path_does_not_count(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "root/copilot").symlink_to(tmp_path / "real", target_is_directory=True)
    assert (
        discover(DiscoveryOptions(root=str(tmp_path / "root"), env={}, platform="linux")).fixture_tree
        is False
    )


def test_FIX_5_detection_ignores_client_selection(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    touch(tree, "claude/projects/p/a.jsonl")
    db = touch(tree, "opencode/opencode.db")
    result = discover(DiscoveryOptions(root=str(tree), env={}, platform="linux", clients=("opencode",)))
    assert result.fixture_tree is True
    assert [(s.path, s.found_by) for s in result.sources] == [(str(db), "fixture")]


@pytest.mark.parametrize("platform", ["linux", "darwin", "windows"])
def test_FIX_7_fixture_paths_are_the_same_on_every_platform(tmp_path: Path, platform: str) -> None:
    tree = tmp_path / "T" / "tree"
    for rel in FIXTURE_FILES.values():
        touch(tree, rel)
    if platform == "windows":
        root = "T:\\tree"

        def host(path: str) -> str:
            drive, rest = ntpath.splitdrive(path)
            return str(tmp_path.joinpath(drive.rstrip(":"), *[p for p in rest.split("\\") if p]))

        result = discover(DiscoveryOptions(root=root, env={}, platform=platform, host_path=host))
        relative = {s.kind: s.path[len(root) + 1 :].replace("\\", "/") for s in result.sources}
    else:
        result = discover(DiscoveryOptions(root=str(tree), env={}, platform=platform))
        relative = {s.kind: s.path[len(str(tree)) + 1 :] for s in result.sources}
    assert result.fixture_tree is True
    assert relative == FIXTURE_FILES
