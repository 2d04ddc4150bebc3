"""Cursor adapters over the real files in ``$TELLTALE_CORPUS/cursor`` (skipped without it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.cursor.transcripts import CursorTranscriptAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


def _transcripts() -> list[Path]:
    return sorted((Path(CORPUS or "") / "cursor").rglob("agent-transcripts/**/*.jsonl"))


def _independent_counts(path: Path) -> tuple[int, int, int, int]:
    """Complete lines, tool_use blocks, user records and turn markers, by plain json."""
    data = path.read_bytes()
    complete = data[: data.rfind(b"\n") + 1].decode("utf-8")  # a last line without newline is held
    lines = calls = users = markers = 0
    for line in complete.splitlines():
        if not line.strip():
            continue
        lines += 1
        record = json.loads(line)
        content = (record.get("message") or {}).get("content") or []
        calls += sum(block.get("type") == "tool_use" for block in content)
        users += record.get("role") == "user"
        markers += record.get("type") == "turn_ended"
    return lines, calls, users, markers


def test_corpus_cursor_transcripts_acquired_with_independent_counts() -> None:
    transcripts = _transcripts()
    assert len(transcripts) == 2, transcripts
    for path in transcripts:
        store_root = next(p for p in path.parents if p.name == "projects")
        source = Source(client="cursor", kind="cursor.agent_transcripts", path=str(path), root_type=RootType.HOME,
                        store_root=str(store_root), found_by="explicit_root")
        batches = list(CursorTranscriptAdapter().acquire(source, None, AcquireContext()))
        obs = [o for b in batches for o in b.observations]
        assert [q.reason for b in batches for q in b.quarantined] == []
        lines, calls, users, markers = _independent_counts(path)
        assert sum(b.records_read for b in batches) == lines
        assert sum(b.other_records for b in batches) == markers
        assert sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs) == calls
        assert sum(o.role == "user" for o in obs) == users
        assert sum(o.family is Family.SESSION for o in obs) == 1
        assert all(o.occurred_at == "2026-05-12T14:20:00.000Z" or o.occurred_at == "2026-09-01T05:20:00.000Z"
                   or o.occurred_at is None for o in obs)
        reads = [o for o in obs if o.tool_name == "Read"]
        assert all(o.file_path and o.file_path.endswith(".tex") for o in reads)
        assert len({o.observation_id for o in obs}) == len(obs)
