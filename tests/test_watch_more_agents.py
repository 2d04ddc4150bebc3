"""Watch decisions for the Zed, Amp, Factory Droid and Kiro stores, from a real discovery:
a change to a known store is a targeted scan, a new store is discovered, sidecars that
are not sources are ignored, and a store not there yet is waited for."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from telltale.discovery import DiscoveryOptions, discover
from telltale.watch.paths import ADDED, MODIFIED, Action, PathFilter


def _filter(home: Path, *clients: str) -> tuple[PathFilter, list[str]]:
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux", clients=clients))
    flt = PathFilter(result.store_roots, {s.path: s.kind for s in result.sources}, result.pending_roots)
    return flt, result.pending_roots


def test_zed_row_rewrites_target_the_database(tmp_path: Path) -> None:
    store = tmp_path / ".local" / "share" / "zed" / "threads"
    store.mkdir(parents=True)
    with sqlite3.connect(store / "threads.db") as conn:
        conn.execute("CREATE TABLE threads (id TEXT, summary TEXT, updated_at TEXT, data_type TEXT, data BLOB)")
    conn.close()
    flt, _ = _filter(tmp_path, "zed")
    assert flt.classify(MODIFIED, str(store / "threads.db")).action is Action.TARGETED
    # Zed's journal mode is delete: a commit rewrites the database itself (targeted
    # above); the transient -journal is ignored. In WAL mode the -wal targets the database.
    assert flt.classify(MODIFIED, str(store / "threads.db-journal")).action is Action.IGNORE
    wal = flt.classify(MODIFIED, str(store / "threads.db-wal"))
    assert (wal.action, wal.path) == (Action.TARGETED, str(store / "threads.db"))


def test_amp_thread_rewrites_targeted_new_threads_discovered(tmp_path: Path) -> None:
    store = tmp_path / ".local" / "share" / "amp" / "threads"
    store.mkdir(parents=True)
    (store / "T-1.json").write_text(json.dumps({"id": "T-1", "messages": []}))
    flt, _ = _filter(tmp_path, "amp")
    assert flt.classify(MODIFIED, str(store / "T-1.json")).action is Action.TARGETED
    assert flt.classify(ADDED, str(store / "T-2.json")).action is Action.REDISCOVER


def test_droid_appends_targeted_and_settings_are_their_own_source(tmp_path: Path) -> None:
    folder = tmp_path / ".factory" / "sessions" / "-home-dev-p"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_text("{}\n")
    (folder / "s1.settings.json").write_text("{}")
    flt, _ = _filter(tmp_path, "droid")
    assert flt.classify(MODIFIED, str(folder / "s1.jsonl")).action is Action.TARGETED
    assert flt.classify(MODIFIED, str(folder / "s1.settings.json")).action is Action.TARGETED
    assert flt.classify(ADDED, str(folder / "s2.jsonl")).action is Action.REDISCOVER
    assert flt.classify(MODIFIED, str(tmp_path / ".factory" / "settings.json")).action is Action.IGNORE


def test_kiro_cli_and_ide_stores(tmp_path: Path) -> None:
    cli = tmp_path / ".kiro" / "sessions" / "cli"
    cli.mkdir(parents=True)
    (cli / "s1.jsonl").write_text("{}\n")
    (cli / "s1.json").write_text("{}")
    ws = tmp_path / ".config" / "Kiro" / "User" / "globalStorage" / "kiro.kiroagent" / "workspace-sessions" / "d3M"
    ws.mkdir(parents=True)
    (ws / "s1.json").write_text(json.dumps({"sessionId": "s1", "history": []}))
    (ws / "sessions.json").write_text("[]")
    flt, pending = _filter(tmp_path, "kiro")
    assert flt.classify(MODIFIED, str(cli / "s1.jsonl")).action is Action.TARGETED
    assert flt.classify(MODIFIED, str(cli / "s1.json")).action is Action.IGNORE  # metadata, read with its log
    assert flt.classify(MODIFIED, str(ws / "s1.json")).action is Action.TARGETED
    assert flt.classify(MODIFIED, str(ws / "sessions.json")).action is Action.IGNORE
    assert flt.classify(ADDED, str(ws / "s2.json")).action is Action.REDISCOVER
    # The older SQLite store is not there yet: its folder is waited for.
    assert str(tmp_path / ".local" / "share" / "kiro-cli") in pending
