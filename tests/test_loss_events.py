"""Loss made visible (issue 15, item 7): record_quarantined, source_truncated,
source_rewritten, source_removed and scan_interrupted — end to end through the CLI.

Each is a record event (deterministic id, emitted once whatever the re-runs) except
scan_interrupted, which describes one run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from scan_helpers import read_events, run_cli, write_claude_session
from telltale.events.envelope import path_hash
from telltale.events.loss import QUARANTINE_EVENTS_PER_SOURCE
from telltale.pipeline import REMOVED_PREFIX, Scanner, ScanOptions
from telltale.sources.spec import RootType, Source
from telltale.state import StateStore

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "session_stores"


def _scan(home: Path, *extra: str, env: dict[str, str] | None = None,
          check: bool = True) -> subprocess.CompletedProcess[str]:
    out = home.parent / "out"
    return run_cli(["scan", "--once", "--root", str(home), "--log-path", str(out / "e.jsonl"), "--state-path",
                    str(out / "s.sqlite"), "--json", "--install-inventory-disabled", *extra], home,
                   extra_env=env, check=check)


def _events(home: Path, action: str) -> list[dict[str, Any]]:
    return [e for e in read_events(home.parent / "out" / "e.jsonl") if e["event"]["action"] == action]


def _ids(home: Path) -> Counter[str]:
    return Counter(e["event"]["id"] for e in read_events(home.parent / "out" / "e.jsonl"))


# -- record_quarantined ----------------------------------------------------------------------


def test_each_quarantined_record_is_an_event_by_coordinate_and_only_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-1", 2)
    good = path.read_bytes()
    bad = [b'{"type":"user",', b'{"a":' * 3000, b'{"type":"nonsense","uuid":"u-x","sessionId":"sess-1"}']
    path.write_bytes(good + b"\n".join(bad) + b"\n")
    _scan(home)
    events = _events(home, "record_quarantined")
    assert [(e["telltale"]["quarantine"]["line"], e["telltale"]["quarantine"]["reason"]) for e in events] == [
        (7, "malformed_json"), (8, "nesting_too_deep"), (9, "unknown_record_type")]
    first = events[0]
    assert first["event"]["dataset"] == "telltale.health"
    assert first["telltale"]["source"] == {"kind": "claude.projects", "path_hash": path_hash(str(path))}
    assert first["telltale"]["quarantine"]["offset"] == len(good)
    assert str(path) not in json.dumps(events)  # content-free: no path, no line text
    assert "nonsense" not in json.dumps(events)
    _scan(home)  # nothing new: nothing again
    write_claude_session(home, "-work-p", "sess-1", 1, start=2)
    _scan(home)
    assert len(_events(home, "record_quarantined")) == 3
    assert max(_ids(home).values()) == 1


def test_quarantines_past_the_first_hundred_are_one_aggregate(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-1", 1)
    extra = 30
    path.write_bytes(path.read_bytes() + b"{bad\n" * (QUARANTINE_EVENTS_PER_SOURCE + extra - 5)
                     + b"[1,2,]\n" * 5)
    summary = json.loads(_scan(home).stdout)
    assert summary["quarantined_count"] == QUARANTINE_EVENTS_PER_SOURCE + extra
    events = _events(home, "record_quarantined")
    single = [e for e in events if not e["telltale"]["quarantine"].get("aggregate")]
    (aggregate,) = [e for e in events if e["telltale"]["quarantine"].get("aggregate")]
    assert len(single) == QUARANTINE_EVENTS_PER_SOURCE
    span = aggregate["telltale"]["quarantine"]
    assert span["count"] == extra and span["reasons"] == {"malformed_json": extra - 5, "schema_mismatch": 5}
    assert span["first_line"] == single[-1]["telltale"]["quarantine"]["line"] + 1
    assert span["last_line"] == span["first_line"] + extra - 1


# -- source_truncated / source_rewritten -----------------------------------------------------


def test_a_truncated_transcript_is_reported_and_read_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-1", 4)
    before = path.stat().st_size
    _scan(home)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]))  # cut in place (same inode), shorter than the cursor
    _scan(home)
    (event,) = _events(home, "source_truncated")
    reset = event["telltale"]["reset"]
    assert reset == {"reason": "truncated", "previous_offset": before, "previous_size": before,
                     "size": path.stat().st_size, "reread_from": 0}
    assert event["telltale"]["source"]["path_hash"] == path_hash(str(path))
    _scan(home)
    assert len(_events(home, "source_truncated")) == 1
    assert _events(home, "source_rewritten") == []


def test_a_rewritten_head_and_a_replaced_file_are_source_rewritten(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = write_claude_session(home, "-work-p", "sess-1", 2)
    _scan(home)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"please run step 0", b"please run step X") + b"\n")  # same inode
    _scan(home)
    (rewritten,) = _events(home, "source_rewritten")
    assert rewritten["telltale"]["reset"]["reason"] in ("head_changed", "tail_changed")
    replacement = path.with_suffix(".new")
    replacement.write_bytes(data)
    os.replace(replacement, path)  # another file at the same path
    _scan(home)
    reasons = [e["telltale"]["reset"]["reason"] for e in _events(home, "source_rewritten")]
    assert reasons[1:] == ["identity_changed"]
    _scan(home)  # reported once; the activity read again keeps its ids (downstream dedupe)
    assert len(_events(home, "source_rewritten")) == 2


# -- source_removed --------------------------------------------------------------------------


def _opencode_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 1)
    write_claude_session(home, "-work-q", "sess-2", 1)
    write_claude_session(home, "-work-q", "sess-3", 1)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "opencode" / "opencode.db", db)
    return home


def test_removed_file_directory_and_store_are_each_reported_once(tmp_path: Path) -> None:
    home = _opencode_home(tmp_path)
    _scan(home)
    activity = Counter(e["event"]["id"] for e in read_events(tmp_path / "out" / "e.jsonl")
                       if e["event"]["dataset"] == "telltale.activity")
    one = home / ".claude" / "projects" / "-work-p" / "sess-1.jsonl"
    kept = one.read_bytes()
    one.unlink()
    shutil.rmtree(home / ".claude" / "projects" / "-work-q")  # a whole project directory
    (home / ".local" / "share" / "opencode" / "opencode.db").unlink()  # a SQLite store
    _scan(home)
    removed = _events(home, "source_removed")
    kinds = Counter(e["telltale"]["source"]["kind"] for e in removed)
    assert kinds == {"claude.projects": 3, "opencode.sqlite": 1}
    mine = next(e for e in removed if e["telltale"]["source"]["path_hash"] == path_hash(str(one)))
    assert mine["telltale"]["removed"]["last_offset"] == len(kept)
    assert mine["telltale"]["removed"]["last_line"] == kept.count(b"\n")
    assert mine["telltale"]["removed"]["last_scanned_at"].endswith("Z")
    _scan(home)
    assert len(_events(home, "source_removed")) == 4
    one.write_bytes(kept)  # restored: its events are not emitted again
    _scan(home)
    again = Counter(e["event"]["id"] for e in read_events(tmp_path / "out" / "e.jsonl")
                    if e["event"]["dataset"] == "telltale.activity")
    assert again == activity
    assert len(_events(home, "source_removed")) == 4


def test_a_source_found_elsewhere_or_filtered_out_is_not_removed(tmp_path: Path) -> None:
    home = _opencode_home(tmp_path)
    _scan(home)
    _scan(home, "--client", "claude")  # OpenCode not looked at, still on disk
    assert _events(home, "source_removed") == []


def test_a_removed_source_is_forgotten_after_thirty_days(tmp_path: Path) -> None:
    out = tmp_path / "out"
    path = tmp_path / "gone.jsonl"
    write = write_claude_session(tmp_path / "h", "-w", "s", 1)
    shutil.copyfile(write, path)
    source = Source(client="claude", kind="claude.projects", path=str(path), root_type=RootType.HOME,
                    store_root=str(tmp_path), found_by="explicit_root")
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"))

    def scan(sources: list[Source]) -> None:
        scanner = Scanner(options)
        try:
            scanner.scan(sources)
        finally:
            scanner.close()

    scan([source])
    path.unlink()
    scan([])
    state = StateStore(str(out / "s.sqlite"))
    try:
        (mark,) = state.meta_prefixed(REMOVED_PREFIX).items()
        assert state.cursor_count() == 1  # kept: a restored file is not read again
        with state.transaction() as conn:
            state.set_meta(conn, mark[0], repr(float(mark[1]) - 31 * 86_400).encode())
    finally:
        state.close()
    scan([])
    state = StateStore(str(out / "s.sqlite"))
    try:
        assert state.cursor_count() == 0 and state.meta_prefixed(REMOVED_PREFIX) == {}
    finally:
        state.close()


# -- scan_interrupted ------------------------------------------------------------------------


def _many(home: Path, n: int) -> None:
    for i in range(n):
        write_claude_session(home, f"-work-{i:02d}", f"sess-{i}", 2)


def test_sigint_stops_the_scan_with_one_line_and_the_rest_follows_next_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _many(home, 6)
    proc = _scan(home, env={"TELLTALE_FAULT": "source:3:int"}, check=False)
    assert proc.returncode == 130
    last = proc.stderr.strip().splitlines()[-1]  # what was committed, what is left, the command to continue
    assert re.fullmatch(r"telltale: interrupted \(SIGINT\): \d+ events written to \S+/out/e\.jsonl and committed; "
                        r"3 stores of 6 not reached; run `telltale scan --once .*` to continue where it stopped", last)
    assert "Traceback" not in proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["interrupted"] == {"signal": "SIGINT", "sources_done": 2, "sources_total": 6}
    (event,) = _events(home, "scan_interrupted")
    assert event["telltale"]["interrupted"] == {"signal": "SIGINT", "sources_done": 2, "sources_total": 6}
    assert _events(home, "scan_summary")  # the run's summary is written too
    _scan(home)  # the same command continues
    calls = _events(home, "tool_call")
    assert len(calls) == 12 and len({e["event"]["id"] for e in calls}) == 12


def test_sigterm_exits_143_and_commits_what_was_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _many(home, 4)
    proc = _scan(home, env={"TELLTALE_FAULT": "batch:2:term"}, check=False)
    assert proc.returncode == 143
    assert "telltale: interrupted (SIGTERM): " in proc.stderr and "2 stores of 4 not reached" in proc.stderr
    done = len(_events(home, "tool_call"))
    assert done >= 2  # the first source, and the second up to its cut
    _scan(home)
    assert len(_events(home, "tool_call")) == 8
    assert max(_ids(home).values()) == 1


def test_every_new_event_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "events.md").read_text(encoding="utf-8")
    for action in ("record_quarantined", "source_truncated", "source_rewritten", "source_removed",
                   "scan_interrupted"):
        assert f"`{action}`" in doc, action


def test_opencode_store_removal_keeps_the_store_cursor(tmp_path: Path) -> None:
    """The SQLite store's cursor row survives its removal (pruned only after 30 days)."""
    home = _opencode_home(tmp_path)
    _scan(home)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.unlink()
    _scan(home)
    conn = sqlite3.connect(tmp_path / "out" / "s.sqlite")
    try:
        kinds = {row[0] for row in conn.execute("SELECT kind FROM cursors")}
    finally:
        conn.close()
    assert "opencode.sqlite" in kinds
