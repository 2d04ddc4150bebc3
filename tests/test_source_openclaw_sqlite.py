"""OpenClaw SQLite adapter (``openclaw.sqlite``): transcript_events rows through the shared mapper."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import msgspec
import pytest

from telltale.errors import SourceError
from telltale.model import Observation, Quarantine, Stage, TokenUsage
from telltale.sources.base import AcquireContext, Batch, HistoryMode
from telltale.sources.openclaw import SPECS, OpenClawAdapter, OpenClawSqliteAdapter
from telltale.sources.openclaw import adapter as openclaw
from telltale.sources.spec import RootType, Source

AGENTS = Path(__file__).parent / "fixtures" / "session_stores" / "openclaw" / "agents"
SQL = AGENTS / "main" / "agent" / "openclaw-agent.sql"
JSONL = AGENTS / "main" / "sessions" / "claw-fixture-tools.jsonl"


def _build(root: Path, *, wal: bool = False, agent: str = "main", sql: str | None = None) -> Path:
    """The fixture store at ``<root>/agents/<agent>/agent/openclaw-agent.sqlite``."""
    path = root / "agents" / agent / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=" + ("WAL" if wal else "DELETE"))
        conn.executescript(sql if sql is not None else SQL.read_text(encoding="utf-8"))
    finally:
        conn.close()
    return path


def _source(path: Path) -> Source:
    return Source(
        client="openclaw", kind="openclaw.sqlite", path=str(path), root_type=RootType.HOME,
        store_root=str(path.parents[2]), found_by="fixture",
    )


def _scan(
    path: Path, cursor: bytes | None = None, history: HistoryMode = HistoryMode.INCREMENTAL
) -> tuple[list[Observation], list[Quarantine], list[Batch]]:
    batches = list(OpenClawSqliteAdapter().acquire(_source(path), cursor, AcquireContext(history=history)))
    return (
        [o for b in batches for o in b.observations],
        [q for b in batches for q in b.quarantined],
        batches,
    )


def _insert(path: Path, session_id: str, seq: int, entry: dict[str, object] | str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        text = entry if isinstance(entry, str) else json.dumps(entry)
        conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?, ?)", (session_id, seq, text, 1780400000000 + seq))
    finally:
        conn.close()


def test_spec_matches_agent_database_only() -> None:
    spec = SPECS[1]
    assert spec.kind == "openclaw.sqlite"
    assert spec.matches("openclaw-agent.sqlite", "agent")
    assert not spec.matches("openclaw-agent.sqlite", "sessions")
    assert not spec.matches("openclaw-agent.sqlite-wal", "agent")


def test_rows_map_like_jsonl_lines(tmp_path: Path) -> None:
    path = _build(tmp_path)
    obs, quarantined, batches = _scan(path)
    assert [(q.reason, q.row, q.sequence, q.session_id) for q in quarantined] == [
        ("malformed_json", "claw-sqlite-b:2", 2, "claw-sqlite-b")
    ]
    assert sum(b.records_read for b in batches) == 9
    assert sum(b.other_records for b in batches) == 1  # model_change
    summary = [(o.session_id, o.sequence, o.family.value, o.stage, o.role, o.tool_name) for o in obs]
    assert summary == [
        ("claw-sqlite-a", 0, "session", None, None, None),
        ("claw-sqlite-a", 2, "message", None, "user", None),
        ("claw-sqlite-a", 3, "tool", Stage.REQUESTED, None, "exec"),
        ("claw-sqlite-a", 3, "usage", None, None, None),
        ("claw-sqlite-a", 4, "tool", Stage.RESULT, None, "exec"),
        ("claw-sqlite-a", 5, "message", None, "assistant", None),
        ("claw-sqlite-a", 5, "usage", None, None, None),
        ("claw-sqlite-b", 0, "session", None, None, None),
        ("claw-sqlite-b", 1, "message", None, "user", None),
    ]
    call = obs[2]
    assert call.command == "df -h /" and call.call_id == "call_sql_df"
    assert obs[4].exit_code == 0 and obs[4].is_error is False
    assert obs[3].usage == TokenUsage(
        input_tokens=1000, output_tokens=20, cache_read_input_tokens=100,
        cache_creation_input_tokens=0, total_tokens=1020,
    )
    for o in obs:
        assert o.source_kind == "openclaw.sqlite"
        assert o.agent == "main"
        assert o.provenance.row == f"{o.session_id}:{o.sequence}"
        assert o.provenance.line is None
    assert {o.cwd for o in obs if o.session_id == "claw-sqlite-b"} == {"/srv/bot"}


def test_same_mapping_as_jsonl_for_the_same_entries(tmp_path: Path) -> None:
    """One mapping function fed by either reader: identical facts, only provenance differs."""
    entries = [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]
    sql = SQL.read_text(encoding="utf-8").split("INSERT INTO schema_meta")[0]
    path = _build(tmp_path, sql=sql)
    for seq, entry in enumerate(entries):
        _insert(path, "claw-fixture-tools", seq, entry)
    from_db, _, _ = _scan(path)
    lines = tmp_path / "agents" / "main" / "sessions" / JSONL.name
    lines.parent.mkdir(parents=True)
    lines.write_bytes(JSONL.read_bytes())
    batches = list(OpenClawAdapter().acquire(
        Source(client="openclaw", kind="openclaw.agents", path=str(lines), root_type=RootType.HOME,
               store_root=str(tmp_path), found_by="fixture"),
        None, AcquireContext(),
    ))
    from_file = [o for b in batches for o in b.observations]

    def facts(o: Observation) -> dict[str, object]:
        d = msgspec.structs.asdict(o)
        for key in ("observation_id", "source_kind", "sequence", "provenance"):
            d.pop(key)
        return d

    assert [facts(o) for o in from_db] == [facts(o) for o in from_file]


def test_incremental_keyset_finds_rows_appended_to_any_session(tmp_path: Path) -> None:
    path = _build(tmp_path)
    first, _, batches = _scan(path)
    cursor = batches[-1].cursor
    assert msgspec.json.decode(cursor or b"") == {"sessions": {"claw-sqlite-a": 5, "claw-sqlite-b": 2}}
    # Nothing new: nothing emitted.
    again, _, batches2 = _scan(path, cursor)
    assert again == [] and sum(b.records_read for b in batches2) == 0
    # Append to the *first* session in key order, and start a new one.
    _insert(path, "claw-sqlite-a", 6, {"type": "message", "id": "d0000006", "parentId": "d0000005",
                                       "timestamp": "2026-06-01T08:00:00.000Z",
                                       "message": {"role": "user", "content": "and memory?"}})
    _insert(path, "claw-sqlite-0", 0, {"type": "session", "version": 3, "id": "claw-sqlite-0",
                                       "timestamp": "2026-06-03T00:00:00.000Z", "cwd": "/tmp/zero"})
    new, _, batches3 = _scan(path, cursor)
    assert [(o.session_id, o.sequence, o.family.value) for o in new] == [
        ("claw-sqlite-0", 0, "session"),
        ("claw-sqlite-a", 6, "message"),
    ]
    # The resumed session's header was read again for its cwd, not re-emitted.
    assert new[1].cwd == "/home/claw/workspace"
    assert sum(b.records_read for b in batches3) == 2
    assert not {o.observation_id for o in new} & {o.observation_id for o in first}
    # Backfill reads everything again with the same ids.
    full, _, _ = _scan(path, cursor, HistoryMode.BACKFILL)
    assert {o.observation_id for o in first} <= {o.observation_id for o in full}


def test_header_disagreeing_with_row_session_is_identity_conflict(tmp_path: Path) -> None:
    path = _build(tmp_path)
    _insert(path, "claw-sqlite-c", 0, {"type": "session", "version": 3, "id": "someone-else", "cwd": "/"})
    with pytest.raises(SourceError) as info:
        _scan(path)
    assert info.value.reason == "identity_conflict"


def test_store_without_transcript_tables_is_empty(tmp_path: Path) -> None:
    path = _build(tmp_path, sql="CREATE TABLE auth_profiles (id TEXT PRIMARY KEY, data TEXT) STRICT;")
    obs, quarantined, batches = _scan(path)
    assert obs == [] and quarantined == []
    assert len(batches) == 1 and batches[0].records_read == 0


def test_wal_store_read_without_creating_sidecars(tmp_path: Path) -> None:
    path = _build(tmp_path, wal=True)
    for suffix in ("-wal", "-shm"):
        assert not os.path.exists(str(path) + suffix)
    before = sorted(os.listdir(path.parent))
    obs, _, _ = _scan(path)
    assert len(obs) == 9
    assert sorted(os.listdir(path.parent)) == before


def test_scan_stops_before_the_admission_budget_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _build(tmp_path)
    full, _, _ = _scan(path)
    # Pretend the row budget only leaves room for one small page per scan.
    monkeypatch.setattr(openclaw, "PAGE_ROWS", 2)
    monkeypatch.setattr(openclaw, "MAX_ROWS", 8)
    monkeypatch.setattr(openclaw, "_ROW_HEADROOM", 3)
    seen: list[Observation] = []
    cursor = None
    scans = 0
    for scans in range(1, 11):  # noqa: B007 - the count is asserted below
        obs, _, batches = _scan(path, cursor)
        seen.extend(obs)
        cursor = batches[-1].cursor
        if not batches[-1].partial:
            break
    else:
        pytest.fail("never completed")
    assert scans >= 3  # the budget really cut the scans short
    assert [o.observation_id for o in seen] == [o.observation_id for o in full]


def test_sql_fixture_follows_the_layout() -> None:
    text = SQL.read_text(encoding="utf-8")
    assert "CREATE TABLE transcript_events" in text
    assert "PRIMARY KEY (session_id, seq)" in text
