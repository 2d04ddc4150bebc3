"""cursor-agent CLI chats (``~/.cursor/chats/<md5>/<chatId>/store.db``): found, reported unsupported."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from scan_helpers import open_audit, opened, read_events, run_cli
from telltale.discovery import DiscoveryOptions, discover

CWD_HASH = hashlib.md5(b"/home/dev/app").hexdigest()


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    store = home / ".cursor" / "chats" / CWD_HASH / "3f0c2a1e-9d8b-4c7a-8e6f-5d4c3b2a1f0e" / "store.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"SQLite format 3\x00" + bytes(84))
    (store.parent / "store.db-wal").write_bytes(b"")
    (home / ".cursor" / "chats" / CWD_HASH / "store.db").write_bytes(b"")  # not at a chat's depth
    return home, store


def test_discovery_finds_chat_stores_at_their_depth_only(tmp_path: Path) -> None:
    home, store = _home(tmp_path)
    result = discover(DiscoveryOptions(root=str(home), clients=("cursor.cli_chats",), env={}))
    assert [s.path for s in result.sources] == [str(store)]


def test_sources_and_scan_report_the_blind_spot_without_opening_it(tmp_path: Path) -> None:
    home, store = _home(tmp_path)
    before = store.read_bytes()
    listing = run_cli(["sources", "--json", "--root", str(home), "--client", "cursor"], tmp_path, check=False)
    record = next(json.loads(line) for line in listing.stdout.splitlines() if "store.db" in line)
    assert record["status"] == "unsupported" and record["reason"] == "unknown_format"
    out = tmp_path / "out"
    # Never opened: an audit hook in the CLI records each open (chmod 0 shows nothing to
    # root); the state database, which the scan opens, proves the hook is live.
    audit, opens = open_audit(tmp_path, [store, out / "s.sqlite"])
    args = ["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), "--state-path",
            str(out / "s.sqlite"), "--client", "cursor", "--json"]
    summary = json.loads(run_cli(args, tmp_path, extra_env=audit).stdout)
    assert summary["sources_unsupported"] == 1 and summary["scanner_error_count"] == 0
    assert summary["unsupported_reasons"] == {"unknown_format": 1}
    events = [e for e in read_events(out / "e.jsonl") if e["event"]["action"] == "source_unsupported"]
    assert [e["telltale"]["source"]["reason"] for e in events] == ["unknown_format"]
    run_cli(args, tmp_path, extra_env=audit)
    again = [e for e in read_events(out / "e.jsonl") if e["event"]["action"] == "source_unsupported"]
    assert len(again) == 1  # reported once
    assert {line.split(" ", 1)[1] for line in opened(opens)} == {os.path.realpath(out / "s.sqlite")}
    assert store.read_bytes() == before
