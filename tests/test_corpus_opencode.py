"""Real OpenCode stores from the shared corpus (only when TELLTALE_CORPUS names it).

Every ``$TELLTALE_CORPUS/opencode/*/opencode.db`` is acquired with ``HistoryMode.ALL``
without failure, and what the adapter emits is checked against counts taken
independently with plain SQL over the same file (opened immutable, nothing written).
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

import build_opencode as fx

from telltale.model import Family, Stage

CORPUS = os.environ.get("TELLTALE_CORPUS")
DATABASES = sorted(Path(CORPUS, "opencode").glob("*/opencode.db")) if CORPUS else []

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]

TYPE = "json_extract(data, '$.type')"
STATUS = "json_extract(data, '$.state.status')"


def independent_counts(db: Path) -> dict[str, int]:
    """What the store holds, counted by SQL alone (no adapter code)."""
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        def one(sql: str) -> int:
            value = conn.execute(sql).fetchone()[0]
            assert isinstance(value, int)
            return value

        finished_text = (f"{TYPE} = 'text' AND NOT (json_extract(data, '$.time.start') IS NOT NULL"
                         " AND json_extract(data, '$.time.end') IS NULL)")
        return {
            "messages": one("SELECT count(*) FROM message"),
            "parts": one("SELECT count(*) FROM part"),
            "selected_parts": one(f"SELECT count(*) FROM part WHERE {TYPE} IN ('text', 'tool', 'step-finish')"),
            "text_parts": one(f"SELECT count(*) FROM part WHERE {finished_text}"),
            "tool_parts": one(f"SELECT count(*) FROM part WHERE {TYPE} = 'tool'"),
            "tool_requested": one(f"SELECT count(*) FROM part WHERE {TYPE} = 'tool'"
                                  f" AND {STATUS} IN ('running', 'completed', 'error')"),
            "tool_results": one(f"SELECT count(*) FROM part WHERE {TYPE} = 'tool'"
                                f" AND {STATUS} IN ('completed', 'error')"),
            "tool_errors": one(f"SELECT count(*) FROM part WHERE {TYPE} = 'tool' AND {STATUS} = 'error'"),
            "step_finish": one(f"SELECT count(*) FROM part WHERE {TYPE} = 'step-finish'"
                               " AND json_extract(data, '$.tokens') IS NOT NULL"),
            "message_token_fallback": one(
                "SELECT count(*) FROM message m WHERE json_extract(m.data, '$.role') = 'assistant'"
                " AND json_extract(m.data, '$.time.completed') IS NOT NULL"
                " AND json_extract(m.data, '$.tokens') IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM part p WHERE p.message_id = m.id AND json_extract(p.data, '$.type')"
                " = 'step-finish')"),
            "sessions": one("SELECT count(DISTINCT session_id) FROM message"),
            "user_text": one("SELECT count(*) FROM part p JOIN message m ON m.id = p.message_id WHERE "
                             + finished_text.replace("(data", "(p.data")
                             + " AND json_extract(m.data, '$.role') = 'user'"),
        }
    finally:
        conn.close()


@pytest.mark.parametrize("db", DATABASES, ids=[p.parent.name for p in DATABASES])
def test_corpus_store_is_acquired_whole_and_matches_independent_counts(db: Path) -> None:
    before = fx.dir_state(db.parent)
    want = independent_counts(db)
    got = fx.acquire(db, history="all")
    assert fx.dir_state(db.parent) == before  # read-only: nothing written, created or touched
    assert got.cursor is None
    quarantined_fields = [q.field for q in got.quarantined]
    assert all(q.reason == "unbounded_value" for q in got.quarantined)  # never a parse failure

    messages = got.of(family=Family.MESSAGE)
    requested = got.of(family=Family.TOOL, stage=Stage.REQUESTED)
    results = got.of(family=Family.TOOL, stage=Stage.RESULT)
    assert len(messages) + quarantined_fields.count("text") == want["text_parts"]
    if "text" not in quarantined_fields:
        assert len([o for o in messages if o.role == "user"]) == want["user_text"]
    assert len(requested) + sum(1 for f in quarantined_fields if (f or "").startswith("arguments")) \
        == want["tool_requested"]
    assert len(results) + quarantined_fields.count("result") == want["tool_results"]
    assert sum(1 for o in results if o.is_error) <= want["tool_errors"]
    assert len(got.of(family=Family.USAGE)) == want["step_finish"] + want["message_token_fallback"]
    assert len(got.of(family=Family.SESSION)) == want["sessions"]
    # Every message row and every text/tool/step-finish part was read, once.
    assert sum(b.records_read for b in got.batches) == want["messages"] + want["selected_parts"]
    assert {o.session_id for o in got.observations} and all(o.agent == "opencode" for o in got.observations)


@pytest.mark.parametrize("db", DATABASES, ids=[p.parent.name for p in DATABASES])
def test_corpus_store_incremental_bootstrap_then_quiet_rescan(db: Path) -> None:
    first = fx.acquire(db)
    assert first.cursor is not None and first.observations
    again = fx.acquire(db, first.cursor)
    assert again.observations == [] and again.quarantined == []


def test_corpus_has_an_opencode_store() -> None:
    assert DATABASES, "TELLTALE_CORPUS is set but holds no opencode/*/opencode.db"
