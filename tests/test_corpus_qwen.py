"""Qwen adapter over the real transcripts in ``$TELLTALE_CORPUS/qwen-code`` (skipped without it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.qwen import SPECS, QwenAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


def _transcripts() -> list[Path]:
    root = Path(CORPUS or "") / "qwen-code"
    return sorted(p for p in root.rglob("*.jsonl") if SPECS[0].matches(p.name, p.parent.name))


def _independent_counts(path: Path) -> tuple[int, int, int]:
    """functionCall parts, functionResponse parts and assistant usage records, by plain json."""
    calls = responses = usage = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            record = json.loads(line)
            parts = (record.get("message") or {}).get("parts") or []
            calls += sum("functionCall" in p for p in parts)
            responses += sum("functionResponse" in p for p in parts)
            usage += record.get("type") == "assistant" and bool(record.get("usageMetadata"))
    return calls, responses, usage


def test_corpus_qwen_every_transcript_acquired_and_tool_counts_match() -> None:
    transcripts = _transcripts()
    assert transcripts, "no Qwen transcripts found in the corpus"
    for path in transcripts:
        source = Source(
            client="qwen", kind="qwen.projects", path=str(path), root_type=RootType.HOME,
            store_root=str(path.parent), found_by="explicit_root",
        )
        batches = list(QwenAdapter().acquire(source, None, AcquireContext()))  # no SourceError
        obs = [o for b in batches for o in b.observations]
        assert [q.reason for b in batches for q in b.quarantined] == []
        calls, responses, usage = _independent_counts(path)
        assert sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs) == calls
        assert sum(o.family is Family.TOOL and o.stage is Stage.RESULT for o in obs) == responses
        assert sum(o.family is Family.USAGE for o in obs) == usage
        lines = sum(1 for line in path.open(encoding="utf-8") if line.strip())
        assert sum(b.records_read for b in batches) == lines
