"""OpenClaw adapter over the real transcripts in ``$TELLTALE_CORPUS/openclaw`` (skipped without it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.openclaw import SPECS, OpenClawAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


def _files() -> list[Path]:
    return sorted(p for p in (Path(CORPUS or "") / "openclaw").rglob("*") if p.is_file())


def _independent_counts(path: Path) -> tuple[int, int, str | None]:
    """toolCall blocks, toolResult messages and the header id, by plain json."""
    calls = results = 0
    header = None
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            entry = json.loads(line)
            if entry.get("type") == "session":
                header = entry.get("id")
            message = entry.get("message") or {}
            content = message.get("content")
            if message.get("role") == "assistant" and isinstance(content, list):
                calls += sum(block.get("type") == "toolCall" for block in content)
            results += message.get("role") == "toolResult"
    return calls, results, header


def test_corpus_openclaw_discovery_names_transcripts_only() -> None:
    names = [p.name for p in _files() if SPECS[0].matches(p.name, p.parent.name)]
    assert names
    assert not [n for n in names if "trajectory" in n or n == "sessions.json"]
    assert any(".jsonl.reset." in n for n in names) and any(".jsonl.deleted." in n for n in names)


def test_corpus_openclaw_every_transcript_acquired_and_tool_counts_match() -> None:
    transcripts = [p for p in _files() if SPECS[0].matches(p.name, p.parent.name)]
    for path in transcripts:
        source = Source(
            client="openclaw", kind="openclaw.agents", path=str(path), root_type=RootType.HOME,
            store_root=str(path.parent), found_by="explicit_root",
        )
        batches = list(OpenClawAdapter().acquire(source, None, AcquireContext()))  # no SourceError
        obs = [o for b in batches for o in b.observations]
        assert [q.reason for b in batches for q in b.quarantined] == [], path.name
        calls, results, header = _independent_counts(path)
        assert sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs) == calls
        assert sum(o.family is Family.TOOL and o.stage is Stage.RESULT for o in obs) == results
        assert {o.session_id for o in obs} == {header}
        assert sum(o.family is Family.SESSION for o in obs) == 1
