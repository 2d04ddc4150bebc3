"""Watch decisions for the Aider, Crush and Goose stores, from a real discovery."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_aider
import build_crush
import build_goose

from telltale.discovery import DiscoveryOptions, discover
from telltale.watch.paths import ADDED, MODIFIED, Action, PathFilter


def _filter(home: Path, client: str) -> PathFilter:
    result = discover(DiscoveryOptions(env={"HOME": str(home)}, platform="linux", clients=(client,)))
    return PathFilter(result.store_roots, {s.path: s.kind for s in result.sources}, result.pending_roots)


def test_an_aider_history_is_targeted_and_the_rest_of_the_project_ignored(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "app"
    chat = build_aider.write_project(project, build_aider.run_start())
    flt = _filter(tmp_path, "aider")
    assert flt.classify(MODIFIED, str(chat)).action is Action.TARGETED
    assert flt.classify(MODIFIED, str(project / "src.py")).action is Action.IGNORE
    assert flt.classify(MODIFIED, str(project / ".aider.input.history")).action is Action.IGNORE


def test_a_crush_wal_targets_its_database_and_its_shm_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "projects" / "app" / ".crush" / "crush.db"
    build_crush.CrushDb(db, wal=False).close()
    flt = _filter(tmp_path, "crush")
    wal = flt.classify(MODIFIED, str(db) + "-wal")
    assert (wal.action, wal.path) == (Action.TARGETED, str(db))
    assert flt.classify(MODIFIED, str(db) + "-shm").action is Action.IGNORE
    assert flt.classify(MODIFIED, str(db.parent / "crush.json")).action is Action.IGNORE


def test_a_goose_wal_targets_sessions_db_and_a_new_legacy_file_is_rediscovered(tmp_path: Path) -> None:
    db = tmp_path / ".local" / "share" / "goose" / "sessions" / "sessions.db"
    build_goose.GooseDb(db, wal=False).close()
    flt = _filter(tmp_path, "goose")
    wal = flt.classify(MODIFIED, str(db) + "-wal")
    assert (wal.action, wal.path) == (Action.TARGETED, str(db))
    assert flt.classify(ADDED, str(db.parent / "20250101_1.jsonl")).action is Action.REDISCOVER


def test_a_goose_store_not_there_yet_is_pending(tmp_path: Path) -> None:
    flt = _filter(tmp_path, "goose")
    assert flt.classify(ADDED, str(tmp_path / ".local" / "share" / "goose")).action is Action.REDISCOVER
