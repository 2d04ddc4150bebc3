"""Claude Code: ``~/.claude/projects/<slug>/<session>.jsonl`` and subagent transcripts."""

from __future__ import annotations

from telltale.sources.spec import RootType, SourceSpec

SPECS = (
    SourceSpec(
        client="claude",
        kind="claude.projects",
        root_type=RootType.HOME,
        relative_path=".claude/projects",
        file_patterns=("*.jsonl",),
        recursive=True,
        fixture_relative_path="claude/projects",
        adapter="telltale.sources.claude:ClaudeAdapter",
        description="Claude Code project transcripts (CLI and desktop Code tab)",
    ),
)
