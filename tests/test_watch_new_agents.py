"""Watch decisions for the Gemini CLI, Antigravity and Kilo stores, from a real discovery."""

from __future__ import annotations

import shutil
from pathlib import Path

from telltale.discovery import DiscoveryOptions, discover
from telltale.watch.paths import ADDED, MODIFIED, Action, PathFilter

FIXTURES = Path(__file__).parent / "fixtures" / "session_stores"


def _filter(home: Path, client: str) -> PathFilter:
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux", clients=(client,)))
    return PathFilter(result.store_roots, {s.path: s.kind for s in result.sources}, result.pending_roots)


def test_gemini_session_appends_are_targeted_new_sessions_rediscovered(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "gemini", tmp_path / ".gemini")
    flt = _filter(tmp_path, "gemini")
    chats = tmp_path / ".gemini" / "tmp" / "shop" / "chats"
    known = chats / "session-2026-11-20T10-00-5f0e7c1a.jsonl"
    assert flt.classify(MODIFIED, str(known)).action is Action.TARGETED
    assert flt.classify(ADDED, str(chats / "session-2026-11-21T09-00-aaaaaaaa.jsonl")).action is Action.REDISCOVER
    assert flt.classify(MODIFIED, str(tmp_path / ".gemini" / "oauth_creds.json")).action is Action.IGNORE


def test_gemini_store_not_there_yet_is_pending(tmp_path: Path) -> None:
    flt = _filter(tmp_path, "gemini")
    assert flt.classify(ADDED, str(tmp_path / ".gemini")).action is Action.REDISCOVER


def test_kilo_wal_targets_its_database_and_auth_is_ignored(tmp_path: Path) -> None:
    store = tmp_path / ".local" / "share" / "kilo"
    store.mkdir(parents=True)
    shutil.copy(FIXTURES / "kilo" / "xdg-data" / "kilo.db", store / "kilo.db")
    flt = _filter(tmp_path, "kilo")
    wal = flt.classify(MODIFIED, str(store / "kilo.db-wal"))
    assert (wal.action, wal.path) == (Action.TARGETED, str(store / "kilo.db"))
    assert flt.classify(MODIFIED, str(store / "kilo.db-shm")).action is Action.IGNORE
    assert flt.classify(MODIFIED, str(store / "auth.json")).action is Action.IGNORE


def test_antigravity_prompt_log_is_targeted(tmp_path: Path) -> None:
    cli = tmp_path / ".gemini" / "antigravity-cli"
    cli.mkdir(parents=True)
    (cli / "history.jsonl").write_text('{"display": "x", "timestamp": 1}\n')
    flt = _filter(tmp_path, "antigravity")
    assert flt.classify(MODIFIED, str(cli / "history.jsonl")).action is Action.TARGETED
