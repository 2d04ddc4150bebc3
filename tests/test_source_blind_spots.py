"""Visible blind spots: stores Telltale finds but cannot read are listed, counted and
reported as ``unsupported`` with a reason, never opened, and reported once.

* encrypted at rest, declared by spec: Windsurf Cascade ``.pb``, Trae's agent database
  (Antigravity's ``.pb`` files are covered in test_source_antigravity.py);
* an unknown layout recognised by content: a Zed ``threads.db`` or a Kiro
  ``data.sqlite3`` without the tables and columns those agents write (``unknown_format``);
* a missing decoder: Zed rows compressed with zstd when ``zstandard`` cannot be
  imported (``no_decoder``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from more_agents import tree_digest
from scan_helpers import open_audit, opened, read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover
from telltale.pipeline import Scanner, ScanOptions


def make_home(home: Path) -> dict[str, Path]:
    files = {
        "cascade": home / ".codeium" / "windsurf" / "cascade" / "6b1c9d1e-0000-4000-8000-00000000c001.pb",
        "memory": home / ".codeium" / "windsurf" / "memories" / "0f00.pb",
        "trae": home / ".config" / "Trae" / "ModularData" / "ai-agent" / "database.db",
        "zed": home / ".local" / "share" / "zed" / "threads" / "threads.db",
        "kiro": home / ".local" / "share" / "kiro-cli" / "data.sqlite3",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    files["cascade"].write_bytes(os.urandom(700))
    files["memory"].write_bytes(os.urandom(64))
    files["trae"].write_bytes(os.urandom(4096))  # no SQLite header: encrypted
    for name, table in (("zed", "CREATE TABLE threads (id TEXT, payload BLOB)"),
                        ("kiro", "CREATE TABLE conversations (id TEXT)")):
        with sqlite3.connect(files[name]) as conn:
            conn.execute(table)
        conn.close()
    (home / ".codeium" / "windsurf" / "memories" / "global_rules.md").write_text("be nice\n")
    return files


def test_sources_lists_each_blind_spot_with_reason_hash_size_mtime(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    proc = run_cli(["sources", "--json", "--client", "windsurf", "--client", "trae"], tmp_path, check=False)
    assert proc.returncode == 1  # nothing readable among these clients
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    by_path = {r["path"]: r for r in records if r["type"] == "source"}
    assert set(by_path) == {str(files["cascade"]), str(files["memory"]), str(files["trae"])}
    for name, client in (("cascade", "windsurf"), ("memory", "windsurf"), ("trae", "trae")):
        record = by_path[str(files[name])]
        assert (record["client"], record["status"], record["reason"]) == (client, "unsupported", "encrypted")
        assert record["size"] == files[name].stat().st_size and record["mtime"].endswith("Z")
        assert len(record["path_hash"]) == 16


def test_discovery_of_encrypted_stores_per_platform(tmp_path: Path) -> None:
    mac = tmp_path / "m"
    trae = mac / "Library" / "Application Support" / "Trae CN" / "ModularData" / "ai-agent" / "database.db"
    trae.parent.mkdir(parents=True)
    trae.write_bytes(b"\x00" * 32)
    cascade = mac / ".codeium" / "windsurf-next" / "cascade" / "a.pb"
    cascade.parent.mkdir(parents=True)
    cascade.write_bytes(b"\x01" * 32)
    found = discover(DiscoveryOptions(env={"HOME": str(mac)}, platform="darwin", clients=("trae", "windsurf")))
    assert {(s.kind, s.path) for s in found.sources} == {("trae.agent_db", str(trae)),
                                                          ("windsurf.cascade", str(cascade))}


def test_scan_reports_each_blind_spot_once_never_opening_encrypted_files(tmp_path: Path) -> None:
    files = make_home(tmp_path)
    before = tree_digest(tmp_path)
    out = tmp_path / "out"
    log = out / "events.jsonl"
    args = ["scan", "--once", "--root", str(tmp_path), "--log-path", str(log), "--state-path",
            str(out / "state.sqlite"), "--json"]
    for client in ("windsurf", "trae", "zed", "kiro"):
        args += ["--client", client]
    # Never opened: an audit hook in the CLI records each open (chmod 0 shows nothing to root);
    # the state database, which the scan does open, proves the hook is live.
    blind = [files[name] for name in ("cascade", "memory", "trae")]
    audit, opens = open_audit(out, [*blind, out / "state.sqlite"])
    first = json.loads(run_cli(args, tmp_path, extra_env=audit).stdout)
    events = read_events(log)
    reported = {(e["telltale"]["client"], e["telltale"]["source"]["reason"], e["telltale"]["source"]["size"])
                for e in events if e["event"]["action"] == "source_unsupported"}
    assert reported == {("windsurf", "encrypted", 700), ("windsurf", "encrypted", 64),
                        ("trae", "encrypted", 4096), ("zed", "unknown_format", files["zed"].stat().st_size),
                        ("kiro", "unknown_format", files["kiro"].stat().st_size)}
    assert first["sources_unsupported"] == 5
    assert first["unsupported_reasons"] == {"encrypted": 3, "unknown_format": 2}
    assert first["scanner_error_count"] == 0
    assert str(files["cascade"]) not in log.read_text()  # path hashes, never paths
    second = json.loads(run_cli(args, tmp_path, extra_env=audit).stdout)
    assert [e["event"]["action"] for e in read_events(log)[len(events):]] == ["scan_summary"]
    assert second["sources_unsupported"] == 5
    seen = {line.split(" ", 1)[1] for line in opened(opens)}
    assert seen == {os.path.realpath(out / "state.sqlite")}
    assert tree_digest(tmp_path) == before


def test_missing_zstd_decoder_is_reported_no_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zstandard

    db = tmp_path / ".local" / "share" / "zed" / "threads" / "threads.db"
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, summary TEXT, updated_at TEXT, data_type TEXT,"
                     " data BLOB)")
        conn.execute("INSERT INTO threads VALUES ('t1', 's', '2026-01-01T00:00:00Z', 'zstd', ?)",
                     (zstandard.ZstdCompressor().compress(b'{"messages": []}'),))
    conn.close()
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard now raises ImportError
    sources = discover(DiscoveryOptions(root=str(tmp_path), env={}, clients=("zed",))).sources
    assert [s.kind for s in sources] == ["zed.threads"]
    options = ScanOptions(log_path=str(tmp_path / "o" / "e.jsonl"), state_path=str(tmp_path / "o" / "s.sqlite"))
    scanner = Scanner(options)
    try:
        result = scanner.scan(sources)
    finally:
        scanner.close()
    assert result.scanner_error_count == 0
    assert result.as_dict()["unsupported_reasons"] == {"no_decoder": 1}
    events = read_events(tmp_path / "o" / "e.jsonl")
    assert [e["telltale"]["source"]["reason"] for e in events if e["event"]["action"] == "source_unsupported"] == [
        "no_decoder"]


def test_inventory_shows_each_new_agent_from_its_data_folders(tmp_path: Path) -> None:
    make_home(tmp_path)
    for folder in (".local/share/amp/threads", ".factory/sessions/-p", ".kiro/sessions/cli"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    proc = run_cli(["inventory", "--json"], tmp_path, extra_env={"PATH": "/nonexistent"}, check=False)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    agents = {r["agent"]: r for r in records if r.get("record") == "agent"}
    for agent in ("windsurf", "trae", "zed", "amp", "droid", "kiro"):
        assert agents[agent]["installed"] is True, agent
        assert {s["kind"] for s in agents[agent]["signals"]} == {"app_data"}, agent
