"""Claude Code: ``~/.claude/projects/<slug>/<session>.jsonl`` and subagent transcripts.

One source is one transcript file: a main session (``<slug>/<session>.jsonl``) or a
subagent ("sidechain") transcript, in the old layout (``<slug>/agent-<id>.jsonl``) or the
new one (``<slug>/<session>/subagents/agent-<id>.jsonl``). Every vendor field name of
Claude Code lives in this package: the spec here, the adapter in :mod:`.adapter` (imported
when a transcript is read). The mapping and its choices are documented in
``docs/sources/claude.md``; the seed rules are CHECKLIST CLAUDE-1..13.
"""

from __future__ import annotations

from typing import Any

from telltale.sources.lazy import export
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
        env_paths=(("CLAUDE_CONFIG_DIR", "projects"),),  # CAND-7
        adapter="telltale.sources.claude.adapter:ClaudeAdapter",
        description="Claude Code project transcripts (CLI and desktop Code tab)",
    ),
)


def __getattr__(name: str) -> Any:
    """Everything else of the package is its adapter module's (imported on first use)."""
    return export(__name__, name, {}, ".adapter")
