"""Real Codex rollouts (read only from $TELLTALE_CORPUS/codex, never copied here).

Which files count as rollouts: ``rollout-*.jsonl`` files, ``*.jsonl`` files below a
``sessions`` directory, and any other ``*.jsonl`` whose first line is a ``session_meta``
record (a rollout saved under another name). That leaves out ``history.jsonl`` (prompt
history), logs and the single-JSON G0 ``rollout-*.json`` files, which are not rollouts
the adapter reads. Every selected rollout must acquire without a SourceError, and the
adapter's counts must equal counts computed here independently with plain ``json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.codex import CodexAdapter
from telltale.sources.spec import RootType, Source

_CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not _CORPUS or not Path(_CORPUS, "codex").is_dir(), reason="TELLTALE_CORPUS not set"),
]

TOOL_CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}


def _first_record(path: Path) -> Any:
    with path.open("rb") as fh:
        first = fh.readline()
    try:
        return json.loads(first)
    except ValueError:
        return None


def rollouts() -> list[Path]:
    if not _CORPUS:
        return []
    found = []
    for path in sorted(Path(_CORPUS, "codex").rglob("*.jsonl")):
        first = _first_record(path)
        if (
            path.name.startswith("rollout-")
            or "sessions" in path.parts
            or (isinstance(first, dict) and first.get("type") == "session_meta")
        ):
            found.append(path)
    return found


def independent_counts(path: Path) -> dict[str, int]:
    """Counts from plain json: tool calls, response-item messages, distinct cumulative totals."""
    calls = messages = usage = 0
    previous_total: Any = None
    with path.open(encoding="utf-8") as fh:
        for raw in fh:
            record = json.loads(raw)
            item = record.get("payload") if "payload" in record else record
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            in_response = record.get("type") == "response_item" or "payload" not in record
            if in_response and kind in TOOL_CALL_TYPES:
                calls += 1
            if in_response and kind == "message":
                messages += 1
            if record.get("type") == "event_msg" and kind == "token_count" and item.get("info"):
                total = item["info"].get("total_token_usage")
                if total != previous_total:
                    usage += 1
                previous_total = total
    return {"calls": calls, "messages": messages, "usage": usage}


def test_corpus_has_codex_rollouts() -> None:
    paths = rollouts()
    assert len(paths) >= 10
    assert not [p for p in paths if p.name == "history.jsonl"]


@pytest.mark.parametrize("path", rollouts(), ids=lambda p: p.name[:40])
def test_corpus_rollout_acquires_and_counts_match(path: Path) -> None:
    source = Source(
        client="codex",
        kind="codex.sessions",
        path=str(path),
        root_type=RootType.CODEX_HOME,
        store_root=str(path.parent),
        found_by="explicit_root",
    )
    batches = list(CodexAdapter().acquire(source, None, AcquireContext()))  # no SourceError
    observations = [o for b in batches for o in b.observations]
    expected = independent_counts(path)
    requested = [o for o in observations if o.family is Family.TOOL and o.stage is Stage.REQUESTED]
    assert len(requested) == expected["calls"]
    assert len([o for o in observations if o.family is Family.MESSAGE]) == expected["messages"]
    assert len([o for o in observations if o.family is Family.USAGE]) == expected["usage"]
    assert len([o for o in observations if o.family is Family.SESSION]) == 1
    assert sum(b.records_read for b in batches) == sum(1 for line in path.open("rb") if line.strip())
    ids = [o.observation_id for o in observations]
    assert len(ids) == len(set(ids))
    # Quarantines name coordinates only.
    for batch in batches:
        for quarantine in batch.quarantined:
            assert quarantine.line is not None and quarantine.sequence is not None
