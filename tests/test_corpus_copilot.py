"""Copilot adapters over the real files in ``$TELLTALE_CORPUS/copilot-cli`` (skipped without it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.copilot import SPECS, CopilotProcessLogAdapter, CopilotSessionStateAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]
PROCESS, STATE = SPECS


def _root() -> Path:
    return Path(CORPUS or "") / "copilot-cli"


def _source(kind: str, path: Path) -> Source:
    return Source(
        client="copilot", kind=kind, path=str(path), root_type=RootType.HOME,
        store_root=str(path.parent), found_by="explicit_root",
    )


def _event_counts(path: Path) -> tuple[int, int]:
    """Tool calls (distinct call ids requested or started) and their results, by plain json.

    A result is an execution_complete, or a call still open when an abort arrives.
    """
    requested: set[str] = set()
    open_calls: set[str] = set()
    results = 0
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            event = json.loads(line)
            data = event.get("data") or {}
            kind = event.get("type")
            if kind == "assistant.message":
                for request in data.get("toolRequests") or []:
                    requested.add(request["toolCallId"])
                    open_calls.add(request["toolCallId"])
            elif kind == "tool.execution_start":
                if data["toolCallId"] not in requested:
                    requested.add(data["toolCallId"])
                    open_calls.add(data["toolCallId"])
            elif kind == "tool.execution_complete":
                results += 1
                open_calls.discard(data["toolCallId"])
            elif kind == "abort":
                results += len(open_calls)
                open_calls.clear()
    return len(requested), results


def test_corpus_copilot_session_state_acquired_and_tool_counts_match() -> None:
    files = sorted(p for p in _root().rglob("*") if p.is_file() and "session-state" in p.parts)
    logs = [p for p in files if STATE.matches(p.name, p.parent.name)]
    assert logs
    # session.db and the global session-store.db are never sources (COP-6).
    assert not [p for p in _root().rglob("*.db") if STATE.matches(p.name, p.parent.name)]
    for path in logs:
        batches = list(CopilotSessionStateAdapter().acquire(_source(STATE.kind, path), None, AcquireContext()))
        obs = [o for b in batches for o in b.observations]
        assert [q.reason for b in batches for q in b.quarantined] == []
        requested, results = _event_counts(path)
        assert sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs) == requested
        assert sum(o.family is Family.TOOL and o.stage is Stage.RESULT for o in obs) == results
        assert {o.session_id for o in obs} == {path.parent.name}


def test_corpus_copilot_process_logs_acquired_and_item_counts_match() -> None:
    logs = sorted(p for p in _root().rglob("*.log") if PROCESS.matches(p.name))
    assert logs
    for path in logs:
        batches = list(CopilotProcessLogAdapter().acquire(_source(PROCESS.kind, path), None, AcquireContext()))
        obs = [o for b in batches for o in b.observations]
        calls = 0
        for line in path.read_text(encoding="utf-8").splitlines():
            marker = line.find("Accumulated output items")
            if marker >= 0:
                items = json.loads(line[line.index("[", marker):])
                calls += sum(item.get("type") == "function_call" for item in items)
        assert sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs) == calls
        assert sum(b.records_read for b in batches) > 0
