"""Real Goose session stores from the shared corpus (only when TELLTALE_CORPUS names it).

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
from telltale.sources.goose import GooseSessionsAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
GOOSE = sorted(Path(CORPUS, "goose").glob("*/sessions/sessions.db")) if CORPUS else []

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


@pytest.mark.parametrize("db", GOOSE, ids=[p.parent.parent.name for p in GOOSE])
def test_corpus_goose_matches_independent_counts(db: Path) -> None:
    before = dir_state(db.parent)
    sessions = _rows(db, "SELECT id, working_dir FROM sessions")
    messages = _rows(db, "SELECT content_json FROM messages")
    src = Source(client="goose", kind="goose.sqlite", path=str(db), root_type=RootType.HOME,
                 store_root=str(db.parent), found_by="home")
    batches = list(GooseSessionsAdapter().acquire(src, None, AcquireContext(history=HistoryMode.ALL)))
    assert dir_state(db.parent) == before
    got = [o for b in batches for o in b.observations]
    assert [(o.session_id, o.cwd) for o in got if o.family is Family.SESSION] == sessions
    blocks = [b for (content,) in messages for b in json.loads(str(content))]
    assert len([o for o in got if o.stage is Stage.REQUESTED]) == sum(b["type"] == "toolRequest" for b in blocks)
    assert len([o for o in got if o.family is Family.USAGE]) == 0  # token columns are NULL in the sample


def test_corpus_has_goose_stores() -> None:
    assert GOOSE, "TELLTALE_CORPUS is set but holds no goose/*/sessions/sessions.db"
