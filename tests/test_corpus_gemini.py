"""Gemini CLI adapters over the real files in ``$TELLTALE_CORPUS/gemini-cli`` (skipped
without it): each origin's ``tmp`` tree is placed under a home's ``.gemini`` and scanned
through discovery; counts are checked against plain-JSON counts of the same files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from telltale.discovery import DiscoveryOptions, discover
from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.registry import adapter_for

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [pytest.mark.corpus, pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set")]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for origin in sorted((Path(CORPUS or "") / "gemini-cli").iterdir()):
        shutil.copytree(origin / "tmp", home / ".gemini" / "tmp", dirs_exist_ok=True)
        if (origin / "projects.json").exists():
            shutil.copy(origin / "projects.json", home / ".gemini" / "projects.json")
    return home


def _independent(path: Path) -> dict[str, int]:
    """Final messages by plain JSON: last version per id, checkpoints and rewinds applied."""
    if path.name == "logs.json":
        entries = json.loads(path.read_text())
        return {"user": sum(e.get("type") == "user" and bool(e.get("message")) for e in entries)}
    messages: dict[str, dict] = {}
    headers = 0
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "$set" in record:
            for m in record["$set"].get("messages") or []:
                messages[m["id"]] = m
        elif "id" in record:
            messages[record["id"]] = record
        elif "sessionId" in record:
            headers += 1
    counts = {"session": headers, "user": 0, "assistant": 0, "usage": 0, "calls": 0}
    for m in messages.values():
        text = m.get("content")
        has_text = bool(text) if isinstance(text, str) else any(p.get("text") for p in text or [])
        if m["type"] == "user" and has_text:
            counts["user"] += 1
        if m["type"] == "gemini":
            counts["assistant"] += has_text
            counts["usage"] += m.get("tokens") is not None
            counts["calls"] += len(m.get("toolCalls") or [])
    return counts


def test_corpus_gemini_every_file_acquired_with_independent_counts(tmp_path: Path) -> None:
    home = _home(tmp_path)
    sources = discover(DiscoveryOptions(root=str(home), env={}, clients=("gemini",))).sources
    assert sorted(s.kind for s in sources) == ["gemini.chats", "gemini.chats", "gemini.chats", "gemini.logs"]
    for source in sources:
        batches = list(adapter_for(source.kind).acquire(source, None, AcquireContext()))
        assert [q.reason for b in batches for q in b.quarantined] == []
        obs = [o for b in batches for o in b.observations]
        expected = _independent(Path(source.path))
        got = {
            "session": sum(o.family is Family.SESSION for o in obs),
            "user": sum(o.family is Family.MESSAGE and o.role == "user" for o in obs),
            "assistant": sum(o.family is Family.MESSAGE and o.role == "assistant" for o in obs),
            "usage": sum(o.family is Family.USAGE for o in obs),
            "calls": sum(o.family is Family.TOOL and o.stage is Stage.REQUESTED for o in obs),
        }
        assert {k: got[k] for k in expected} == expected, source.path
        assert all(o.session_id for o in obs)
        if "a2a-serv" in source.path:
            assert all(o.session_id.startswith("a2a-server:session-") for o in obs)
            assert all(o.cwd == "/home/psv2482109" for o in obs)  # from projects.json
        # A second acquisition from the cursor reads nothing new.
        cursor = next((b.cursor for b in reversed(batches) if b.cursor is not None), None)
        again = list(adapter_for(source.kind).acquire(source, cursor, AcquireContext()))
        assert sum(len(b.observations) for b in again) == 0


def test_corpus_gemini_injected_context_and_usage(tmp_path: Path) -> None:
    home = _home(tmp_path)
    sources = discover(DiscoveryOptions(root=str(home), env={}, clients=("gemini.chats",))).sources
    obs = [o for s in sources for b in adapter_for(s.kind).acquire(s, None, AcquireContext()) for o in b.observations]
    injected = [o for o in obs if o.injected]
    assert len(injected) == 1 and (injected[0].text or "").startswith("<session_context>")
    (usage,) = [o.usage for o in obs if o.family is Family.USAGE]
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_output_tokens, usage.total_tokens) == (
        5428, 52, 40, 5480)
