"""OpenCode incremental acquisition: cursors, overlap, saturation, v2 windows, sampling modes,
admission limits, locks, and leaving no trace beside the store (OC-INC-*, OC-ACQ-3/4)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_opencode as fx

from telltale.errors import SourceError
from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.opencode import OpenCodeAdapter
from telltale.sources.opencode import adapter as oc
from telltale.sources.opencode.adapter import OpenCodeCursor, decode_cursor, encode_cursor

T0 = fx.BASE_MS
MINUTE = 60_000


def cursor_at(hw: int, schema: str = "legacy", **kw: Any) -> bytes:
    return encode_cursor(OpenCodeCursor(schema=schema, hw=hw, **kw))


def connect(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(db, isolation_level=None)


def bulk_store(tmp_path: Path, count: int, *, ties: int = 1, time_updated: int = T0) -> Path:
    db = fx.build(tmp_path / "opencode.db", "empty_v1")
    conn = connect(db)
    conn.execute("PRAGMA synchronous=OFF")
    fx.add_parts(conn, count, ties=ties, time_updated=time_updated)
    conn.close()
    return db


def part_ids(got: fx.Acquired) -> list[str]:
    return [o.provenance.record_id for o in got.observations if (o.provenance.row or "").startswith("part:")]


def update_part(db: Path, pid: str, data: dict[str, Any], tu: int) -> None:
    conn = connect(db)
    conn.execute("UPDATE part SET data = ?, time_updated = ? WHERE id = ?", (json.dumps(data), tu, pid))
    conn.close()


# -- bootstrap, sampling and forensic modes --------------------------------------------------
def test_OC_INC_9_bootstrap_installs_a_cursor_at_the_newest_part(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    got = fx.acquire(db)
    cursor = decode_cursor(got.cursor)
    assert cursor is not None and cursor.schema == "legacy"
    # The newest (time_updated, id) of the rows read: here a message updated after its parts.
    assert (cursor.hw, cursor.id) == (1785420060000, "msg_08")
    assert not got.partial
    assert [b.cursor is None for b in got.batches][:-1] == [True] * (len(got.batches) - 1)


def test_OC_INC_7_9_bootstrap_samples_the_newest_5000_parts_and_marks_partial(tmp_path: Path) -> None:
    db = bulk_store(tmp_path, 5_010)
    got = fx.acquire(db)
    ids = part_ids(got)
    assert len(ids) == 5_000 and got.partial
    assert min(ids) == "prt_bulk_00000010"  # the ten oldest were left out
    assert decode_cursor(got.cursor).hw == T0 + 5_009  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["backfill", "dry_run"])
def test_OC_INC_7_8_backfill_and_dry_run_sample_without_touching_the_cursor(tmp_path: Path, mode: str) -> None:
    db = bulk_store(tmp_path, 5_003)
    prior = cursor_at(T0 + 10 * MINUTE)  # a production cursor past everything
    got = fx.acquire(db, prior, history="backfill" if mode == "backfill" else "incremental",
                     dry_run=mode == "dry_run")
    assert len(part_ids(got)) == 5_000 and got.partial
    assert got.cursor is None and all(b.cursor is None for b in got.batches)


def test_OC_INC_3_history_all_reads_every_part_from_the_earliest_and_returns_no_cursor(tmp_path: Path) -> None:
    db = bulk_store(tmp_path, 12_345, ties=1_000)
    conn = connect(db)
    conn.executescript(fx.sql("legacy_data"))
    conn.close()
    got = fx.acquire(db, cursor_at(T0 + 10**9), history="all")
    ids = part_ids(got)
    bulk = [i for i in ids if i.startswith("prt_bulk_")]
    assert len(bulk) == 12_345 == len(set(bulk))
    assert len({o.observation_id for o in got.observations}) == len(got.observations)
    assert got.cursor is None and not got.partial
    assert len(got.of(family=Family.USAGE)) == 3  # two step-finish parts and one message-tokens fallback


# -- incremental overlap and the edge set ----------------------------------------------------
def test_rescan_with_the_cursor_emits_nothing_again(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    first = fx.acquire(db)
    second = fx.acquire(db, first.cursor)
    assert second.observations == [] and second.quarantined == []
    assert decode_cursor(second.cursor) == decode_cursor(first.cursor)


def test_tool_moving_from_running_to_completed_emits_only_its_new_result(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    first = fx.acquire(db)
    assert [o.stage for o in first.of(call_id="call_write_1")] == [Stage.REQUESTED]
    update_part(db, "prt_0501", {"type": "tool", "tool": "write", "callID": "call_write_1", "state": {
        "status": "completed", "input": {"filePath": "/home/dev/demo/NOTES.md", "content": "# Notes\n"},
        "output": "Wrote file successfully.", "time": {"start": 1785420030200, "end": 1785420032000}}},
        tu=1785420060000)
    update_part(db, "prt_0502", {"type": "text", "text": "Writing the notes now.",
                                 "time": {"start": 1785420030600, "end": 1785420061000}}, tu=1785420061000)
    second = fx.acquire(db, first.cursor)
    assert [(o.call_id, o.stage, o.result) for o in second.of(family=Family.TOOL)] == [
        ("call_write_1", Stage.RESULT, "Wrote file successfully.")]
    assert [o.text for o in second.of(family=Family.MESSAGE)] == ["Writing the notes now."]
    assert decode_cursor(second.cursor).hw == 1785420061000  # type: ignore[union-attr]
    assert fx.acquire(db, second.cursor).observations == []


def test_OC_INC_13_restart_overlap_is_ten_minutes_before_the_high_water(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    first = fx.acquire(db)
    hw = decode_cursor(first.cursor).hw  # type: ignore[union-attr]
    conn = connect(db)
    # Committed after the first scan, but stamped before its high-water (a slow writer).
    for pid, tu in (("prt_late_in", hw - oc.OVERLAP_MS), ("prt_late_out", hw - oc.OVERLAP_MS - 1)):
        conn.execute("INSERT INTO part VALUES (?, 'msg_06', 'ses_demo_main', ?, ?, ?)",
                     (pid, tu, tu, json.dumps({"type": "text", "text": pid})))
    conn.close()
    second = fx.acquire(db, first.cursor)
    assert [o.text for o in second.observations] == ["prt_late_in"]  # OC-INC-29: older ones are missed


def test_edge_set_is_pruned_to_the_overlap_and_bounded(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    first = decode_cursor(fx.acquire(db).cursor)
    assert first is not None and first.edge
    assert all(t >= first.hw - oc.OVERLAP_MS for t, _ in first.edge)
    conn = connect(db)
    later = first.hw + 2 * oc.OVERLAP_MS
    conn.execute("INSERT INTO part VALUES ('prt_much_later', 'msg_06', 'ses_demo_main', ?, ?, ?)",
                 (later, later, json.dumps({"type": "text", "text": "much later"})))
    conn.close()
    second = decode_cursor(fx.acquire(db, encode_cursor(first)).cursor)
    assert second is not None and second.hw == later
    assert len(second.edge) == 1  # only the new part is still inside the overlap
    assert len(encode_cursor(second)) < 200


def test_an_unreadable_cursor_means_bootstrap(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    got = fx.acquire(db, b"{not a cursor")
    assert got.observations and decode_cursor(got.cursor) is not None


# -- pages and saturation (OC-INC-4/5/6/10/14/16) ----------------------------------------------
def _spy_pages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    original = oc._LegacyReader._parts_page

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        page = original(self, *args, **kwargs)
        sizes.append(len(page))
        return page

    monkeypatch.setattr(oc._LegacyReader, "_parts_page", spy)
    return sizes


def test_OC_INC_4_5_6_selection_of_exactly_25000_parts_with_ties_across_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groups of 3,000 parts share one time_updated, so ties straddle every page boundary.
    db = bulk_store(tmp_path, 25_000, ties=3_000)
    sizes = _spy_pages(monkeypatch)
    got = fx.acquire(db, cursor_at(T0 - 1))
    ids = part_ids(got)
    assert len(ids) == 25_000 == len(set(ids))
    assert sizes == [5_000] * 5 + [0]
    assert got.cursor is not None and not got.partial
    # Mapped once: a single native order over the complete selection, not per page.
    assert ids == sorted(ids)


def test_OC_INC_14_16_more_than_25000_parts_fail_closed_and_stay_saturated(tmp_path: Path) -> None:
    db = bulk_store(tmp_path, 25_001, ties=5_000)
    prior = cursor_at(T0 - 1)
    for _ in range(2):  # a retry with the unchanged cursor is saturated again
        yielded: list[Any] = []
        with pytest.raises(SourceError) as err:
            for batch in OpenCodeAdapter().acquire(fx.opencode_source(db), prior, AcquireContext()):
                yielded.append(batch)
        assert err.value.reason == "saturated" and yielded == []


def test_OC_INC_5_selection_ending_on_a_page_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = bulk_store(tmp_path, 10_000, ties=2_500)
    sizes = _spy_pages(monkeypatch)
    assert len(part_ids(fx.acquire(db, cursor_at(T0 - 1)))) == 10_000
    assert sizes == [5_000, 5_000, 0]


def test_OC_INC_28_duplicate_keyset_coordinates_reject(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    conn = connect(db)
    conn.executescript(
        "CREATE TABLE session (id TEXT, directory TEXT, time_created INTEGER);"
        "CREATE TABLE message (id TEXT, session_id TEXT, time_created INTEGER, time_updated INTEGER, data TEXT);"
        "CREATE TABLE part (id TEXT, message_id TEXT, session_id TEXT, time_updated INTEGER, data TEXT);"
        "INSERT INTO message VALUES ('m', 's', 1, 1, '{\"role\":\"user\"}');"
        "INSERT INTO part VALUES ('p', 'm', 's', 5, '{\"type\":\"text\",\"text\":\"a\"}');"
        "INSERT INTO part VALUES ('p', 'm', 's', 5, '{\"type\":\"text\",\"text\":\"b\"}');"
    )
    conn.close()
    with pytest.raises(SourceError) as err:
        fx.acquire(db, cursor_at(0))
    assert err.value.reason == "schema"


# -- admission through the adapter (OC-INC-18..24) ---------------------------------------------
def test_OC_INC_20_24_oversized_cell_fails_the_source_atomically(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    conn = connect(db)
    huge = json.dumps({"type": "text", "text": "y" * 8_388_608})
    conn.execute("INSERT INTO part VALUES ('prt_huge', 'msg_06', 'ses_demo_main', ?, ?, ?)", (T0, T0 + 1, huge))
    conn.close()
    prior = fx.acquire(fx.build(tmp_path / "copy" / "opencode.db", "empty_v1")).cursor
    for cursor in (None, prior):
        yielded: list[Any] = []
        with pytest.raises(SourceError) as err:
            for batch in OpenCodeAdapter().acquire(fx.opencode_source(db), cursor, AcquireContext()):
                yielded.append(batch)
        assert err.value.reason == "over_budget" and yielded == []
        assert "yyyy" not in str(err.value)


def test_OC_INC_18_delivered_rows_are_shared_by_messages_and_parts(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    conn = connect(db)
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < 100000)"
        " INSERT INTO message SELECT 'msg_many_' || i, 'ses_demo_main', ?, ?, '{\"role\":\"user\"}' FROM n",
        (T0, T0 + 1),
    )
    conn.close()
    # Every message updated inside the window is read too: 100,000 of them plus the parts.
    with pytest.raises(SourceError) as err:
        fx.acquire(db, cursor_at(T0 + 2))
    assert err.value.reason == "over_budget"


# -- v2 rolling windows (OC-INC-1/2) ---------------------------------------------------------
def v2_store(tmp_path: Path, rows: int, size: int, *, start: int = 0) -> Path:
    db = tmp_path / "opencode.db"
    if not db.exists():
        fx.build(db, "v2")
    conn = connect(db)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("BEGIN")
    for i in range(start, start + rows):
        # The bulk rides in a field the adapter does not map, so texts stay within their bound.
        data = {"text": f"row {i:05d}", "files": ["z" * size], "time": {"created": T0 + i}}
        conn.execute("INSERT INTO session_message VALUES (?, 'ses_v2_main', 'user', ?, ?, ?, ?)",
                     (f"msg_w_{i:05d}", T0 + 20 * MINUTE + i, T0 + 20 * MINUTE + i, json.dumps(data), 100 + i))
    conn.execute("COMMIT")
    conn.close()
    return db


def test_OC_INC_1_v2_selection_over_8_mib_is_drained_in_windows_within_one_scan(tmp_path: Path) -> None:
    db = v2_store(tmp_path, 20, 1_000_000)
    got = fx.acquire(db, cursor_at(T0, schema="v2"))
    texts = [o.text[:12] for o in got.of(family=Family.MESSAGE) if (o.text or "").startswith("row ")]
    assert len(texts) == 20 == len(set(texts))
    windows = [b for b in got.batches if b.cursor is not None]
    assert len(windows) == 3  # 8 + 8 + 4 rows of ~1 MB each
    cursors = [decode_cursor(b.cursor) for b in windows]
    assert [c.resume for c in cursors] == [True, True, False]  # type: ignore[union-attr]
    assert not got.partial


def test_OC_INC_2_a_remainder_is_continued_by_later_scans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oc, "V2_MAX_WINDOWS", 2)  # the real cap is 64 windows per scan
    db = v2_store(tmp_path, 30, 1_000_000)
    prior = cursor_at(T0, schema="v2")
    seen: Counter[str] = Counter()
    scans = 0
    while True:
        scans += 1
        got = fx.acquire(db, prior)
        seen.update(o.text[:10] for o in got.of(family=Family.MESSAGE) if (o.text or "").startswith("row "))
        prior = got.cursor
        if not got.partial:
            break
        assert decode_cursor(prior).resume  # type: ignore[union-attr]
    assert scans == 2 and len(seen) == 30 and max(seen.values()) == 1


def test_OC_INC_2_only_a_window_that_cannot_pass_its_resume_point_fails(tmp_path: Path) -> None:
    db = v2_store(tmp_path, 10, 1_000_000)
    conn = connect(db)
    conn.execute("INSERT INTO session_message VALUES ('msg_w_huge', 'ses_v2_main', 'user', ?, ?, ?, 999)",
                 (T0 + 30 * MINUTE, T0 + 30 * MINUTE, json.dumps({"text": "h" * 8_388_608})))
    conn.close()
    yielded: list[Any] = []
    with pytest.raises(SourceError) as err:
        for batch in OpenCodeAdapter().acquire(fx.opencode_source(db), cursor_at(T0, schema="v2"), AcquireContext()):
            yielded.append(batch)
    assert err.value.reason == "over_budget"
    # The windows before the oversized row were complete, each with its own resume point.
    resume = [decode_cursor(b.cursor) for b in yielded if b.cursor is not None]
    assert resume and resume[-1].id == "msg_w_00009"  # type: ignore[union-attr]


def test_v2_assistant_completing_later_emits_its_new_observations_once(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "v2")
    first = fx.acquire(db)
    assert [o.stage for o in first.of(call_id="call_v2_fetch")] == [Stage.REQUESTED]
    conn = connect(db)
    done = {"agent": "build", "model": {"id": "demo-model-v2b", "providerID": "demo-provider"}, "content": [
        {"type": "tool", "id": "call_v2_fetch", "name": "webfetch", "state": {
            "status": "completed", "input": {"url": "https://example.invalid/v2"},
            "content": [{"type": "text", "text": "fetched"}], "structured": {}},
         "time": {"created": 1785430014500, "completed": 1785430016000}},
        {"type": "text", "id": "t2", "text": "Fetched it."}],
        "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        "time": {"created": 1785430014000, "completed": 1785430017000}}
    conn.execute("UPDATE session_message SET data = ?, time_updated = ? WHERE id = 'msg_v2_06'",
                 (json.dumps(done), 1785430017000))
    conn.close()
    second = fx.acquire(db, first.cursor)
    assert sorted((o.family, o.stage) for o in second.observations) == sorted([
        (Family.TOOL, Stage.RESULT), (Family.MESSAGE, None), (Family.USAGE, None)])
    assert fx.acquire(db, second.cursor).observations == []


def test_v2_bootstrap_samples_the_newest_5000_rows(tmp_path: Path) -> None:
    db = v2_store(tmp_path, 5_001, 10)
    got = fx.acquire(db)
    assert got.partial
    assert got.batches[-1].records_read == 5_000
    bulk = sorted(o.text or "" for o in got.of(family=Family.MESSAGE) if (o.text or "").startswith("row "))
    assert len(bulk) == 5_001 - 7 and bulk[0] == "row 00007"  # the six fixture rows are newer


def test_a_schema_switch_continues_from_the_legacy_high_water(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "both")
    legacy_cursor = cursor_at(1785430009000, schema="legacy")
    got = fx.acquire(db, legacy_cursor)
    cursor = decode_cursor(got.cursor)
    assert cursor is not None and cursor.schema == "v2"
    # Everything from the legacy high-water minus the overlap is re-selected in v2.
    assert {o.provenance.record_id for o in got.of(family=Family.MESSAGE)} == {
        "msg_v2_01", "msg_v2_02", "msg_v2_04"}


# -- locks and leaving no trace (OC-ACQ-3/4) ---------------------------------------------------
def test_OC_ACQ_3_4_a_held_write_lock_fails_as_locked_within_the_5s_busy_timeout(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy", wal=False)
    first = fx.acquire(db)
    with fx.Writer(db, "BEGIN EXCLUSIVE", "DELETE FROM part") as writer:
        started = time.monotonic()
        yielded: list[Any] = []
        with pytest.raises(SourceError) as err:
            for batch in OpenCodeAdapter().acquire(fx.opencode_source(db), first.cursor, AcquireContext()):
                yielded.append(batch)
        elapsed = time.monotonic() - started
        assert err.value.reason == "locked" and yielded == []
        assert 4.5 <= elapsed < 8.0
        writer.run("ROLLBACK")
    # After release the next scan proceeds from the unchanged cursor.
    assert fx.acquire(db, first.cursor).cursor == first.cursor


UNPRIVILEGED = fx.unprivileged_uid()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    with fx.shared_tmpdir() as path:
        yield path


@pytest.mark.parametrize("who", [
    "root",
    pytest.param("user", marks=pytest.mark.skipif(UNPRIVILEGED is None, reason="no unprivileged user")),
])
@pytest.mark.parametrize("journal", ["wal-idle", "wal-live-writer", "rollback"])
def test_OC_ACQ_3_acquisition_leaves_the_store_directory_byte_identical(
    shared_dir: Path, who: str, journal: str
) -> None:
    db = fx.build(shared_dir / "opencode.db", "legacy", wal=journal != "rollback")

    def run() -> int:
        return len(fx.acquire(db).observations)

    def check() -> None:
        before = fx.dir_state(shared_dir)
        n = run() if who == "root" or UNPRIVILEGED is None else fx.run_as(UNPRIVILEGED, run)
        assert n > 0
        assert fx.dir_state(shared_dir) == before

    if journal == "wal-live-writer":
        with fx.Writer(db, "PRAGMA journal_mode=WAL",
                       "UPDATE part SET time_updated = time_updated + 1 WHERE id = 'prt_0101'"):
            assert {"opencode.db-wal", "opencode.db-shm"} <= set(os.listdir(shared_dir))
            check()
    else:
        assert sorted(os.listdir(shared_dir)) == ["opencode.db"]
        check()
