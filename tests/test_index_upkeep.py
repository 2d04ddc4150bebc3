"""The index kept by scans equals the index rebuilt from the log, table by table; a
response copied into another transcript counts once wherever the windows fall."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.index.rebuild import rebuild
from telltale.pipeline import Scanner, ScanOptions
from test_readside_cli import S2, build_home

QUERIES = (
    "SELECT client, session_id, agent, agent_version, cwd, cwd_hash, parent_session_id, parent_call_id, first_at,"
    " last_at, events, messages, tool_calls, detections, max_severity, input, cache_creation, cache_read, output, total"
    " FROM ix_sessions ORDER BY 1, 2",
    "SELECT u.bucket, s.client, s.session_id, u.model, u.responses, u.input, u.cache_creation, u.cache_read, u.output,"
    " u.total FROM ix_usage u JOIN ix_sessions s ON s.id = u.session ORDER BY 1, 2, 3, 4",
    "SELECT s.session_id, r.hash, r.bucket, r.model, r.total FROM ix_responses r JOIN ix_sessions s ON s.id = r.session"
    " ORDER BY 1, 2",
    "SELECT d.id, d.at, d.client, d.rule_id, d.severity, d.evidence, d.offset, s.session_id FROM ix_detections d"
    " LEFT JOIN ix_sessions s ON s.id = d.session ORDER BY 1",
    "SELECT id, at, action, type, client, message, offset FROM ix_health ORDER BY 1",
    "SELECT scan_id, emitted, errors, sources FROM ix_scans ORDER BY 1",
    "SELECT coalesce(sum(length(ids)), 0) / 8 FROM ix_seen",
)


def _spans(conn: sqlite3.Connection) -> list[tuple[str, int, int, int]]:
    """Spans with adjacent ones merged (a rebuild batches lines differently from a scan's windows)."""
    rows = conn.execute(
        "SELECT s.session_id, p.file, p.start, p.end FROM ix_spans p JOIN ix_sessions s ON s.id = p.session"
        " ORDER BY 1, 2, 3"
    ).fetchall()
    out: list[tuple[str, int, int, int]] = []
    for sid, file, start, end in rows:
        if out and out[-1][:2] == (sid, file) and out[-1][3] == start:
            out[-1] = (sid, file, out[-1][2], end)
        else:
            out.append((sid, file, start, end))
    return out


@pytest.mark.parametrize("window_bytes", [2_048, 1 << 20])
def test_index_kept_by_scans_equals_the_rebuilt_index(tmp_path: Path, window_bytes: int) -> None:
    home = tmp_path / "home"
    build_home(home)
    out = tmp_path / "out"
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"), window_bytes=window_bytes,
                          log_rotate_max_size=5_000, log_rotate_keep=100)  # fmt: skip
    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    for backfill in (False, True):  # the second scan writes every event again
        options.backfill = backfill
        scanner = Scanner(options)
        try:
            scanner.scan(sources)
        finally:
            scanner.close()
    kept = sqlite3.connect(out / "s.sqlite")
    shutil.copy(out / "s.sqlite", tmp_path / "rebuilt.sqlite")
    again = sqlite3.connect(tmp_path / "rebuilt.sqlite", isolation_level=None)
    again.execute("BEGIN IMMEDIATE")
    result = rebuild(again, str(out / "e.jsonl"))
    again.execute("COMMIT")
    assert result.files > 1 and result.duplicates > 0
    for query in QUERIES:
        assert kept.execute(query).fetchall() == again.execute(query).fetchall(), query
    assert _spans(kept) == _spans(again)
    # The response copied into the resumed transcript is one row, under the transcript read last.
    totals = dict(kept.execute("SELECT session_id, total FROM ix_sessions").fetchall())
    assert totals[S2] == (5 + 0 + 4400 + 9) + (2 + 5 + 10 + 4)
    (claude,) = kept.execute(
        "SELECT sum(u.total) FROM ix_usage u JOIN ix_sessions s ON s.id = u.session WHERE s.client = 'claude'"
    ).fetchone()
    assert claude == sum(v for k, v in totals.items() if k.startswith("5f0c1a2e"))


def test_a_reader_holding_a_snapshot_never_blocks_a_scan(tmp_path: Path) -> None:
    import time

    from telltale.index.db import connect

    home = tmp_path / "home"
    build_home(home)
    out = tmp_path / "out"
    options = ScanOptions(log_path=str(out / "e.jsonl"), state_path=str(out / "s.sqlite"))
    sources = discover(DiscoveryOptions(root=str(home), env={})).sources
    first = Scanner(options)
    try:
        first.scan(sources[:1])
    finally:
        first.close()
    reader = connect(str(out / "s.sqlite"))
    reader.execute("BEGIN")
    (before,) = reader.execute("SELECT count(*) FROM ix_sessions").fetchone()  # holds a read snapshot
    started = time.monotonic()
    second = Scanner(options)
    try:
        second.scan(sources)  # commits while the reader's snapshot is open
    finally:
        second.close()
    assert time.monotonic() - started < 25  # never waited out the 30 s busy timeout
    assert reader.execute("SELECT count(*) FROM ix_sessions").fetchone() == (before,)  # its snapshot is intact
    reader.execute("COMMIT")
    assert reader.execute("SELECT count(*) FROM ix_sessions").fetchone()[0] > before
