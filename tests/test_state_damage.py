"""A damaged, missing, read-only or full state (and a full log): one line, a documented exit, nothing lost."""

from __future__ import annotations

import errno
import os
import random
import sqlite3
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from scan_helpers import read_events, run_cli, write_claude_session
from telltale.discovery import DiscoveryOptions, discover
from telltale.errors import OutputError, StateError
from telltale.pipeline import Scanner, ScanOptions
from telltale.state import MOVE_ASIDE, StateStore, explain

RECORDS = ("telltale.activity", "telltale.detection")


def _home(tmp_path: Path, sessions: int = 6, turns: int = 40) -> Path:
    home = tmp_path / "home"
    for s in range(sessions):
        write_claude_session(home, f"-work-p{s % 2}", f"sess-{s}", turns)
    return home


def _args(home: Path, log: Path, state: Path, *extra: str) -> list[str]:
    return ["scan", "--once", "--root", str(home), "--log-path", str(log), "--state-path", str(state), "--json",
            "--install-inventory-disabled", *extra]


def _ids(log: Path) -> Counter[str]:
    return Counter(e["event"]["id"] for e in read_events(log) if e["event"]["dataset"] in RECORDS)


def _one_line_error(proc: subprocess.CompletedProcess[str], state: Path, *, code: int = 1) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("telltale: error:")]
    assert len(lines) == 1, proc.stderr
    assert str(state) in lines[0]
    return lines[0]


def _reference(tmp_path: Path, home: Path) -> Counter[str]:
    ref = tmp_path / "ref"
    run_cli(_args(home, ref / "e.jsonl", ref / "s.sqlite"), home)
    ids = _ids(ref / "e.jsonl")
    assert ids and max(ids.values()) == 1
    return ids


# -- damage ------------------------------------------------------------------------------
def test_not_a_database_is_one_line_with_the_recovery_step_and_nothing_written(tmp_path: Path) -> None:
    home = _home(tmp_path, 1, 2)
    out = tmp_path / "out"
    out.mkdir()
    state = out / "s.sqlite"
    state.write_text("this is not a database\n")
    line = _one_line_error(run_cli(_args(home, out / "e.jsonl", state), home, check=False), state)
    assert "not a SQLite database" in line and MOVE_ASIDE in line
    assert sorted(p.name for p in out.iterdir()) == ["s.sqlite"]  # no log, no lock, no -wal
    assert state.read_text() == "this is not a database\n"


def _scanned_state(tmp_path: Path, home: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    run_cli(_args(home, out / "e.jsonl", out / "s.sqlite"), home)
    return out / "e.jsonl", out / "s.sqlite"


def test_random_bytes_in_the_state_pages_end_in_one_line_never_a_traceback(tmp_path: Path) -> None:
    home = _home(tmp_path, 2, 5)
    log, state = _scanned_state(tmp_path, home)
    write_claude_session(home, "-work-p0", "sess-0", 2, start=5)  # something to scan and commit
    pristine = state.read_bytes()
    page = 4096
    pages = len(pristine) // page
    assert pages >= 3
    rng = random.Random(15)
    saw_damage = False
    for trial in range(3):
        data = bytearray(pristine)
        # Page 2 (the first table's root) for sure, then pages at random; each from its header on.
        victim = rng.randrange(1, pages) if trial else 1
        start = victim * page
        data[start : start + 512] = rng.randbytes(512)
        state.write_bytes(bytes(data))
        for suffix in ("-wal", "-shm"):
            Path(f"{state}{suffix}").unlink(missing_ok=True)
        proc = run_cli(_args(home, log, state), home, check=False)
        assert "Traceback" not in proc.stderr
        if proc.returncode == 0:
            continue  # the bytes landed where nothing reads them
        line = _one_line_error(proc, state)
        assert MOVE_ASIDE in line
        saw_damage = True
    assert saw_damage


def test_truncated_state_ends_in_one_line_with_the_recovery_step(tmp_path: Path) -> None:
    home = _home(tmp_path, 2, 5)
    log, state = _scanned_state(tmp_path, home)
    write_claude_session(home, "-work-p0", "sess-0", 2, start=5)
    with state.open("r+b") as fh:
        fh.truncate(os.path.getsize(state) // 2)
    line = _one_line_error(run_cli(_args(home, log, state), home, check=False), state)
    assert MOVE_ASIDE in line


def test_explain_names_what_happened_for_real_sqlite_errors(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    StateStore(str(db)).close()
    ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with pytest.raises(sqlite3.Error) as info:
        ro.execute("INSERT INTO meta(key, value) VALUES ('k', x'00')")
    assert "read-only" in explain(info.value)[0]
    full = sqlite3.connect(db)
    full.execute("PRAGMA max_page_count = 1")
    with pytest.raises(sqlite3.Error) as info:
        full.execute("INSERT INTO meta(key, value) VALUES ('k', zeroblob(100000))")
    what, recovery = explain(info.value)
    assert "disk is full" in what and "free space" in recovery
    assert "disk is full" in explain(OSError(errno.ENOSPC, "No space left on device"))[0]


# -- a new or empty state beside a log that holds events -----------------------------------
def test_emptied_state_warns_and_marks_the_reset_before_re_emitting(tmp_path: Path) -> None:
    home = _home(tmp_path, 2, 3)
    log, state = _scanned_state(tmp_path, home)
    first = _ids(log)
    state.write_bytes(b"")  # "truncated to 0 bytes"
    proc = run_cli(_args(home, log, state), home)
    assert "warning" in proc.stderr and "state_reset" in proc.stderr and "Traceback" not in proc.stderr
    events = read_events(log)
    resets = [i for i, e in enumerate(events) if e["event"]["action"] == "state_reset"]
    assert len(resets) == 1
    again = [i for i, e in enumerate(events) if e["event"]["dataset"] in RECORDS and i > resets[0]]
    assert again and len(again) == sum(first.values())  # everything re-emitted, after the marker
    reset = events[resets[0]]
    assert reset["event"]["dataset"] == "telltale.health" and reset["telltale"]["state_reset"]["log_size"] > 0
    # the state now knows it has history: no second reset
    run_cli(_args(home, log, state), home)
    assert sum(e["event"]["action"] == "state_reset" for e in read_events(log)) == 1


def test_new_state_path_beside_an_existing_log_is_a_reset_too(tmp_path: Path) -> None:
    home = _home(tmp_path, 1, 2)
    log, _state = _scanned_state(tmp_path, home)
    proc = run_cli(_args(home, log, tmp_path / "other" / "s.sqlite"), home)
    assert "state_reset" in proc.stderr
    assert sum(e["event"]["action"] == "state_reset" for e in read_events(log)) == 1


def test_a_first_scan_with_a_new_log_is_no_reset(tmp_path: Path) -> None:
    home = _home(tmp_path, 1, 2)
    out = tmp_path / "out"
    proc = run_cli(_args(home, out / "e.jsonl", out / "s.sqlite"), home)
    assert "state_reset" not in proc.stderr
    assert not any(e["event"]["action"] == "state_reset" for e in read_events(out / "e.jsonl"))


# -- disk full, injected at the layer that meets it ------------------------------------------
def _scanner(home: Path, out: Path, **extra: object) -> tuple[Scanner, list[object]]:
    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"), window_bytes=8192)
    for key, value in extra.items():
        setattr(options, key, value)
    return Scanner(options), list(sources)


def _scan_in_process(home: Path, out: Path, **extra: object) -> None:
    scanner, sources = _scanner(home, out, **extra)
    try:
        scanner.scan(sources)  # type: ignore[arg-type]
    finally:
        scanner.close()


@pytest.fixture
def reference_ids(tmp_path: Path) -> Iterator[tuple[Path, Counter[str]]]:
    home = _home(tmp_path)
    ref = tmp_path / "ref"
    _scan_in_process(home, ref)
    yield home, _ids(ref / "e.jsonl")


def test_full_disk_under_the_log_fails_cleanly_and_resumes_with_nothing_lost(
    tmp_path: Path, reference_ids: tuple[Path, Counter[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, reference = reference_ids
    out = tmp_path / "out"
    from telltale.sinks import jsonl

    real = jsonl._write_lines
    calls = {"n": 0}

    def filling(fd: int, lines: list[bytes]) -> int:
        calls["n"] += 1
        if calls["n"] == 3:  # two windows fit, the third meets a full disk half-way
            os.write(fd, b"".join(lines)[: len(b"".join(lines)) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, lines)

    monkeypatch.setattr(jsonl, "_write_lines", filling)
    with pytest.raises(OutputError, match="No space left on device; free space and run the same command again"):
        _scan_in_process(home, out)
    monkeypatch.setattr(jsonl, "_write_lines", real)
    _scan_in_process(home, out)  # space is back
    got = _ids(out / "e.jsonl")
    assert max(got.values()) == 1 and set(got) == set(reference)


@pytest.mark.parametrize("outbox", [False, True], ids=["state", "outbox"])
def test_full_disk_under_the_state_or_outbox_fails_cleanly_and_resumes_with_nothing_lost(
    tmp_path: Path, reference_ids: tuple[Path, Counter[str]], monkeypatch: pytest.MonkeyPatch, outbox: bool
) -> None:
    """SQLITE_FULL for real: the state connection may not grow past its size after a few commits."""
    home, reference = reference_ids
    out = tmp_path / "out"
    extra: dict[str, object] = {"remote_sinks": ("hec",)} if outbox else {}
    scanner, sources = _scanner(home, out, **extra)
    assert scanner.state is not None
    conn = scanner.state.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 2}")
    try:
        with pytest.raises(StateError, match=r"the disk is full.*free space and run the same command again"):
            scanner.scan(sources)  # type: ignore[arg-type]
    finally:
        scanner.close()
    _scan_in_process(home, out, **extra)  # space is back
    got = _ids(out / "e.jsonl")
    assert max(got.values()) == 1 and set(got) == set(reference)
    if outbox:
        with sqlite3.connect(out / "s.sqlite") as db:
            queued = {row[0] for row in db.execute("SELECT event_id FROM outbox_item WHERE sink = 'hec'")}
        assert set(reference) <= queued  # every event reached the outbox once the disk had room


# -- a real full disk, through the CLI ---------------------------------------------------------
def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                          capture_output=True)
    return proc.returncode == 0


@pytest.mark.slow
def test_full_tmpfs_under_log_and_state_fails_in_one_line_and_resumes_with_nothing_lost(tmp_path: Path) -> None:
    """A 96 KiB tmpfs holds the log and the state; the CLI stops cleanly, and once the file
    system has room the same command finishes the work: every event once."""
    home = _home(tmp_path)
    reference = _reference(tmp_path, home)
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "96k"):
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    try:
        log, state = disk / "e.jsonl", disk / "s.sqlite"
        proc = run_cli(_args(home, log, state, "--window-bytes", "16k"), home, check=False)
        assert proc.returncode == 1, proc.stderr
        line = _one_line_error(proc, state if "state database" in proc.stderr else log)
        assert "free space and run the same command again" in line
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        run_cli(_args(home, log, state, "--window-bytes", "16k"), home)
        got = _ids(log)
        assert max(got.values()) == 1 and set(got) == set(reference)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)
