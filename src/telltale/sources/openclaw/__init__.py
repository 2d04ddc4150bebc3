"""OpenClaw: JSONL transcripts (with rotated copies) and the per-agent SQLite store.

Both stores hold the same pi-coding-agent session entries (format ``version: 3``): a
``session`` header, then ``message`` entries (roles ``user``, ``assistant``,
``toolResult``) and bookkeeping entries (``model_change``, ``thinking_level_change``,
``custom``, ``compaction``, ...). One mapping (:class:`EntryMapper`) serves both readers:
the JSONL adapter feeds it lines, the SQLite adapter ``transcript_events.event_json``
rows. Coordinates come from the entries' own ids, so a transcript rotated to
``*.jsonl.reset.<ts>`` / ``*.jsonl.deleted.<ts>`` yields the same observation ids.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
from telltale.sources.spec import RootType, SourceSpec, StoreLayout

SPECS = (
    SourceSpec(
        client="openclaw",
        kind="openclaw.agents",
        root_type=RootType.HOME,
        relative_path=".openclaw/agents",
        # Rotated transcripts (reset/deleted) still hold evidence.
        file_patterns=("*.jsonl", "*.jsonl.reset.*", "*.jsonl.deleted.*", "*.jsonl.deleted"),
        exclude_patterns=("*.trajectory.jsonl", "*.trajectory.jsonl.*"),
        recursive=True,
        fixture_relative_path="openclaw/agents",
        adapter="telltale.sources.openclaw.adapter:OpenClawAdapter",
        description="OpenClaw session transcripts (JSONL, including rotated copies)",
    ),
    SourceSpec(
        client="openclaw",
        kind="openclaw.sqlite",
        root_type=RootType.HOME,
        relative_path=".openclaw/agents",
        file_patterns=("openclaw-agent.sqlite",),
        parent_dir="agent",
        recursive=True,
        layout=StoreLayout.SQLITE,
        fixture_relative_path="openclaw/agents",
        adapter="telltale.sources.openclaw.adapter:OpenClawSqliteAdapter",
        description="OpenClaw per-agent SQLite transcript store (transcript_events)",
    ),
)


def __getattr__(name: str) -> Any:
    """Everything else of the package is its adapter module's (imported on first use)."""
    return export(__name__, name, {}, ".adapter")
