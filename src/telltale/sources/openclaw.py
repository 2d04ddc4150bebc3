"""OpenClaw: JSONL transcripts (with rotated copies) and the per-agent SQLite store."""

from __future__ import annotations

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
        adapter="telltale.sources.openclaw:OpenClawAdapter",
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
        adapter="telltale.sources.openclaw:OpenClawSqliteAdapter",
        description="OpenClaw per-agent SQLite transcript store (transcript_events)",
    ),
)
