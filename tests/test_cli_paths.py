"""Where Telltale writes, and which roots it scans: refused with exit 2, one line, nothing written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from scan_helpers import read_events, run_cli, write_claude_session


def _scan(home: Path, log: Path | str, state: Path | str, *extra: str,
          root: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(["scan", "--once", "--root", root or str(home), "--log-path", str(log), "--state-path",
                    str(state), "--json", *extra], home, check=False)


def _refused(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    write_claude_session(home, "-work-p", "sess-1", 2)
    return home


def _transcript(home: Path) -> Path:
    return home / ".claude" / "projects" / "-work-p" / "sess-1.jsonl"


# -- log and state placement -------------------------------------------------------------------
def test_log_symlink_into_a_store_is_refused_and_the_transcript_untouched(tmp_path: Path, home: Path) -> None:
    before = _transcript(home).read_bytes()
    link = tmp_path / "events.jsonl"
    link.symlink_to(_transcript(home))
    _refused(_scan(home, link, tmp_path / "out" / "s.sqlite"), "--log-path", "inside a scanned session store",
             "resolves to")
    assert _transcript(home).read_bytes() == before
    assert not (tmp_path / "out").exists()


def test_log_below_a_linked_directory_into_a_store_is_refused(tmp_path: Path, home: Path) -> None:
    (tmp_path / "logs").symlink_to(home / ".claude" / "projects" / "-work-p")
    before = _files(home)
    _refused(_scan(home, tmp_path / "logs" / "e.jsonl", tmp_path / "out" / "s.sqlite"), "--log-path")
    assert _files(home) == before


def test_state_symlink_into_a_store_is_refused(tmp_path: Path, home: Path) -> None:
    link = tmp_path / "s.sqlite"
    link.symlink_to(home / ".claude" / "projects" / "state.sqlite")
    before = _files(home)
    _refused(_scan(home, tmp_path / "out" / "e.jsonl", link), "--state-path")
    assert _files(home) == before and not (tmp_path / "out").exists()


def test_state_inside_a_store_not_created_yet_is_refused(tmp_path: Path, home: Path) -> None:
    """~/.codex/sessions does not exist yet: a watch waits for it, so nothing of ours may go there."""
    state = home / ".codex" / "sessions" / "s.sqlite"
    _refused(_scan(home, tmp_path / "out" / "e.jsonl", state), "--state-path", "inside a scanned session store")
    assert not (home / ".codex").exists()


def test_log_and_state_the_same_file_is_refused(tmp_path: Path, home: Path) -> None:
    same = tmp_path / "out" / "both"
    _refused(_scan(home, same, same), "same file")
    assert not (tmp_path / "out").exists()
    # the same file by another name: a hard link
    out = tmp_path / "out2"
    out.mkdir()
    (out / "s.sqlite").write_bytes(b"")
    os.link(out / "s.sqlite", out / "e.jsonl")
    _refused(_scan(home, out / "e.jsonl", out / "s.sqlite"), "same file")
    assert _files(out) == ["e.jsonl", "s.sqlite"]


def test_log_that_is_the_state_wal_is_refused(tmp_path: Path, home: Path) -> None:
    _refused(_scan(home, tmp_path / "s.sqlite-wal", tmp_path / "s.sqlite"), "-wal")


def test_existing_sqlite_or_text_file_as_the_log_is_refused_and_left_alone(tmp_path: Path, home: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (x)")
    before = db.read_bytes()
    _refused(_scan(home, db, tmp_path / "out" / "s.sqlite"), "SQLite database, not a JSONL event log")
    assert db.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    _refused(_scan(home, notes, tmp_path / "out" / "s.sqlite"), "not a JSONL event log")
    assert notes.read_text() == "my notes\n" and not (tmp_path / "out").exists()


def test_a_directory_as_the_log_is_refused(tmp_path: Path, home: Path) -> None:
    (tmp_path / "logdir").mkdir()
    _refused(_scan(home, tmp_path / "logdir", tmp_path / "out" / "s.sqlite"), "is a directory")


@pytest.mark.parametrize("which", ["--state-path", "--log-path"])
def test_dangling_symlink_is_refused_in_one_line(tmp_path: Path, home: Path, which: str) -> None:
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "file")
    log, state = (tmp_path / "out" / "e.jsonl", dangling) if which == "--state-path" else (
        dangling, tmp_path / "out" / "s.sqlite")
    _refused(_scan(home, log, state), which, "dangling symbolic link")
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "out").exists()


def test_an_existing_jsonl_log_is_appended_to(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "out"
    assert _scan(home, out / "e.jsonl", out / "s.sqlite").returncode == 0
    n = len(read_events(out / "e.jsonl"))
    write_claude_session(home, "-work-p", "sess-1", 1, start=2)
    assert _scan(home, out / "e.jsonl", out / "s.sqlite").returncode == 0
    assert len(read_events(out / "e.jsonl")) > n


def test_watch_refuses_the_same_paths(tmp_path: Path, home: Path) -> None:
    link = tmp_path / "events.jsonl"
    link.symlink_to(_transcript(home))
    proc = run_cli(["watch", "--root", str(home), "--log-path", str(link), "--state-path",
                    str(tmp_path / "out" / "s.sqlite"), "--iterations", "0", "--json"], home, check=False, timeout=60)
    _refused(proc, "--log-path", "inside a scanned session store")


# -- roots ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["missing", "file", "dangling"])
def test_bad_root_is_a_usage_error_and_nothing_is_written(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "root"
    if kind == "file":
        root.write_text("x")
    elif kind == "dangling":
        root.symlink_to(tmp_path / "gone")
    state_dir = home / ".state-out"
    for cmd in (["scan", "--once"], ["watch", "--iterations", "0"], ["sources"], ["inventory"]):
        proc = run_cli([*cmd, "--root", str(root)], home, check=False, timeout=60)
        line = _refused(proc, "--root", str(root))
        assert ("not a directory" in line) if kind == "file" else ("does not exist" in line)
    assert not state_dir.exists()  # no log, no state, no inventory events, no summary


def test_discovery_errors_count_in_the_summary_and_the_exit_code(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "out"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    (home / ".claude" / "projects" / "-work-p" / "linked.jsonl").symlink_to(outside)
    proc = _scan(home, out / "e.jsonl", out / "s.sqlite")
    assert proc.returncode == 0, proc.stderr  # a usable store is left: warnings only
    summary = json.loads(proc.stdout)
    assert summary["discovery_error_count"] == 1 and summary["error_count"] == 1
    event = next(e for e in read_events(out / "e.jsonl") if e["event"]["action"] == "scan_summary")
    assert event["telltale"]["scan"]["error_count"] == 1
    # nothing usable left, only a rejected candidate: the run could not do its job
    lonely = tmp_path / "lonely"
    (lonely / ".claude" / "projects" / "-p").mkdir(parents=True)
    (lonely / ".claude" / "projects" / "-p" / "s.jsonl").symlink_to(outside)
    proc = _scan(lonely, tmp_path / "o2" / "e.jsonl", tmp_path / "o2" / "s.sqlite")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["discovery_error_count"] == 1
    assert "no usable session store" in proc.stderr


def test_no_store_and_no_error_is_a_healthy_empty_host(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = _scan(empty, tmp_path / "out" / "e.jsonl", tmp_path / "out" / "s.sqlite")
    assert proc.returncode == 0, proc.stderr
