"""``discover()`` as the pipeline and watch call it: selection, modes, result shape."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from telltale.discovery import DiscoveryOptions, DiscoveryResult, StoreRoot, discover
from telltale.errors import DiscoveryError, UsageError


def touch(base: Path, relative: str) -> Path:
    path = base.joinpath(*relative.split("/"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for rel in (
        ".claude/projects/p/a.jsonl",
        ".codex/sessions/s.jsonl",
        ".codex/archived_sessions/x.jsonl",
        ".local/share/opencode/opencode.db",
    ):
        touch(home, rel)
    return home


def kinds(result: DiscoveryResult) -> list[str]:
    return [s.kind for s in result.sources]


def test_REG_1_select_by_client_and_kind(home: Path) -> None:
    env = {"HOME": str(home)}
    assert kinds(discover(DiscoveryOptions(env=env, clients=("codex",)))) == [
        "codex.archived_sessions",
        "codex.sessions",
    ]
    assert kinds(discover(DiscoveryOptions(env=env, clients=("codex.sessions", "opencode")))) == [
        "codex.sessions",
        "opencode.sqlite",
    ]
    assert len(discover(DiscoveryOptions(env=env)).sources) == 4


def test_REG_1_unknown_client_is_a_usage_error(home: Path) -> None:
    with pytest.raises(UsageError, match="unknown client nope"):
        discover(DiscoveryOptions(env={"HOME": str(home)}, clients=("nope",)))


def test_REG_4_discovery_result_shape_and_encoding(home: Path) -> None:
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux"))
    assert result.fixture_tree is False
    assert result.errors == []
    assert [r.path for r in result.store_roots] == sorted(r.path for r in result.store_roots)
    assert StoreRoot(path=str(home / ".claude/projects"), recursive=True, kinds=("claude.projects",)) in (
        result.store_roots
    )
    # The result is a msgspec Struct the pipeline can persist or log.
    decoded = msgspec.json.decode(msgspec.json.encode(result), type=DiscoveryResult)
    assert decoded == result


def test_CAND_2_explicit_root_invalid(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    result = discover(DiscoveryOptions(root=str(missing), env={}))
    assert result.sources == []
    assert [(e.reason, e.path) for e in result.errors] == [("invalid_root", str(missing))]
    touch(tmp_path, "file")
    assert discover(DiscoveryOptions(root=str(tmp_path / "file"), env={})).errors[0].reason == "invalid_root"
    with pytest.raises(DiscoveryError, match="invalid_root"):
        discover(DiscoveryOptions(root=str(missing), env={}, bounded=True))
    with pytest.raises(UsageError):
        discover(DiscoveryOptions(root="", env={}))


def test_CAND_2_relative_explicit_root_is_made_absolute(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(home.parent)
    result = discover(DiscoveryOptions(root="home", env={}, clients=("claude",)))
    assert [s.path for s in result.sources] == [str(home / ".claude/projects/p/a.jsonl")]


def test_OC_DISC_30_bounded_and_best_effort_agree_on_healthy_trees(home: Path) -> None:
    env = {"HOME": str(home)}
    assert discover(DiscoveryOptions(env=env, bounded=True)) == discover(DiscoveryOptions(env=env))


def test_discovery_uses_os_environ_by_default(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "OPENCODE_DB", "COPILOT_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TELLTALE_PROJECT_CONFIG", raising=False)
    result = discover(DiscoveryOptions(platform="linux"))
    assert len(result.sources) == 4


def test_every_missing_store_directory_is_a_pending_root(tmp_path: Path) -> None:
    # Regression: only the last missing directory was kept (a stale loop variable).
    home = tmp_path / "home"
    home.mkdir()
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux", clients=("claude", "codex")))
    assert str(home / ".claude" / "projects") in result.pending_roots
    assert str(home / ".codex" / "sessions") in result.pending_roots
    assert str(home / ".codex" / "archived_sessions") in result.pending_roots
