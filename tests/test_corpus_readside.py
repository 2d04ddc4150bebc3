"""Usage on the real Claude Code corpus equals ccusage's rule computed from the files.

Every corpus transcript goes through the adapter, the event builder and the index upkeep
(as a scan would, one window per file, in path order); the expected totals are computed
here from the raw lines: each response once by ``message.id`` + ``requestId`` across all
files, its last line winning. Skipped without ``TELLTALE_CORPUS``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from telltale.events.activity import activity_lines
from telltale.index import schema
from telltale.index.upkeep import index_window
from telltale.sources.base import AcquireContext
from telltale.sources.claude import ClaudeAdapter
from telltale.sources.spec import RootType, Source

_corpus = os.environ.get("TELLTALE_CORPUS")
ROOT = Path(_corpus) / "claude-code" if _corpus else None
FILES = sorted(ROOT.rglob("*.jsonl")) if ROOT is not None and ROOT.is_dir() else []

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not FILES, reason="TELLTALE_CORPUS does not name a corpus with claude-code transcripts"),
]
FIELDS = ("input", "cache_creation", "cache_read", "output")


def _expected() -> dict[str, int]:
    responses: dict[str, dict[str, int]] = {}
    for path in FILES:
        for line in path.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            msg = rec.get("message") if isinstance(rec, dict) else None
            if rec.get("type") != "assistant" or not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict):
                continue
            if msg.get("model") == "<synthetic>":
                continue  # Claude Code's stand-in for a failed call: no tokens
            assert msg.get("id") and rec.get("requestId"), "a response without ccusage's identity"
            u = msg["usage"]
            responses[f"{msg['id']}:{rec['requestId']}"] = {
                "input": u.get("input_tokens") or 0,
                "cache_creation": u.get("cache_creation_input_tokens") or 0,
                "cache_read": u.get("cache_read_input_tokens") or 0,
                "output": u.get("output_tokens") or 0,
            }
    return {f: sum(r[f] for r in responses.values()) for f in FIELDS} | {"responses": len(responses)}


def test_corpus_usage_equals_the_ccusage_rule(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "s.sqlite", isolation_level=None)
    conn.execute("BEGIN")
    schema.ensure(conn)
    offset = 0
    for path in FILES:
        source = Source(client="claude", kind="claude.projects", path=str(path), root_type=RootType.HOME,
                        store_root=str(path.parent), found_by="explicit_root")  # fmt: skip
        observations = [o for b in ClaudeAdapter().acquire(source, None, AcquireContext()) for o in b.observations]
        lines = activity_lines(observations, "redacted", "2026-12-01T00:00:00.000Z")
        index_window(conn, device=1, inode=1, start=offset, lines=lines, ids=[o.observation_id for o in observations],
                     observations=observations, content="redacted")  # fmt: skip
        offset += sum(map(len, lines)) + len(lines)
    conn.execute("COMMIT")
    got = conn.execute(
        "SELECT sum(input), sum(cache_creation), sum(cache_read), sum(output), sum(responses) FROM ix_usage"
    ).fetchone()
    expected = _expected()
    assert dict(zip((*FIELDS, "responses"), got, strict=True)) == expected
