"""The read-only SQLite snapshot reader: opening without a trace, locks, snapshots, admission."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_opencode as fx

from telltale.errors import SourceError
from telltale.readers import sqlite as reader
from telltale.readers.sqlite import (
    MAX_BYTES,
    MAX_CELL_BYTES,
    MAX_ROWS,
    SqliteSnapshot,
    quote_ident,
)

T = TypeVar("T")
UNPRIVILEGED = fx.unprivileged_uid()
AS_USERS = [
    pytest.param("root", id="as-root"),
    pytest.param(
        "user",
        id="as-ordinary-user",
        marks=pytest.mark.skipif(UNPRIVILEGED is None, reason="no unprivileged user to drop to"),
    ),
]


def make_db(path: Path, *, wal: bool, rows: int = 3) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=" + ("WAL" if wal else "DELETE"))
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"row {i}",) for i in range(rows)])
    conn.close()
    return path


def count_rows(path: Path) -> tuple[int, str]:
    with SqliteSnapshot(str(path)) as snap:
        n = snap.query_all("SELECT count(*) AS n FROM t")[0]["n"]
        assert isinstance(n, int)
        return n, snap.mode


def as_user(who: str, fn: Callable[[], T]) -> T:
    if who == "root" or UNPRIVILEGED is None:
        return fn()
    assert fx.run_as(UNPRIVILEGED, os.geteuid) == UNPRIVILEGED != 0 or os.geteuid() != 0
    result: T = fx.run_as(UNPRIVILEGED, fn)
    return result


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    with fx.shared_tmpdir() as path:
        yield path


# -- opening without a trace ----------------------------------------------------------------
@pytest.mark.parametrize("who", AS_USERS)
def test_OC_ACQ_3_wal_database_without_sidecars_is_read_immutable_and_leaves_no_trace(
    shared_dir: Path, who: str
) -> None:
    db = make_db(shared_dir / "opencode.db", wal=True)
    assert db.read_bytes()[18:20] == b"\x02\x02"
    assert sorted(os.listdir(shared_dir)) == ["opencode.db"]
    before = fx.dir_state(shared_dir)
    assert as_user(who, lambda: count_rows(db)) == (3, "immutable")
    assert fx.dir_state(shared_dir) == before


@pytest.mark.parametrize("who", AS_USERS)
def test_OC_ACQ_3_live_wal_sidecars_are_used_read_only_and_stay_byte_identical(shared_dir: Path, who: str) -> None:
    db = make_db(shared_dir / "opencode.db", wal=True)
    with fx.Writer(db, "PRAGMA journal_mode=WAL", "INSERT INTO t (v) VALUES ('committed in the WAL')") as writer:
        assert {"opencode.db-wal", "opencode.db-shm"} <= set(os.listdir(shared_dir))
        before = fx.dir_state(shared_dir)
        # Committed WAL frames are visible although the main file was never checkpointed.
        assert as_user(who, lambda: count_rows(db)) == (4, "read_only_wal")
        assert fx.dir_state(shared_dir) == before
        writer.run("INSERT INTO t (v) VALUES ('second commit')")
        before = fx.dir_state(shared_dir)
        assert as_user(who, lambda: count_rows(db)) == (5, "read_only_wal")
        assert fx.dir_state(shared_dir) == before


@pytest.mark.parametrize("who", AS_USERS)
def test_rollback_journal_database_opens_read_only_and_creates_nothing(shared_dir: Path, who: str) -> None:
    db = make_db(shared_dir / "opencode.db", wal=False)
    assert db.read_bytes()[18:20] == b"\x01\x01"
    before = fx.dir_state(shared_dir)
    assert as_user(who, lambda: count_rows(db)) == (3, "read_only")
    assert fx.dir_state(shared_dir) == before


def test_wal_without_shm_is_read_from_a_private_copy(tmp_path: Path) -> None:
    db = make_db(tmp_path / "x.db", wal=True)
    # A writer in exclusive locking mode keeps its WAL index in memory: -wal, no -shm.
    with fx.Writer(db, "PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=WAL",
                   "INSERT INTO t (v) VALUES ('in the wal')"):
        names = set(os.listdir(tmp_path))
        assert "x.db-wal" in names and "x.db-shm" not in names
        before = fx.dir_state(tmp_path)
        n, mode = count_rows(db)
        assert mode == "private_copy"
        assert n == 4
        assert fx.dir_state(tmp_path) == before


def test_hot_journal_fails_with_a_bounded_error_and_is_left_alone(tmp_path: Path) -> None:
    db = make_db(tmp_path / "x.db", wal=False)
    crash = (
        "import sqlite3, os\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN')\n"
        "for i in range(2000): c.execute('INSERT INTO t (v) VALUES (?)', ('x' * 500,))\n"
        "os._exit(0)\n"
    )
    os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", crash])
    assert (tmp_path / "x.db-journal").exists()
    before = fx.dir_state(tmp_path)
    with pytest.raises(SourceError) as err:
        count_rows(db)
    assert err.value.reason == "hot_journal"
    assert fx.dir_state(tmp_path) == before


# -- locks and snapshots ---------------------------------------------------------------------
def test_OC_ACQ_4_exclusive_lock_fails_fast_as_locked_and_a_later_read_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real 5 s timeout is exercised in test_source_opencode; here a short one keeps it fast.
    monkeypatch.setattr(reader, "BUSY_TIMEOUT_MS", 300)
    db = make_db(tmp_path / "x.db", wal=False)
    with fx.Writer(db, "BEGIN EXCLUSIVE", "INSERT INTO t (v) VALUES ('pending')") as writer:
        started = time.monotonic()
        with pytest.raises(SourceError) as err:
            count_rows(db)
        assert err.value.reason == "locked"
        assert 0.25 <= time.monotonic() - started < 3
        assert "pending" not in str(err.value)
        writer.run("ROLLBACK")
    assert count_rows(db) == (3, "read_only")


def test_one_read_snapshot_per_acquisition(tmp_path: Path) -> None:
    db = make_db(tmp_path / "x.db", wal=True)
    with fx.Writer(db, "PRAGMA journal_mode=WAL") as writer, SqliteSnapshot(str(db)) as snap:
        assert snap.query_all("SELECT count(*) AS n FROM t")[0]["n"] == 3
        writer.run("INSERT INTO t (v) VALUES ('after the snapshot began')")
        assert snap.query_all("SELECT count(*) AS n FROM t")[0]["n"] == 3
    assert count_rows(db)[0] == 4


def test_query_only_connection_refuses_writes(tmp_path: Path) -> None:
    db = make_db(tmp_path / "x.db", wal=False)
    before = fx.dir_state(tmp_path)
    with SqliteSnapshot(str(db)) as snap, pytest.raises(SourceError):
        snap.query_all("INSERT INTO t (v) VALUES ('nope') RETURNING id")
    assert fx.dir_state(tmp_path) == before


def test_uri_escapes_special_characters_in_the_path(tmp_path: Path) -> None:
    odd = tmp_path / "a dir?with#odd%20chars&mode=rw"
    odd.mkdir()
    db = make_db(odd / "opencode.db", wal=True)
    before = fx.dir_state(odd)
    assert count_rows(db) == (3, "immutable")
    assert fx.dir_state(odd) == before
    assert "%3F" in reader._sqlite_uri(str(db), "immutable=1")


def test_symlinks_and_non_database_files_are_rejected(tmp_path: Path) -> None:
    db = make_db(tmp_path / "real.db", wal=True)
    link = tmp_path / "link.db"
    link.symlink_to(db)
    with pytest.raises(SourceError) as err:
        count_rows(link)
    assert err.value.reason == "unreadable"
    (tmp_path / "real.db-wal").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(SourceError) as err:
        count_rows(db)
    assert "symlink" in err.value.detail
    text = tmp_path / "notes.db"
    text.write_text("just text, long enough to hold a header of one hundred bytes" * 3)
    with pytest.raises(SourceError) as err:
        count_rows(text)
    assert err.value.reason == "not_sqlite"
    with pytest.raises(SourceError) as err:
        count_rows(tmp_path / "missing.db")
    assert err.value.reason == "vanished"
    with pytest.raises(SourceError) as err:
        count_rows(tmp_path)
    assert err.value.reason == "unreadable"


def test_introspection_reads_columns_by_name(tmp_path: Path) -> None:
    db = fx.build(tmp_path / "opencode.db", "legacy")
    with SqliteSnapshot(str(db)) as snap:
        assert {"message", "part", "session_message"} <= snap.tables()
        assert snap.columns("part") == ("id", "message_id", "session_id", "time_created", "time_updated", "data")
        assert snap.columns("no_such_table") == ()
        assert snap.has_rows("part") and not snap.has_rows("session_message")
        assert snap.admission.rows == 0  # introspection is not charged


# -- admission (OC-INC-18..25) ---------------------------------------------------------------
@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_db(tmp_path_factory.mktemp("scratch") / "scratch.db", wal=False)


def _count(snap: SqliteSnapshot, sql: str, params: tuple[object, ...] = ()) -> int:
    return sum(1 for _ in snap.query(sql, params))


ROWS_SQL = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?) SELECT i FROM c"


def test_OC_INC_18_row_limit_is_inclusive(scratch: Path) -> None:
    with SqliteSnapshot(str(scratch)) as snap:
        assert _count(snap, ROWS_SQL, (MAX_ROWS,)) == MAX_ROWS
    with SqliteSnapshot(str(scratch)) as snap:
        assert _count(snap, ROWS_SQL, (MAX_ROWS - 10,)) == MAX_ROWS - 10
        # The limit is shared by every query of the acquisition.
        with pytest.raises(SourceError) as err:
            _count(snap, ROWS_SQL, (11,))
    assert err.value.reason == "over_budget"


@pytest.mark.parametrize("kind", ["text", "blob"])
def test_OC_INC_20_cell_limit_is_inclusive(scratch: Path, kind: str) -> None:
    cell = "substr(hex(zeroblob(?)), 1, ?)" if kind == "text" else "zeroblob(?)"
    sql = f"SELECT {cell} AS c"

    def params(n: int) -> tuple[int, ...]:
        return ((n + 1) // 2, n) if kind == "text" else (n,)

    with SqliteSnapshot(str(scratch)) as snap:
        row = snap.query_all(sql, params(MAX_CELL_BYTES))[0]
        assert len(row["c"]) == MAX_CELL_BYTES  # type: ignore[arg-type]
        assert isinstance(row["c"], str if kind == "text" else bytes)
        assert snap.admission.bytes == MAX_CELL_BYTES + 1
        with pytest.raises(SourceError) as err:
            snap.query_all(sql, params(MAX_CELL_BYTES + 1))
    assert err.value.reason == "over_budget"


def test_OC_INC_20_column_name_limit_and_OC_INC_23_zero_row_schemas(scratch: Path) -> None:
    exact = "n" * MAX_CELL_BYTES
    with SqliteSnapshot(str(scratch)) as snap:
        assert snap.query_all(f"SELECT 1 AS {quote_ident(exact)} WHERE 0") == []
        assert snap.admission.bytes == 0  # names checked, nothing charged
        with pytest.raises(SourceError) as err:
            snap.query_all(f"SELECT 1 AS {quote_ident(exact + 'n')} WHERE 0")
    assert err.value.reason == "over_budget"


def test_OC_INC_19_aggregate_limit_is_inclusive(scratch: Path) -> None:
    # 16 rows x (1-byte name "b" + 8,388,607-byte blob) = 134,217,728 bytes exactly.
    sql = ("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
           "SELECT zeroblob(?) AS b FROM c")
    per_row = MAX_CELL_BYTES - 1
    assert 16 * (1 + per_row) == MAX_BYTES
    with SqliteSnapshot(str(scratch)) as snap:
        assert _count(snap, sql, (16, per_row)) == 16
        assert snap.admission.bytes == MAX_BYTES
        with pytest.raises(SourceError) as err:
            _count(snap, "SELECT NULL AS z")  # one more name byte
    assert err.value.reason == "over_budget"


def test_OC_INC_21_22_every_column_occurrence_is_charged(scratch: Path) -> None:
    sql = "SELECT NULL AS a, 7 AS bb, 2.5 AS ccc, 'é' AS d, x'0102' AS e, 'x' AS a"
    with SqliteSnapshot(str(scratch)) as snap:
        row = snap.query_all(sql)[0]
        # names 1+2+3+1+1+1, values 0 + 8 + 8 + 2 (UTF-8) + 2 + 1; the repeated alias "a" too.
        assert snap.admission.bytes == 9 + 21
        assert snap.admission.rows == 1
        assert row == {"a": "x", "bb": 7, "ccc": 2.5, "d": "é", "e": b"\x01\x02"}
        invalid = snap.query_all("SELECT CAST(x'ff61' AS TEXT) AS t")[0]["t"]
        assert invalid == b"\xffa"  # TEXT that is not UTF-8 stays bytes


def test_OC_INC_25_limits_have_no_public_configuration() -> None:
    assert (MAX_ROWS, MAX_BYTES, MAX_CELL_BYTES) == (100_000, 134_217_728, 8_388_608)
    assert reader.BUSY_TIMEOUT_MS == 5_000
    import inspect

    assert list(inspect.signature(SqliteSnapshot).parameters) == ["path"]
    assert not any("TELLTALE" in name for name in vars(reader))


cells = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
    st.binary(max_size=40),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), cells), min_size=1, max_size=8))
def test_admission_charge_matches_the_seed_formula(scratch: Path, columns: list[tuple[str, object]]) -> None:
    names = ", ".join(f"? AS {quote_ident(name)}" for name, _ in columns)
    expected = 0
    for name, value in columns:
        expected += len(name.encode())
        if isinstance(value, str):
            expected += len(value.encode("utf-8"))
        elif isinstance(value, bytes):
            expected += len(value)
        elif value is not None:
            expected += 8
    with SqliteSnapshot(str(scratch)) as snap:
        row = snap.query_all(f"SELECT {names}", tuple(v for _, v in columns))[0]
        assert snap.admission.bytes == expected
        assert snap.admission.rows == 1
    assert row == {name: value for name, value in columns}
