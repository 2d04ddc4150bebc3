"""Every real Claude Code transcript in ``$TELLTALE_CORPUS/claude-code`` acquires cleanly.

The corpus is never copied into the repository; without ``TELLTALE_CORPUS`` this is skipped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext, Batch
from telltale.sources.claude import ClaudeAdapter
from telltale.sources.spec import RootType, Source

_corpus = os.environ.get("TELLTALE_CORPUS")
CORPUS = Path(_corpus) if _corpus and Path(_corpus).is_dir() else None
ROOT = CORPUS / "claude-code" if CORPUS is not None else None
FILES = sorted(ROOT.rglob("*.jsonl")) if ROOT is not None and ROOT.is_dir() else []
#: Quarantine reasons the adapter may report (docs/adapters.md).
KNOWN_REASONS = {
    "malformed_json",
    "invalid_utf8",
    "oversized_line",
    "unknown_record_type",
    "unknown_content_block",
    "unbounded_value",
    "schema_mismatch",
}

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not FILES, reason="TELLTALE_CORPUS does not name a corpus with claude-code transcripts"),
]


def _acquire(path: Path) -> list[Batch]:
    src = Source(
        client="claude",
        kind="claude.projects",
        path=str(path),
        root_type=RootType.HOME,
        store_root=str(path.parent),
        found_by="explicit_root",
    )
    return list(ClaudeAdapter().acquire(src, None, AcquireContext()))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)) if ROOT else str(p))
def test_corpus_file_acquires_without_source_failure(path: Path) -> None:
    batches = _acquire(path)  # a SourceError would fail the test
    observations = [o for b in batches for o in b.observations]
    quarantined = [q for b in batches for q in b.quarantined]
    reasons = Counter(q.reason for q in quarantined)
    print(f"{path.name}: {len(observations)} observations, quarantine {dict(reasons)}")
    assert set(reasons) <= KNOWN_REASONS
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
    assert sum(b.records_read for b in batches) == len(lines)
    # usage once per API response: never more usage observations than distinct message ids
    message_ids = {r["message"]["id"] for r in lines if r.get("type") == "assistant" and r["message"].get("id")}
    usages = [o for o in observations if o.family is Family.USAGE]
    assert len(usages) <= len(message_ids)
    # every tool call in the file that a result answers is paired by call id
    requested = {o.call_id for o in observations if o.family is Family.TOOL and o.stage is Stage.REQUESTED}
    results = [o for o in observations if o.family is Family.TOOL and o.stage is Stage.RESULT]
    assert all(o.tool_name is not None for o in results if o.call_id in requested)
    ids = [o.observation_id for o in observations]
    assert len(ids) == len(set(ids))


def test_corpus_subagents_link_to_their_parent_session() -> None:
    subagents = [p for p in FILES if p.name.startswith("agent-")]
    assert subagents
    for path in subagents:
        observations = [o for b in _acquire(path) for o in b.observations]
        records = [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
        parent = records[0]["sessionId"]
        agent = path.stem.removeprefix("agent-")
        assert {o.session_id for o in observations} == {f"{parent}/{agent}"}
        assert {o.parent_session_id for o in observations} == {parent}
        assert {o.agent for o in observations} == {"claude-code/subagent"}


def test_corpus_reasoning_text_is_never_kept() -> None:
    for path in FILES:
        observations = [o for b in _acquire(path) for o in b.observations]
        thinking = []
        for raw in path.read_bytes().splitlines():
            rec = json.loads(raw)
            content = rec.get("message", {}).get("content") if isinstance(rec.get("message"), dict) else None
            if isinstance(content, list):
                thinking += [
                    b["thinking"] for b in content if b.get("type") == "thinking" and len(b.get("thinking", "")) > 40
                ]
        texts = [o.text or "" for o in observations]
        for t in thinking:
            assert not any(t in text for text in texts)
