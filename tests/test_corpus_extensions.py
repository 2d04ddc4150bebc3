"""Cline and Continue adapters over the real files in ``$TELLTALE_CORPUS`` (skipped without it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from telltale.model import Family, Stage
from telltale.sources.base import AcquireContext
from telltale.sources.cline import SPECS as CLINE_SPECS
from telltale.sources.cline import ClineTaskAdapter
from telltale.sources.continue_ import SPECS as CONTINUE_SPECS
from telltale.sources.continue_ import ContinueDevDataAdapter, ContinueSessionAdapter
from telltale.sources.spec import RootType, Source

CORPUS = os.environ.get("TELLTALE_CORPUS")
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPUS, reason="TELLTALE_CORPUS is not set"),
]


def _root(name: str) -> Path:
    return Path(CORPUS or "") / name


def _source(client: str, kind: str, path: Path) -> Source:
    return Source(client=client, kind=kind, path=str(path), root_type=RootType.HOME,
                  store_root=str(path.parent), found_by="explicit_root")


def test_corpus_cline_ui_messages_usage_matches_ended_requests() -> None:
    files = sorted(_root("cline").rglob("ui_messages.json"))
    assert len(files) == 2
    for path in files:
        assert CLINE_SPECS[0].matches(path.name)
        before = path.read_bytes()
        source = _source("cline", "cline.tasks", path)
        (batch,) = ClineTaskAdapter().acquire(source, None, AcquireContext())
        assert batch.quarantined == [] and batch.health == []
        # Independent count: api_req_started entries whose JSON text carries token counts
        # and has ended (a cost or a cancel reason), by plain json.
        messages = json.loads(before)
        expected = []
        for message in messages:
            if message.get("say") != "api_req_started" or message.get("partial"):
                continue
            request = json.loads(message["text"])
            if "cost" in request or "cancelReason" in request:
                expected.append((request.get("tokensIn"), request.get("tokensOut")))
        usage = [o for o in batch.observations if o.family is Family.USAGE]
        assert len(usage) == len(batch.observations) == len(expected) > 0
        got = []
        for o in usage:
            assert o.usage is not None
            cached = (o.usage.cache_read_input_tokens or 0) + (o.usage.cache_creation_input_tokens or 0)
            got.append(((o.usage.input_tokens or 0) - cached, o.usage.output_tokens))
        assert got == expected
        assert all(o.cwd for o in usage), "the workspace comes from the first request's environment details"
        (again,) = ClineTaskAdapter().acquire(source, batch.cursor, AcquireContext())
        assert again.observations == []
        assert path.read_bytes() == before


def test_corpus_continue_sessions_and_token_logs() -> None:
    root = _root("continue")
    sessions = sorted(p for p in root.rglob("sessions/*.json") if CONTINUE_SPECS[0].matches(p.name))
    assert len(sessions) == 4
    for path in sessions:
        doc = json.loads(path.read_bytes())
        (batch,) = ContinueSessionAdapter().acquire(_source("continue", "continue.sessions", path), None,
                                                     AcquireContext())
        assert batch.quarantined == []
        messages = [o for o in batch.observations if o.family is Family.MESSAGE]
        texts = [h for h in doc["history"]
                 if h["message"]["role"] in ("user", "assistant") and h["message"]["content"]]
        assert len(messages) == len(texts)
        assert not [o for o in batch.observations if o.family is Family.TOOL and o.stage is Stage.REQUESTED]
        assert {o.session_id for o in batch.observations} == {doc["sessionId"]}
        # The model is the last prompt log that names one (a 2024 file has a stray
        # ``{role, content}`` log after the real one).
        models = []
        for h in texts:
            if h["message"]["role"] == "assistant":
                named = [(log.get("completionOptions") or {}).get("model") for log in h["promptLogs"]]
                models.append([m for m in named if m][-1])
        assert [o.model for o in messages if o.role == "assistant"] == models
    logs = sorted(p for p in root.rglob("*.jsonl") if CONTINUE_SPECS[1].matches(p.name))
    assert len(logs) == 2
    for path in logs:
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        batches = list(ContinueDevDataAdapter().acquire(_source("continue", "continue.dev_data", path), None,
                                                        AcquireContext()))
        obs = [o for b in batches for o in b.observations]
        assert [q for b in batches for q in b.quarantined] == []
        assert [(o.usage.input_tokens, o.usage.output_tokens) for o in obs if o.usage] == [
            (line["promptTokens"], line["generatedTokens"]) for line in lines
        ]
