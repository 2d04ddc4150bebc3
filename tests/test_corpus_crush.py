"""Real Crush databases from the shared corpus (only when TELLTALE_CORPUS names it).

Each is acquired whole (``HistoryMode.ALL``) and what the adapter emits is checked against
counts taken independently with plain ``sqlite3`` and ``json`` over the same file (opened
immutable), and the store directory is left exactly as it was (sidecars included).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))

from build_crush import dir_state

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext, HistoryMode
from telltale.sources.crush import CrushAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
CRUSH = sorted(Path(CORPUS, "crush").glob("*/.crush/crush.db")) if CORPUS else []

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?immutable=1", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def crush_counts(db: Path) -> dict[str, int]:
    counts = {"user_text": 0, "assistant_text": 0, "calls": 0, "results": 0, "sessions": 0, "usage": 0}
    rows = _rows(db, "SELECT role, parts FROM messages")
    for role, parts in rows:
        items = json.loads(parts)  # these samples predate compression
        kinds = [p["type"] for p in items]
        if any(p["type"] == "text" and p["data"].get("text") for p in items) and role in ("user", "assistant"):
            counts[f"{role}_text"] += 1
        counts["calls"] += kinds.count("tool_call")
        counts["results"] += kinds.count("tool_result")
    counts["sessions"] = len(_rows(db, "SELECT DISTINCT session_id FROM messages"))
    counts["usage"] = len(_rows(db, "SELECT id FROM sessions WHERE prompt_tokens > 0 OR completion_tokens > 0"))
    counts["rows"] = len(rows)
    return counts


@pytest.mark.parametrize("db", CRUSH, ids=[p.parent.parent.name for p in CRUSH])
def test_corpus_crush_matches_independent_counts(db: Path) -> None:
    before = dir_state(db.parent)
    want = crush_counts(db)
    src = Source(client="crush", kind="crush.sqlite", path=str(db), root_type=RootType.PROJECT_LOCAL,
                 store_root=str(db.parent), found_by="project:corpus")
    batches = list(CrushAdapter().acquire(src, None, AcquireContext(history=HistoryMode.ALL)))
    assert dir_state(db.parent) == before
    got = [o for b in batches for o in b.observations]
    assert [q for b in batches for q in b.quarantined] == []
    assert len([o for o in got if o.role == "user"]) == want["user_text"]
    assert len([o for o in got if o.role == "assistant"]) == want["assistant_text"]
    assert len([o for o in got if o.stage is Stage.REQUESTED]) == want["calls"]
    assert len([o for o in got if o.stage is Stage.RESULT]) == want["results"]
    assert len([o for o in got if o.family is Family.SESSION]) == want["sessions"]
    assert len([o for o in got if o.family is Family.USAGE]) == want["usage"]
    assert sum(b.records_read for b in batches) == want["rows"]
    assert all(o.occurred_at is None or o.occurred_at.startswith("20") for o in got)  # seconds, not ms


def test_corpus_has_crush_stores() -> None:
    assert CRUSH, "TELLTALE_CORPUS is set but holds no crush/*/.crush/crush.db"
